//! The crawl's web page end to end: a real site crawled by the real binary into a real
//! file, `trawl serve` (or `trawl crawl --ui`) on a free loopback port, its JSON read over
//! HTTP, and the page itself rendered by a real headless Chromium.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::browser::{dump_dom, screenshot, text_of};
use support::ui::{bin, get, json};
use support::{SiteServer, SiteSpec};

/// The small generated site (it links to a 404, `/missing`) crawled by `trawl crawl`.
async fn crawled() -> (SiteServer, tempfile::TempDir, PathBuf) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("site.db");
    let (base, d, file) = (server.base(), dir.path().to_owned(), db.clone());
    let out = tokio::task::spawn_blocking(move || {
        let db = file.display().to_string();
        let args = [
            "crawl",
            &format!("{base}/"),
            "--db",
            &db,
            "-q",
            "--no-progress",
        ];
        support::run::trawl_output(&d, &args)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    (server, dir, db)
}

/// A `trawl serve` child, killed on drop, and the address it printed.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `trawl serve --db DB --addr 127.0.0.1:0 EXTRA...`, once it prints where it listens.
fn serve(db: &Path, extra: &[&str]) -> Served {
    let mut child = Command::new(bin())
        .args([
            "serve",
            "--db",
            &db.display().to_string(),
            "--addr",
            "127.0.0.1:0",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start trawl serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .split('?')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    Served { child, url }
}

/// `trawl status --db DB --format json`.
fn status_json(db: &Path) -> Value {
    let out = Command::new(bin())
        .args([
            "status",
            "--db",
            &db.display().to_string(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The figures of a status that do not move with the clock.
const FIGURES: &[&str] = &[
    "state",
    "known",
    "done",
    "failed",
    "queued",
    "skipped",
    "broken",
    "seeds",
    "status_classes",
    "errors",
    "generation",
];

/// The broken-link row of `/missing` and the page linking to it.
fn missing_link(broken: &Value) -> (String, String) {
    let row = broken["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["target"].as_str().unwrap().ends_with("/missing") && r["source"].is_string())
        .unwrap_or_else(|| panic!("no link to /missing in {broken}"));
    assert_eq!(row["class"], "broken");
    assert_eq!(row["status"], 404);
    let s = |k: &str| row[k].as_str().unwrap().to_owned();
    (s("target"), s("source"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_endpoints_answer_what_the_reports_and_status_say() {
    let (_site, _dir, db) = crawled().await;
    let served = serve(&db, &[]);
    let u = &served.url;
    let status = json(&format!("{u}/api/status")).await;
    let expected = status_json(&db);
    for k in FIGURES {
        assert_eq!(status[k], expected[k], "{k}");
    }
    let broken = json(&format!("{u}/api/broken")).await;
    let (target, source) = missing_link(&broken);
    // A page of one row, the next, and a filter: each a subset of the whole, in order.
    let all = json(&format!("{u}/api/top?limit=1000")).await["rows"].clone();
    let all = all.as_array().unwrap();
    assert!(all.len() > 3, "{all:?}");
    let second = json(&format!("{u}/api/top?offset=1&limit=2")).await;
    assert_eq!(second["rows"].as_array().unwrap(), &all[1..3]);
    assert_eq!(second["more"], true);
    let last = json(&format!("{u}/api/top?offset={}&limit=5", all.len() - 1)).await;
    assert_eq!(last["rows"].as_array().unwrap().len(), 1);
    assert_eq!(last["more"], false);
    let filtered = json(&format!("{u}/api/broken?q=MISSING")).await;
    assert!(filtered["rows"].as_array().unwrap().iter().all(|r| {
        let text = r.to_string().to_lowercase();
        text.contains("missing")
    }));
    assert!(!filtered["rows"].as_array().unwrap().is_empty());
    let none = json(&format!("{u}/api/redirects?q=no-such-url-anywhere")).await;
    assert_eq!(none["rows"], serde_json::json!([]));
    for report in ["redirects", "depth", "orphans"] {
        json(&format!("{u}/api/{report}")).await;
    }
    // The page view: the 404, linked from the page the broken report names.
    let page = json(&format!("{u}/api/page?url={}", enc(&target))).await;
    assert_eq!(page["url"]["status"], 404);
    let inlinks: Vec<&str> = page["inlinks"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert!(inlinks.contains(&source.as_str()), "{inlinks:?}");
    let from = json(&format!("{u}/api/page?url={}", enc(&source))).await;
    assert!(from["outlinks"]["rows"].to_string().contains(&target));
    let (code, _) = get(&format!("{u}/api/page?url={}", enc("http://nowhere.test/"))).await;
    assert_eq!(code, 404);
}

/// `trawl report KIND --db DB --format json EXTRA...`.
fn report_json(db: &Path, kind: &str, extra: &[&str]) -> Value {
    let out = Command::new(bin())
        .args(["report", kind, "--db", &db.display().to_string()])
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_are_the_reports_rows_paged_from_the_index() {
    let (_site, _dir, db) = crawled().await;
    let served = serve(&db, &[]);
    let u = &served.url;
    for (kind, extra) in [
        ("broken", &[][..]),
        ("redirects", &[]),
        ("depth", &[]),
        ("orphans", &[]),
        ("top", &["--limit", "1000"]),
    ] {
        let page = json(&format!("{u}/api/{kind}?limit=1000")).await;
        assert_eq!(page["rows"], report_json(&db, kind, extra), "{kind}");
        assert_eq!(page["stale"], false, "{kind}");
    }
    let mut index = db.as_os_str().to_owned();
    index.push("-ui");
    assert!(
        Path::new(&index).exists(),
        "the index beside the crawl file"
    );
    // Keyset pages: each `next` continues where the last page stopped.
    let all = json(&format!("{u}/api/top?limit=1000")).await["rows"].clone();
    let mut seen = Vec::new();
    let mut next = String::new();
    loop {
        let page = json(&format!("{u}/api/top?limit=3{next}")).await;
        seen.extend(page["rows"].as_array().unwrap().iter().cloned());
        match page["next"].as_i64() {
            Some(n) => next = format!("&after={n}"),
            None => break,
        }
    }
    assert_eq!(Value::Array(seen), all);
    // Every URL, by state and status class.
    let status = status_json(&db);
    let done = json(&format!("{u}/api/pages?state=done&limit=1000")).await;
    assert_eq!(
        done["rows"].as_array().unwrap().len() as u64,
        status["done"].as_u64().unwrap()
    );
    let missing = json(&format!("{u}/api/pages?class=4xx&q=MISS")).await;
    let rows = missing["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{missing}");
    assert!(rows
        .iter()
        .all(|r| r["status"].as_i64().unwrap() / 100 == 4
            && r["url"].as_str().unwrap().contains("miss")));
    let (target, _) = missing_link(&json(&format!("{u}/api/broken")).await);
    let view = json(&format!("{u}/api/page?url={}", enc(&target))).await;
    let listed = view["inlinks"]["rows"].as_array().unwrap().len() as i64;
    assert!(
        view["inlinks_total"].as_i64().unwrap() >= listed.max(1),
        "{view}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_follows_the_crawl_file_and_survives_damage() {
    use std::collections::BTreeMap;
    use support::editable::{page, start};
    let pages = BTreeMap::from([
        ("/".to_owned(), page("home", &["/a"])),
        ("/a".to_owned(), page("a", &[])),
    ]);
    let (server, site) = start(pages).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gen.db");
    let crawl = |extra: &'static [&'static str]| {
        let (d, file, base) = (
            dir.path().to_owned(),
            db.clone(),
            format!("{}/", server.base),
        );
        tokio::task::spawn_blocking(move || {
            let db = file.display().to_string();
            let mut args = vec!["crawl", &base, "--db", &db, "-q", "--no-progress"];
            args.extend(extra);
            let out = support::run::trawl_output(&d, &args);
            assert!(out.status.success(), "{out:?}");
        })
    };
    crawl(&[]).await.unwrap();
    let served = serve(&db, &[]);
    let broken = |u: String| async move {
        let page = json(&format!("{u}/api/broken")).await;
        page["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["target"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(broken(served.url.clone()).await, Vec::<String>::new());
    // A new generation: the index is rebuilt before it answers, not served stale.
    site.pages
        .lock()
        .unwrap()
        .insert("/a".into(), page("a", &["/gone"]));
    crawl(&["--refresh"]).await.unwrap();
    let gone = format!("{}/gone", server.base);
    assert_eq!(broken(served.url.clone()).await, vec![gone.clone()]);
    drop(served);
    // A damaged index is replaced, not reported.
    let mut index = db.as_os_str().to_owned();
    index.push("-ui");
    std::fs::write(&index, b"this is not a database, it is damage").unwrap();
    let served = serve(&db, &[]);
    assert_eq!(broken(served.url.clone()).await, vec![gone]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_crawls_tables_come_from_an_index_rebuilt_every_so_often() {
    let spec = SiteSpec {
        latency: Duration::from_millis(150),
        ..SiteSpec::small()
    };
    let site = SiteServer::start(support::Site::generate(&spec)).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("running.db");
    let mut crawl = tokio::process::Command::new(bin())
        .args(["crawl", &format!("{}/", site.base()), "--db"])
        .arg(&db)
        .args(["--concurrency", "1", "-q", "--no-progress"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let done = |db: &Path| -> u64 {
        match Command::new(bin())
            .args(["status", "--db"])
            .arg(db)
            .args(["--format", "json"])
            .output()
        {
            Ok(o) if o.status.success() => serde_json::from_slice::<Value>(&o.stdout)
                .map_or(0, |v| v["done"].as_u64().unwrap_or(0)),
            _ => 0,
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while done(&db) < 2 {
        assert!(Instant::now() < deadline, "the crawl never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let served = serve(&db, &[]);
    let u = &served.url;
    let first = json(&format!("{u}/api/depth")).await;
    let then = done(&db);
    while done(&db) <= then + 1 {
        assert!(Instant::now() < deadline, "the crawl never moved");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The crawl has moved on; within the rebuild interval the same rows answer, marked.
    let second = json(&format!("{u}/api/depth")).await;
    assert_eq!(second["as_of"], first["as_of"], "{second}");
    assert_eq!(second["stale"], true, "{second}");
    assert!(crawl.wait().await.unwrap().success());
    // Finished: rebuilt before answering, and the report's rows.
    let last = json(&format!("{u}/api/depth")).await;
    assert_eq!(last["stale"], false, "{last}");
    assert!(last["as_of"].as_i64() > first["as_of"].as_i64());
    assert_eq!(last["rows"], report_json(&db, "depth", &[]));
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_asked_of_every_request() {
    let (_site, _dir, db) = crawled().await;
    let served = serve(&db, &["--ui-token", "s3cret"]);
    let u = &served.url;
    for path in ["/", "/api/status", "/api/broken"] {
        let r = reqwest::get(format!("{u}{path}")).await.unwrap();
        assert_eq!(r.status().as_u16(), 401, "{path}");
    }
    let wrong = reqwest::get(format!("{u}/api/status?token=nope"))
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let by_query = reqwest::get(format!("{u}/api/status?token=s3cret"))
        .await
        .unwrap();
    assert_eq!(by_query.status().as_u16(), 200);
    let by_header = reqwest::Client::new()
        .get(format!("{u}/api/broken"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(by_header.status().as_u16(), 200);
    // The page passes the token it was given on to the endpoints.
    let dom = dump_dom(&format!("{u}/?token=s3cret#/summary")).await;
    let done = status_json(&db)["done"].to_string();
    assert_eq!(text_of(&dom, "data-figure", "done"), Some(done), "{dom}");
}

#[test]
fn other_addresses_without_a_token_and_missing_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let out = Command::new(bin())
        .args([
            "serve",
            "--db",
            &db.display().to_string(),
            "--addr",
            "0.0.0.0:0",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("pass --ui-token"), "{err}");
    let out = Command::new(bin())
        .args(["serve", "--db", &db.display().to_string()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("none.db"), "{err}");
    let out = Command::new(bin())
        .args([
            "crawl",
            "http://127.0.0.1:9/",
            "--db",
            &db.display().to_string(),
        ])
        .args(["--ui", "0.0.0.0:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--ui-token"), "{err}");
    assert!(!db.exists(), "nothing is created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_crawl_in_a_browser() {
    let (site, dir, db) = crawled().await;
    let served = serve(&db, &[]);
    let u = &served.url;
    let status = status_json(&db);
    let dom = dump_dom(&format!("{u}/#/summary")).await;
    for k in ["known", "done", "failed", "queued", "skipped", "broken"] {
        let shown = text_of(&dom, "data-figure", k);
        assert_eq!(shown, Some(status[k].to_string()), "{k} in {dom}");
    }
    let host = site.base().trim_start_matches("http://").to_owned();
    assert!(dom.contains(&format!("data-host=\"{host}\"")), "{dom}");

    let (target, source) = missing_link(&json(&format!("{u}/api/broken")).await);
    let dom = dump_dom(&format!("{u}/#/broken")).await;
    let row = dom
        .split("<tr>")
        .find(|r| r.contains(&format!("data-page=\"{target}\"")))
        .unwrap_or_else(|| panic!("no row for {target} in {dom}"));
    assert!(row.contains(&format!("data-page=\"{source}\"")), "{row}");

    // The 404's view lists its inlink as a link to the inlink's own view, which lists the
    // 404 among its outlinks.
    let dom = dump_dom(&format!("{u}/#/page?url={}", enc(&target))).await;
    let inlinks = &dom[dom.find("id=\"inlinks\"").expect("inlinks")..];
    let href = format!("href=\"#/page?url={}\"", js_enc(&source));
    assert!(inlinks.contains(&href), "{href} in {inlinks}");
    let dom = dump_dom(&format!("{u}/#/page?url={}", js_enc(&source))).await;
    assert_eq!(text_of(&dom, "id", "page-url"), Some(source.clone()));
    let outlinks = &dom[dom.find("id=\"outlinks\"").expect("outlinks")..];
    assert!(outlinks.contains(&format!("data-page=\"{target}\"")));

    // The pages table, filtered to 4xx: the 404 is there, and no page that answered 2xx.
    let dom = dump_dom(&format!("{u}/#/pages?class=4xx")).await;
    assert!(dom.contains(&format!("data-page=\"{target}\"")), "{dom}");
    assert!(!dom.contains(&format!("data-page=\"{source}\"")), "{dom}");

    let png = dir.path().join("summary.png");
    screenshot(&format!("{u}/#/summary"), &png).await;
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 1000 && bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    if let Some(keep) = std::env::var_os("TRAWL_UI_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

/// `encodeURIComponent`, as the page writes its links.
fn js_enc(s: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'!')
        .remove(b'~')
        .remove(b'*')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')');
    percent_encoding::utf8_percent_encode(s, KEEP).to_string()
}
