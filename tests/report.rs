//! Reports on a crawl of the generated site, checked against the generator's own oracle
//! ([`support::Expected`]) and against what the file holds ([`support::db::read`]).

use crate::support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::backend::{both_stores, Backend};
use support::check::assert_matches;
use support::{Expected, SiteServer, SiteSpec};
use trawl::report::{Kind, OutputFormat};
use trawl::store::{OpenMode, SqliteStore};

struct Crawled {
    /// Where the test may write files of its own.
    dir: PathBuf,
    /// The crawl as a SQLite file (a Redis crawl's copy).
    db: PathBuf,
    base: String,
    expected: Expected,
    _server: SiteServer,
}

/// The small generated site crawled with four workers; the edge set is checked against the
/// generator's before it is returned.
async fn crawl(store: &Backend) -> Crawled {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    store
        .crawl(
            store
                .builder("site")
                .seed(format!("{}/", server.base()))
                .concurrency(4),
        )
        .await;
    let expected = server.expected();
    let db = store.db("site").await;
    assert_matches(&expected, &support::db::read(&db), false);
    Crawled {
        dir: store.dir().to_owned(),
        db,
        base: server.base(),
        expected,
        _server: server,
    }
}

/// Report `kind` as JSON: one object per row.
fn report(db: &Path, kind: Kind, limit: Option<u64>) -> Vec<serde_json::Map<String, Value>> {
    let store = SqliteStore::open(db, OpenMode::Read).unwrap();
    let mut out = Vec::new();
    let options = trawl::report::Options {
        limit,
        ..trawl::report::Options::new(OutputFormat::Json)
    };
    let n = trawl::report::run(&store, kind, &options, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).expect("one JSON array");
    let rows: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .collect();
    assert_eq!(rows.len() as u64, n);
    rows
}

/// URL as shown (`coalesce(url, key)`) to canonical key.
fn keys(db: &Path) -> HashMap<String, String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT coalesce(url, key), key FROM urls")
        .unwrap();
    let map = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    map
}

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not text: {v}"))
        .to_owned()
}

async fn broken_lists_each_linking_page(store: Backend) {
    let c = crawl(&store).await;
    let k = keys(&c.db);
    let rows = report(&c.db, Kind::Broken, None);
    for (path, status) in [("/missing", 404), ("/gone", 410)] {
        let target = format!("{}{path}", c.base);
        let got: BTreeSet<(String, String)> = rows
            .iter()
            .filter(|r| k[&text(&r["target"])] == target)
            .map(|r| {
                assert_eq!(r["status"], status);
                assert_eq!(r["class"], "broken");
                (k[&text(&r["source"])].clone(), text(&r["kind"]))
            })
            .collect();
        let want: BTreeSet<(String, String)> = c
            .expected
            .edges
            .keys()
            .filter(|(_, to, _)| *to == target)
            .map(|(from, _, kind)| (from.clone(), kind.clone()))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(got, want, "{path}");
    }
    // Ordered by target; nothing healthy listed.
    let targets: Vec<String> = rows
        .iter()
        .map(|r| k[&text(&r["target"])].clone())
        .collect();
    let mut sorted = targets.clone();
    sorted.sort();
    assert_eq!(targets, sorted);
    for r in &rows {
        let broken = r["status"].as_i64().is_some_and(|s| s >= 400) || !r["error"].is_null();
        assert!(broken, "{r:?}");
        assert_ne!(r["class"], "redirected", "listed only when asked: {r:?}");
        let columns: BTreeSet<&str> = r.keys().map(String::as_str).collect();
        let want = [
            "target", "class", "status", "error", "redirect", "source", "line", "column", "kind",
            "anchor",
        ];
        assert_eq!(columns, want.into_iter().collect());
    }

    // Permanent redirects when asked: links to them (not hops of a chain), with the status.
    let store = SqliteStore::open(&c.db, OpenMode::Read).unwrap();
    let mut out = Vec::new();
    let options = trawl::report::Options {
        classes: Some("redirected".parse().unwrap()),
        ..trawl::report::Options::new(OutputFormat::Json)
    };
    trawl::report::run(&store, Kind::Broken, &options, &mut out).unwrap();
    let redirected: Vec<Value> = serde_json::from_slice(&out).unwrap();
    let chain_start = format!("{}/r/3", c.base);
    assert!(
        redirected
            .iter()
            .any(|r| k[&text(&r["target"])] == chain_start),
        "{redirected:?}"
    );
    for r in &redirected {
        assert_eq!(r["class"], "redirected");
        assert!(r["status"] == 301 || r["status"] == 308, "{r:?}");
        assert_ne!(r["kind"], "redirect", "{r:?}");
    }
}

async fn redirects_show_chains_and_loops(store: Backend) {
    let c = crawl(&store).await;
    let rows = report(&c.db, Kind::Redirects, None);
    let b = &c.base;
    let chain = rows
        .iter()
        .find(|r| r["start"] == format!("{b}/r/3"))
        .expect("the chain from /r/3");
    assert_eq!(chain["length"], 3);
    assert_eq!(chain["final_status"], 200);
    assert!(chain["error"].is_null());
    let hops: Vec<String> = ["/r/3", "/r/2", "/r/1", "/p/7"]
        .iter()
        .map(|p| format!("{b}{p}"))
        .collect();
    assert_eq!(chain["chain"], serde_json::json!(hops));

    let loops: Vec<_> = rows.iter().filter(|r| r["error"] == "loop").collect();
    assert_eq!(loops.len(), 1, "{rows:?}");
    let l = loops[0];
    assert_eq!(l["length"], 2);
    let hops: Vec<String> = ["/loop/a", "/loop/b", "/loop/a"]
        .iter()
        .map(|p| format!("{b}{p}"))
        .collect();
    assert_eq!(l["chain"], serde_json::json!(hops));

    // Every hop is reported in exactly one chain: no chain starts mid-way.
    assert_eq!(rows.len(), 2, "{rows:?}");
}

async fn depth_matches_the_generator(store: Backend) {
    let c = crawl(&store).await;
    let rows = report(&c.db, Kind::Depth, None);
    let mut want: BTreeMap<i64, i64> = BTreeMap::new();
    for page in c.expected.fetched.values() {
        *want.entry(i64::from(page.depth)).or_default() += 1;
    }
    let shortest: BTreeMap<i64, i64> = rows
        .iter()
        .map(|r| {
            (
                r["depth"].as_i64().expect("every page reached"),
                r["shortest"].as_i64().unwrap(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let recorded: BTreeMap<i64, i64> = rows
        .iter()
        .map(|r| {
            (
                r["depth"].as_i64().unwrap(),
                r["recorded"].as_i64().unwrap(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(shortest, want);
    // With several workers the depth recorded at discovery can exceed the shortest, never
    // undercut it: as many pages in all, and never more of them at or above any depth.
    assert_eq!(recorded.values().sum::<i64>(), want.values().sum::<i64>());
    let upto = |m: &BTreeMap<i64, i64>, d: i64| m.range(..=d).map(|(_, n)| n).sum::<i64>();
    for d in 0..=*want.keys().max().unwrap() + 2 {
        assert!(
            upto(&recorded, d) <= upto(&want, d),
            "depth {d}: {recorded:?} vs {want:?}"
        );
    }
}

async fn top_ranks_by_distinct_linking_pages(store: Backend) {
    let c = crawl(&store).await;
    let k = keys(&c.db);
    let mut sources: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to, kind) in c.expected.edges.keys() {
        if from != to && kind != "redirect" {
            sources.entry(to).or_default().insert(from);
        }
    }
    let max = sources.values().map(BTreeSet::len).max().unwrap();
    let rows = report(&c.db, Kind::Top, Some(10));
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[0]["in_degree"], max);
    let mut last = usize::MAX;
    for r in &rows {
        let key = &k[&text(&r["url"])];
        let n = r["in_degree"].as_u64().unwrap() as usize;
        assert_eq!(n, sources[key.as_str()].len(), "{key}");
        assert!(n <= last, "ordered by in-degree");
        last = n;
    }
    // The most-linked page is an HTML page of the site: it has a PageRank, above average.
    let pages = c
        .expected
        .fetched
        .values()
        .filter(|p| p.status == 200 && p.content_type.starts_with("text/html"))
        .count();
    let pr = rows[0]["pagerank"].as_f64().expect("a pagerank");
    assert!(pr > 1.0 / pages as f64, "{pr}");
}

async fn orphans_are_urls_only_a_sitemap_links_to(store: Backend) {
    let c = crawl(&store).await;
    assert!(report(&c.db, Kind::Orphans, None).is_empty());

    // A copy with a URL only a sitemap lists, and one a page links to as well.
    let copy = c.dir.join("copy.db");
    {
        let conn = rusqlite::Connection::open(&c.db).unwrap();
        conn.execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
            .unwrap();
    }
    let orphan = format!("{}/orphan", c.base);
    {
        // The linking page must be a fetched one: which id that is depends on the store
        // (a Redis crawl numbers URLs in the order its results were exported).
        let conn = rusqlite::Connection::open(&copy).unwrap();
        let src: i64 = conn
            .query_row("SELECT min(id) FROM urls WHERE state = 1", [], |r| r.get(0))
            .unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO urls (id, key, host_id, depth, state, status)
               SELECT max(id) + 1, '{orphan}', 1, 1, 1, 200 FROM urls;
             INSERT INTO urls (id, key, host_id, depth, state, status)
               SELECT max(id) + 1, '{orphan}-linked', 1, 1, 1, 200 FROM urls;
             INSERT INTO edges (src, dst, kind) SELECT {src}, max(id) - 1, 7 FROM urls;
             INSERT INTO edges (src, dst, kind) SELECT {src}, max(id), 7 FROM urls;
             INSERT INTO edges (src, dst, kind) SELECT {src}, max(id), 0 FROM urls;"
        ))
        .unwrap();
    }
    let rows = report(&copy, Kind::Orphans, None);
    let urls: Vec<String> = rows.iter().map(|r| text(&r["url"])).collect();
    assert_eq!(urls, [orphan]);
}

async fn summary_counts_match_the_file(store: Backend) {
    let c = crawl(&store).await;
    let got = support::db::read(&c.db);
    let rows = report(&c.db, Kind::Summary, None);
    let section = |name: &str| -> BTreeMap<String, Value> {
        rows.iter()
            .filter(|r| r["section"] == name)
            .map(|r| (text(&r["name"]), r["value"].clone()))
            .collect()
    };
    let count = |n: usize| Value::from(n as u64);

    let mut states = BTreeMap::new();
    let done = got.fetched.values().filter(|f| f.2 == 1).count();
    let failed = got.fetched.len() - done;
    for (name, n) in [
        ("done", done),
        ("failed", failed),
        ("skipped", got.skipped.len()),
        ("queued", got.queued.len()),
    ] {
        if n > 0 {
            states.insert(name.to_owned(), count(n));
        }
    }
    assert_eq!(section("state"), states);

    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for (status, _, _, error) in got.fetched.values() {
        if let Some(s) = status {
            *classes.entry(format!("{}xx", s / 100)).or_default() += 1;
        }
        if let Some(e) = error {
            *errors.entry(e.clone()).or_default() += 1;
        }
    }
    let as_values =
        |m: BTreeMap<String, usize>| m.into_iter().map(|(k, v)| (k, count(v))).collect();
    assert_eq!(section("status"), as_values(classes));
    assert_eq!(section("error"), as_values(errors));
    let crawl = section("crawl");
    assert_eq!(crawl["fetched"], count(got.fetched.len()));
    assert!(crawl["started_at"].is_string() && crawl["finished_at"].is_string());
    let html = section("content_type")["text/html"].as_u64().unwrap() as usize;
    let want_html = c
        .expected
        .fetched
        .values()
        .filter(|p| p.content_type.starts_with("text/html"))
        .count();
    assert_eq!(html, want_html);
}

async fn cli_prints_tables_csv_and_json(store: Backend) {
    let c = crawl(&store).await;
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
            .current_dir(&c.dir)
            .arg("report")
            .args(store.read_args("site"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stderr.is_empty());
        String::from_utf8(out.stdout).unwrap()
    };
    for kind in ["broken", "redirects", "depth", "top", "orphans", "summary"] {
        let table = run(&[kind]);
        assert!(!table.is_empty(), "{kind}");
        let csv = run(&[kind, "--format", "csv"]);
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        if kind == "broken" {
            let header: Vec<&str> = reader.headers().unwrap().iter().collect();
            let want = [
                "target", "class", "status", "error", "redirect", "source", "line", "column",
                "kind", "anchor",
            ];
            assert_eq!(header, want);
        }
        let width = reader.headers().unwrap().len();
        for rec in reader.records() {
            assert_eq!(rec.unwrap().len(), width, "{kind}");
        }
        let json: Value = serde_json::from_str(&run(&[kind, "--format", "json"])).unwrap();
        assert!(json.is_array(), "{kind}");
    }
    let table = run(&["top", "--limit", "3"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "a header and 3 rows:\n{table}");
    assert!(lines[0].starts_with("url ") && lines[0].contains("in_degree"));
    // Aligned: every line has its pagerank column ending at the same place.
    let width = lines[0].len();
    assert!(lines[1..].iter().all(|l| l.len() == width), "{table}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .current_dir(&c.dir)
        .args(["report", "--db", "missing.db", "summary"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

both_stores!(
    broken_lists_each_linking_page,
    redirects_show_chains_and_loops,
    depth_matches_the_generator,
    top_ranks_by_distinct_linking_pages,
    orphans_are_urls_only_a_sitemap_links_to,
    summary_counts_match_the_file,
    cli_prints_tables_csv_and_json
);
