//! The generations a file keeps (`trawl crawl --refresh` makes them), read through the
//! command line: `trawl diff` names exactly what an edit of the site changed, `--generation`
//! reads an earlier generation with every reading command, and `trawl prune` drops old ones
//! and refuses to drop what an unfinished refresh needs.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use support::editable::{page, start, Pages};
use support::run::{crawl, trawl_output};
use trawl::Outcome;

fn first_version() -> BTreeMap<String, String> {
    [
        (
            "/",
            page(
                "Home",
                &["/a", "/b", "/c", "/d", "/e", "/later", "/missing"],
            ),
        ),
        ("/a", page("A", &["/"])),
        ("/b", page("B", &["/"])),
        ("/c", page("C", &[])),
        ("/d", page("D", &[])),
        ("/e", page("E", &[])),
    ]
    .into_iter()
    .map(|(p, b)| (p.to_string(), b))
    .collect()
}

/// Three pages edited (/b's title too), two deleted, one new page linked from /a, and
/// /later, a broken link before, now there.
fn edit(pages: &Pages) {
    let mut p = pages.lock().unwrap();
    p.insert("/a".into(), page("A", &["/", "/f"]));
    p.insert("/b".into(), page("B, again", &["/"]));
    p.insert("/c".into(), page("C", &[]).replace("<body>", "<body>more"));
    p.remove("/d");
    p.remove("/e");
    p.insert("/f".into(), page("F", &[]));
    p.insert("/later".into(), page("Later", &[]));
}

fn builder(db: &Path, base: &str) -> trawl::CrawlerBuilder {
    trawl::Crawler::builder()
        .db(db)
        .seed(format!("{base}/"))
        .concurrency(4)
}

/// `trawl ARGS`: its exit code and standard output, with `base` cut from URLs; panics
/// with its stderr if it wrote nothing to stdout and succeeded.
fn run(dir: &Path, base: &str, args: &[&str]) -> (i32, String, String) {
    let out = trawl_output(dir, args);
    let stdout = String::from_utf8(out.stdout).unwrap().replace(base, "");
    let stderr = String::from_utf8(out.stderr).unwrap();
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// The CSV rows of a `trawl diff`, header first.
fn diff(dir: &Path, base: &str, args: &[&str]) -> Vec<String> {
    let all: Vec<&str> = ["diff", "--db", "site.db", "--format", "csv"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let (code, out, err) = run(dir, base, &all);
    assert_eq!(code, 0, "{err}");
    out.lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_names_what_the_edit_changed() {
    let (server, site) = start(first_version()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("site.db");
    crawl(builder(&db, &server.base)).await;
    edit(&site.pages);
    let summary = crawl(builder(&db, &server.base).refresh(true)).await;
    assert_eq!(summary.outcome, Outcome::Finished);
    let base = server.base.clone();
    let d = dir.path();

    let rows = diff(d, &base, &[]);
    let hash = |r: &str| r.starts_with("changed,");
    let (changed, rest): (Vec<String>, Vec<String>) = rows.into_iter().partition(|r| hash(r));
    assert_eq!(
        rest,
        [
            "change,url,from,to,page,kind",
            "title,/b,B,\"B, again\",,",
            "removed,/d,200,404,,",
            "removed,/e,200,404,,",
            "status,/later,404,200,,",
            "added,/f,,200,,",
            "link-added,/f,0,1,/a,a",
            "broken-new,/d,,broken,/,a",
            "broken-new,/e,,broken,/,a",
            "broken-fixed,/later,broken,,/,a",
        ]
        .map(String::from),
        "rows in part order: pages by id (discovery order), broken links by target"
    );
    let changed: Vec<&str> = changed
        .iter()
        .map(|r| r.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(changed, ["/a", "/b", "/c"], "the three edited pages");

    // --change keeps those kinds only; --from/--to the other way round turns it over.
    let only = diff(d, &base, &["--change", "added,removed"]);
    assert_eq!(
        only[1..],
        [
            "removed,/d,200,404,,",
            "removed,/e,200,404,,",
            "added,/f,,200,,"
        ]
    );
    let back = diff(
        d,
        &base,
        &["--from", "2", "--to", "1", "--change", "added,link-removed"],
    );
    assert_eq!(
        back[1..],
        ["link-removed,/f,1,0,/a,a"],
        "/f was never fetched in 1"
    );
    let limited = diff(d, &base, &["--limit", "2"]);
    assert_eq!(limited.len(), 3);

    // Every reading command reads generation 1 as the file's crawl.
    let (code, out, err) = run(
        d,
        &base,
        &[
            "report",
            "--db",
            "site.db",
            "broken",
            "--format",
            "csv",
            "--generation",
            "1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let targets: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(targets, ["/later", "/missing"]);
    let (_, out, _) = run(
        d,
        &base,
        &["report", "--db", "site.db", "broken", "--format", "csv"],
    );
    let targets: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(targets, ["/d", "/e", "/missing"]);
    let (code, out, err) = run(
        d,
        &base,
        &[
            "export",
            "--db",
            "site.db",
            "--format",
            "csv",
            "--what",
            "edges",
            "--generation",
            "1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("/f"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("/a,")).count(),
        1,
        "{out}"
    );
    let (code, out, err) = run(
        d,
        &base,
        &[
            "status",
            "--db",
            "site.db",
            "--format",
            "json",
            "--generation",
            "1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["generation"], 1);
    assert_eq!(status["generations"], serde_json::json!([1, 2]));
    assert_eq!(status["state"], "finished");
    assert_eq!(status["done"], 8, "/, a-e, /later and /missing: {status}");
    let (_, out, _) = run(d, &base, &["status", "--db", "site.db"]);
    assert!(out.contains("generation: 2 (kept: 1, 2)"), "{out}");

    // A generation the file does not keep is named, with those it does.
    let (code, _, err) = run(
        d,
        &base,
        &["report", "--db", "site.db", "summary", "--generation", "7"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("keeps no generation 7; it keeps 1, 2"),
        "{err}"
    );

    // A third generation of the unchanged site: every page 304s (its links carried over
    // from generation 2's, themselves partly carried from 1), and nothing changed.
    let summary = crawl(builder(&db, &server.base).refresh(true)).await;
    assert_eq!(summary.run.not_modified, 6, "/, a, b, c, f, later");
    assert_eq!(diff(d, &base, &[]), ["change,url,from,to,page,kind"]);
    let across = diff(d, &base, &["--from", "1", "--to", "3"]);
    assert_eq!(across, diff(d, &base, &["--from", "1", "--to", "2"]));

    // Pruning to one generation drops the others and their space; diff has nothing left.
    let (code, _, err) = run(d, &base, &["prune", "--db", "site.db", "--keep", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("dropped generation(s) 1, 2, kept 3"), "{err}");
    let left: Vec<(String, i64)> = support::db::pairs(
        &db,
        "SELECT 'gen_urls', count(*) FROM gen_urls
         UNION ALL SELECT 'generations', count(*) FROM generations
         UNION ALL SELECT 'gen_edges_N', count(*) FROM sqlite_master WHERE name GLOB 'gen_edges_*'",
    );
    let zero = |n: &str| (n.to_string(), 0);
    assert_eq!(
        left,
        [zero("gen_urls"), zero("generations"), zero("gen_edges_N")]
    );
    let (code, _, err) = run(d, &base, &["diff", "--db", "site.db"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("keeps only generation 3: nothing to compare"),
        "{err}"
    );
    // The current generation reads as before.
    assert_eq!(support::run::fetched(&db), 9, "/, a-f, /later, /missing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_keeps_what_an_unfinished_refresh_needs() {
    let (server, site) = start(first_version()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("site.db");
    crawl(builder(&db, &server.base)).await;
    edit(&site.pages);
    let slow = builder(&db, &server.base)
        .refresh(true)
        .concurrency(1)
        .delay(Duration::from_millis(150));
    let stopped = slow
        .build()
        .unwrap()
        .run(tokio::time::sleep(Duration::from_millis(400)))
        .await
        .unwrap();
    assert_eq!(stopped.outcome, Outcome::Interrupted);
    let d = dir.path();
    let (code, _, err) = run(
        d,
        &server.base,
        &["prune", "--db", "site.db", "--keep", "1"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("generation 2 is a refresh that has not finished"),
        "{err}"
    );
    let kept: Vec<(String, i64)> = support::db::pairs(
        &db,
        "SELECT 'kept', count(*) FROM gen_urls WHERE generation = 1",
    );
    assert_eq!(kept, [("kept".to_string(), 8)], "nothing dropped");
    // Resumed, it finishes; then generation 1 may go.
    crawl(builder(&db, &server.base)).await;
    let (code, _, err) = run(
        d,
        &server.base,
        &["prune", "--db", "site.db", "--keep", "1"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        d,
        &server.base,
        &["prune", "--db", "missing.db", "--keep", "1"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("missing.db does not exist"), "{err}");
    assert!(!d.join("missing.db").exists());
}
