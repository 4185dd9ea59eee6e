//! `trawl crawl --refresh`: a finished crawl's next generation, asked with the previous
//! one's validators. A test site whose pages send an `ETag` and `Last-Modified` (one sends
//! neither) answers 304 when nothing changed; the site is then edited, and the new
//! generation must be what a fresh crawl of the edited site finds, with the unchanged
//! pages carried over unread and the previous generation kept in the file.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use support::backend::{both_stores, Backend};
use support::editable::{page, start, Pages};
use support::run::{crawl, trawl_child_with};
use trawl::Outcome;

fn first_version() -> BTreeMap<String, String> {
    [
        ("/", page("Home", &["/a", "/b", "/c", "/plain"])),
        ("/a", page("A", &["/d", "/b"])),
        ("/b", page("B", &["/"])),
        ("/c", page("C", &[])),
        ("/d", page("D", &["/a"])),
        ("/plain", page("Plain", &["/d"])),
    ]
    .into_iter()
    .map(|(p, b)| (p.to_string(), b))
    .collect()
}

/// The edit: /b changes and links to a new /e, /c is deleted.
fn edit(pages: &Pages) {
    let mut p = pages.lock().unwrap();
    p.insert("/b".into(), page("B, again", &["/", "/e"]));
    p.insert("/e".into(), page("E", &["/b"]));
    p.remove("/c");
}

fn builder(db: &Path, base: &str) -> trawl::CrawlerBuilder {
    trawl::Crawler::builder()
        .db(db)
        .seed(format!("{base}/"))
        .concurrency(4)
}

/// The first crawl `name` of `base` in `store`.
fn first(store: &Backend, name: &str, base: &str) -> trawl::CrawlerBuilder {
    store.builder(name).seed(format!("{base}/")).concurrency(4)
}

fn rows<T: rusqlite::types::FromSql>(db: &Path, sql: &str) -> Vec<(String, T)> {
    support::db::pairs(db, sql)
}

/// Every edge as (source path, target path, kind), with its multiplicity; `base` cut.
fn edges(db: &Path, base: &str, table: &str, generation: &str) -> BTreeMap<String, i64> {
    let sql = format!(
        "SELECT substr(s.key, {n}) || ' ' || substr(d.key, {n}) || ' ' || e.kind, count(*)
         FROM {table}edges e JOIN {table}urls s ON s.id = e.src {generation}
         JOIN {table}urls d ON d.id = e.dst {generation2} {where_}
         GROUP BY 1",
        n = base.len() + 1,
        generation = if generation.is_empty() {
            String::new()
        } else {
            format!("AND s.generation = {generation}")
        },
        generation2 = if generation.is_empty() {
            String::new()
        } else {
            format!("AND d.generation = {generation}")
        },
        where_ = if generation.is_empty() {
            String::new()
        } else {
            format!("WHERE e.generation = {generation}")
        },
    );
    rows(db, &sql).into_iter().collect()
}

/// The new generation's links in `db` are a fresh crawl's of the edited site at `base`,
/// and the previous generation's are `first_edges`, kept as they were.
async fn links_are_a_fresh_crawls(
    db: &Path,
    dir: &Path,
    base: &str,
    first_edges: &BTreeMap<String, i64>,
) {
    let fresh = dir.join("fresh.db");
    crawl(builder(&fresh, base)).await;
    assert_eq!(edges(db, base, "", ""), edges(&fresh, base, "", ""));
    assert_eq!(&edges(db, base, "gen_", "1"), first_edges);
}

async fn refresh_asks_conditionally_and_keeps_the_previous_generation(store: Backend) {
    let (server, site) = start(first_version()).await;
    let dir = tempfile::tempdir().unwrap();
    store.crawl(first(&store, "s", &server.base)).await;
    let db = store.results_file("s");
    let first_edges = edges(&db, &server.base, "", "");
    let first_hits = server.all().len();

    edit(&site.pages);
    // No seed given: the file's are the crawl's.
    let summary = store.crawl(store.again("s", 2).refresh(true)).await;
    assert_eq!(summary.outcome, Outcome::Finished);
    let counted = (summary.run.not_modified, summary.run.same_content);
    assert_eq!(counted, (3, 1), "304s, and /plain by its hash");

    // Every page asked once again; the unchanged ones with validators answered 304.
    let pages = |from: usize| -> Vec<String> {
        server.all()[from..]
            .iter()
            .map(|h| h.path.clone())
            .filter(|p| p != "/robots.txt" && p != "/sitemap.xml")
            .collect()
    };
    let asked: BTreeSet<String> = pages(first_hits).into_iter().collect();
    let expect: BTreeSet<String> = ["/", "/a", "/b", "/c", "/d", "/e", "/plain"]
        .map(String::from)
        .into();
    assert_eq!(asked, expect);
    assert_eq!(pages(first_hits).len(), 7, "each page once");
    assert_eq!(site.not_modified.load(Ordering::Relaxed), 3, "/, /a and /d");

    let n = server.base.len() + 1;
    let got: Vec<(String, String)> = rows(
        &db,
        &format!(
            "SELECT substr(key, {n}), coalesce(status, '-') || ' ' || coalesce(unchanged, '-')
                 || ' ' || coalesce(title, '-') FROM urls ORDER BY key"
        ),
    );
    let expect = [
        ("/", "200 1 Home"),
        ("/a", "200 1 A"),
        ("/b", "200 - B, again"),
        ("/c", "404 - -"),
        ("/d", "200 1 D"),
        ("/e", "200 - E"),
        ("/plain", "200 2 Plain"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    assert_eq!(got, expect, "status, how unchanged, title");

    links_are_a_fresh_crawls(&db, dir.path(), &server.base, &first_edges).await;
    let generations: Vec<(String, i64)> = rows(
        &db,
        "SELECT 'now', generation FROM crawl
         UNION ALL SELECT 'kept', count(*) FROM generations
         UNION ALL SELECT 'kept urls', count(*) FROM gen_urls WHERE generation = 1",
    );
    assert_eq!(
        generations,
        [
            ("now".to_string(), 2),
            ("kept".into(), 1),
            ("kept urls".into(), 6)
        ]
    );
}

async fn an_interrupted_refresh_resumes_to_the_same_generation(store: Backend) {
    let (server, site) = start(first_version()).await;
    store.crawl(first(&store, "s", &server.base)).await;
    edit(&site.pages);
    // Stopped after its first pages (one at a time, spaced), then resumed without --refresh.
    let slow = store
        .again("s", 2)
        .refresh(true)
        .concurrency(1)
        .delay(Duration::from_millis(150));
    let crawler = store.build(slow).await.unwrap();
    let stopped = crawler
        .run(tokio::time::sleep(Duration::from_millis(400)))
        .await
        .unwrap();
    assert_eq!(stopped.outcome, Outcome::Interrupted, "stopped mid-refresh");
    store.crawl(store.again("s", 2)).await;
    // The same refresh uninterrupted.
    let (server2, site2) = start(first_version()).await;
    store.crawl(first(&store, "t", &server2.base)).await;
    edit(&site2.pages);
    store.crawl(store.again("t", 2).refresh(true)).await;
    let (db, db2) = (store.results_file("s"), store.results_file("t"));
    assert_eq!(
        last_generation(&db, &server.base),
        last_generation(&db2, &server2.base)
    );
    let generation: Vec<(String, i64)> = rows(&db, "SELECT 'g', generation FROM crawl");
    assert_eq!(
        generation,
        [("g".to_string(), 2)],
        "resumed, not refreshed twice"
    );
}

/// A site of `n` pages in a chain, each also linked from the home page.
fn chain(n: usize) -> BTreeMap<String, String> {
    let paths: Vec<String> = (0..n).map(|i| format!("/p{i}")).collect();
    let home: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut pages = BTreeMap::from([("/".to_string(), page("Home", &home))]);
    for (i, path) in paths.iter().enumerate() {
        let next = format!("/p{}", (i + 1) % n);
        pages.insert(path.clone(), page(&format!("P{i}"), &[&next, "/"]));
    }
    pages
}

/// The chain edited: every seventh page changes, two go, one new page is linked.
fn edit_chain(pages: &Pages) {
    let mut p = pages.lock().unwrap();
    for i in (0..60).step_by(7) {
        p.insert(
            format!("/p{i}"),
            page(&format!("P{i}, again"), &["/", "/new"]),
        );
    }
    p.insert("/new".into(), page("New", &["/p1"]));
    p.remove("/p30");
    p.remove("/p31");
}

/// What a crawl file holds of its last generation, `base` cut: each URL's state, status,
/// title and unchanged mark, and its edges.
fn last_generation(db: &Path, base: &str) -> (Vec<(String, String)>, BTreeMap<String, i64>) {
    let states = rows(
        db,
        &format!(
            "SELECT substr(key, {}), state || ' ' || coalesce(status, '-') || ' '
                 || coalesce(title, '-') || ' ' || coalesce(unchanged, '-')
             FROM urls ORDER BY key",
            base.len() + 1
        ),
    );
    (states, edges(db, base, "", ""))
}

/// The real binary killed with SIGKILL three times during a refresh, then resumed with a
/// plain `trawl crawl`: the generation it ends with is an uninterrupted refresh's.
async fn a_refresh_killed_mid_way_resumes_to_the_same_generation(store: Backend) {
    let (server, site) = start(chain(60)).await;
    store.crawl(first(&store, "s", &server.base)).await;
    edit_chain(&site.pages);
    // One page at a time, 15 ms apart: about a second for the whole refresh.
    let refresh = |extra: &[&str]| {
        let mut args = store.again_args("s", 2);
        args.extend(
            ["--delay", "15ms"]
                .iter()
                .chain(extra)
                .map(|a| a.to_string()),
        );
        trawl_child_with(&server.base, &args, 1)
    };
    let mut child = refresh(&["--refresh"]);
    // Each run is killed once it has been answered 8 more 304s: mid-way, whatever the
    // machine's speed.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    for kill in 1..=3 {
        while site.not_modified.load(Ordering::Relaxed) < kill * 8 {
            assert!(std::time::Instant::now() < deadline, "no progress");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(child.try_wait().unwrap().is_none(), "killed before its end");
        child.start_kill().unwrap();
        assert!(!child.wait().await.unwrap().success());
        // Resumed without --refresh: the unfinished refresh goes on.
        child = refresh(&[]);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the resumed refresh ends")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (server2, site2) = start(chain(60)).await;
    store.crawl(first(&store, "t", &server2.base)).await;
    edit_chain(&site2.pages);
    store.crawl(store.again("t", 2).refresh(true)).await;
    let (db, db2) = (store.results_file("s"), store.results_file("t"));
    let killed = last_generation(&db, &server.base);
    assert_eq!(killed, last_generation(&db2, &server2.base));
    let states = killed.0;
    assert!(
        states.iter().any(|(k, v)| k == "/p30" && v.contains("404")),
        "a deleted page is recorded gone: {states:?}"
    );
    let generations: Vec<(String, i64)> = rows(&db, "SELECT 'g', generation FROM crawl");
    assert_eq!(generations, [("g".to_string(), 2)], "one refresh, resumed");
    let kept: Vec<(String, i64)> = rows(
        &db,
        "SELECT 'kept', count(*) FROM gen_urls WHERE generation = 1",
    );
    assert_eq!(kept, [("kept".to_string(), 61)], "generation 1 kept whole");
}

/// Each record of a WARC file as warcio reads it (digests checked): type, target path,
/// profile, refers-to date.
const READ_WARC: &str = r#"
import json, sys
from urllib.parse import urlsplit
from warcio.archiveiterator import ArchiveIterator
out = []
with open(sys.argv[1], "rb") as f:
    for rec in ArchiveIterator(f, check_digests="raise"):
        if rec.rec_type not in ("response", "revisit"):
            continue
        h = rec.rec_headers
        rec.content_stream().read()
        out.append([rec.rec_type, urlsplit(h.get_header("WARC-Target-URI")).path,
                    (h.get_header("WARC-Profile") or "").rsplit("/", 1)[-1],
                    h.get_header("WARC-Refers-To-Date") is not None])
print(json.dumps(sorted(out)))
"#;

async fn refresh_writes_revisits_for_what_did_not_change(store: Backend) {
    let (server, site) = start(first_version()).await;
    let warc = |n| store.dir().join(format!("run{n}.warc.gz"));
    store
        .crawl(first(&store, "s", &server.base).warc(warc(1)))
        .await;
    edit(&site.pages);
    store
        .crawl(store.again("s", 2).refresh(true).warc(warc(2)))
        .await;
    let out = std::process::Command::new("python3")
        .args(["-c", READ_WARC])
        .arg(warc(2))
        .output()
        .expect("python3 (run scripts/test, which installs warcio)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<(String, String, String, bool)> = serde_json::from_slice(&out.stdout).unwrap();
    let pages: Vec<(String, String, String, bool)> = got
        .into_iter()
        .filter(|(_, p, _, _)| p != "/robots.txt" && p != "/sitemap.xml")
        .collect();
    let r = |kind: &str, path: &str, profile: &str, refers: bool| {
        (
            kind.to_string(),
            path.to_string(),
            profile.to_string(),
            refers,
        )
    };
    assert_eq!(
        pages,
        [
            r("response", "/b", "", false),
            r("response", "/c", "", false),
            r("response", "/e", "", false),
            r("revisit", "/", "server-not-modified", true),
            r("revisit", "/a", "server-not-modified", true),
            r("revisit", "/d", "server-not-modified", true),
            r("revisit", "/plain", "identical-payload-digest", true),
        ]
    );
}

/// A file whose pages were written before their rows recorded where their edges are
/// (schema 7: `outlinks` NULL) still carries a 304's links over, found by `src`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_written_before_edge_ranges_carry_their_links_too() {
    let (server, site) = start(first_version()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("site.db");
    crawl(builder(&db, &server.base)).await;
    let first_edges = edges(&db, &server.base, "", "");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE urls SET edges_from = NULL, outlinks = NULL", [])
        .unwrap();
    drop(conn);
    edit(&site.pages);
    let summary = crawl(builder(&db, &server.base).refresh(true)).await;
    assert_eq!(summary.run.not_modified, 3);
    links_are_a_fresh_crawls(&db, dir.path(), &server.base, &first_edges).await;
    let indexed: Vec<(String, i64)> = rows(
        &db,
        "SELECT 'by src', count(*) FROM sqlite_master WHERE name = 'gen_edges_1_by_src'",
    );
    assert_eq!(indexed, [("by src".to_string(), 1)], "indexed for them");
}

both_stores!(
    refresh_asks_conditionally_and_keeps_the_previous_generation,
    an_interrupted_refresh_resumes_to_the_same_generation,
    a_refresh_killed_mid_way_resumes_to_the_same_generation,
    refresh_writes_revisits_for_what_did_not_change
);
