//! The live section of the crawl's page while a crawl runs: its figures, the hosts table
//! from the engine's memory (in flight, delay, pauses, robots.txt), and a Redis crawl's
//! crawl-wide host figures, read over HTTP and rendered by headless Chromium.

use crate::support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use axum::response::Html;
use axum::routing;
use axum::Router;
use serde_json::Value;
use support::adhoc::Adhoc;
use support::browser::{dump_dom, text_of};
use support::limited::{hub, limited_site};
use support::redis::RedisServer;
use support::ui::{bin, free_port, json};
use support::{SiteServer, SiteSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_crawl_shows_its_live_figures() {
    let spec = SiteSpec {
        latency: Duration::from_millis(200),
        ..SiteSpec::small()
    };
    let site = SiteServer::start(support::Site::generate(&spec)).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.db");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut crawl = tokio::process::Command::new(bin())
        .args(["crawl", &format!("{}/", site.base()), "--db"])
        .arg(&db)
        .args(["--ui", &addr, "--concurrency", "2", "-q", "--no-progress"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let u = format!("http://{addr}");
    let pages = |v: &Value| v["pages"].as_u64().unwrap();
    let first = wait_live(&u, |v| pages(v) >= 2).await;
    let later = wait_live(&u, |v| pages(v) > pages(&first)).await;
    assert!(later["queued"].is_u64() && later["fetching"].is_u64());
    // Alone in its crawl: no whole-crawl figures beside its own.
    assert!(later["crawl"].is_null(), "{later}");
    let dom = dump_dom(&format!("{u}/#/live")).await;
    let shown: u64 = text_of(&dom, "data-figure", "pages")
        .unwrap_or_else(|| panic!("no live figures in {dom}"))
        .parse()
        .unwrap();
    assert!(shown >= pages(&later), "{shown}");
    assert!(dom.contains("<polyline"), "a rate chart");
    let host = site.base().trim_start_matches("http://").to_owned();
    assert!(dom.contains(&format!("data-host=\"{host}\"")), "{dom}");
    let status = crawl.wait().await.unwrap();
    assert!(status.success(), "{status:?}");
}

/// `/api/live` once `ok` holds of it (within 20 s).
async fn wait_live(u: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = Value::Null;
    loop {
        if let Ok(r) = reqwest::get(format!("{u}/api/live")).await {
            let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
            assert_eq!(v["running"], true, "{v}");
            if ok(&v) {
                return v;
            }
            last = v;
        }
        assert!(
            Instant::now() < deadline,
            "the live figures never came to what was waited for; last: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A site whose pages answer slowly (400 ms) and whose robots.txt has one rule and a
/// Crawl-delay of 250 ms: its crawl stays in flight long enough to be watched.
fn slow_site(pages: usize) -> Router {
    let home = hub(pages);
    Router::new()
        .route(
            "/robots.txt",
            routing::get(|| async { "User-agent: *\nDisallow: /private\nCrawl-delay: 0.25\n" }),
        )
        .route("/", routing::get(move || async move { Html(home) }))
        .route(
            "/p/{i}",
            routing::get(|| async {
                tokio::time::sleep(Duration::from_millis(400)).await;
                Html("page")
            }),
        )
}

/// `trawl crawl SEED --ui ADDR ARGS...` as a child killed on drop, and its page's address.
fn live_crawl(seed: &str, args: &[&str]) -> (tokio::process::Child, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let child = tokio::process::Command::new(bin())
        .args(["crawl", seed, "--ui", &addr, "-q", "--no-progress"])
        .args(args)
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    (child, format!("http://{addr}"))
}

/// The row of `host` in `/api/live`'s hosts once `ok` holds of it (within 20 s).
async fn wait_host(u: &str, host: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let row = |r: &Value| r["host"] == host && ok(r);
    let live = wait_live(u, |v| {
        v["hosts"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(row))
    })
    .await;
    let rows = live["hosts"].as_array().unwrap();
    rows.iter().find(|r| row(r)).unwrap().clone()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_table_shows_what_the_engine_knows_of_each_host() {
    let site = Adhoc::start(slow_site(30)).await;
    let host = site.base.trim_start_matches("http://").to_owned();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hosts.db");
    let (crawl, u) = live_crawl(&format!("{}/", site.base), &["--db", db.to_str().unwrap()]);
    let row = wait_host(&u, &host, |r| {
        r["in_flight"].as_u64().is_some_and(|n| n > 0) && r["pages"].as_u64() >= Some(1)
    })
    .await;
    assert_eq!(row["robots"], "read", "{row}");
    assert_eq!(row["robots_rules"], 1, "{row}");
    assert_eq!(row["delay_ms"], 250, "the Crawl-delay: {row}");
    assert_eq!(row["paused_until"], Value::Null, "{row}");
    let live = json(&format!("{u}/api/live")).await;
    let last = live["recent"]["pages"].as_array().unwrap();
    assert!(!last.is_empty() && last.len() <= 10, "{live}");
    assert!(last[0]["url"].as_str().unwrap().starts_with(&site.base));
    // The same rows from /api/hosts, from memory while the crawl runs.
    let hosts = json(&format!("{u}/api/hosts")).await;
    assert!(hosts["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["host"] == host && r["robots"] == "read"));
    let dom = dump_dom(&format!("{u}/#/live")).await;
    assert!(dom.contains(&format!("data-host=\"{host}\"")), "{dom}");
    assert!(dom.contains("data-robots=\"read\""), "{dom}");
    assert!(dom.contains("data-delay-ms=\"250\""), "{dom}");
    assert!(dom.contains("read, 1 rules"), "{dom}");
    let status = crawl.wait_with_output().await.unwrap().status;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_shows_its_pause_on_the_host() {
    let (app, _) = limited_site(5, "4");
    let site = Adhoc::start(app).await;
    let host = site.base.trim_start_matches("http://").to_owned();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("paused.db");
    let before = now_ms();
    let (crawl, u) = live_crawl(&format!("{}/", site.base), &["--db", db.to_str().unwrap()]);
    let row = wait_host(&u, &host, |r| r["paused_until"].is_i64()).await;
    let until = row["paused_until"].as_i64().unwrap();
    assert!(
        until >= before + 3000,
        "Retry-After: 4 s from the 429: {row}"
    );
    assert!(until <= now_ms() + 4500, "{row}");
    let status = crawl.wait_with_output().await.unwrap().status;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_crawl_shows_the_crawl_wide_host_figures() {
    let redis = RedisServer::start();
    let site = Adhoc::start(slow_site(60)).await;
    let host = site.base.trim_start_matches("http://").to_owned();
    let id = "uihosts";
    let (_crawl, u) = live_crawl(
        &format!("{}/", site.base),
        &["--store", &redis.url(), "--crawl-id", id],
    );
    let row = wait_host(&u, &host, |r| {
        r["in_flight"].as_u64().is_some_and(|n| n > 0) && r["pages"].as_u64() >= Some(1)
    })
    .await;
    assert_eq!(row["robots"], "read", "{row}");
    assert_eq!(row["delay_ms"], 250, "{row}");
    // A second process joins (without a page): the whole crawl's figures count both.
    let _second = tokio::process::Command::new(bin())
        .args(["crawl", &format!("{}/", site.base), "-q", "--no-progress"])
        .args(["--store", &redis.url(), "--crawl-id", id])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let live = wait_live(&u, |v| v["crawl"]["processes"] == 2).await;
    let crawl = &live["crawl"];
    assert!(crawl["known"].as_u64() >= Some(60), "{crawl}");
    assert!(crawl["pages"].as_u64() >= Some(1), "{crawl}");
    let own = json(&format!("{u}/api/live")).await;
    assert_eq!(own["crawl"]["processes"], 2, "{own}");
    let dom = dump_dom(&format!("{u}/#/live")).await;
    assert_eq!(
        text_of(&dom, "data-figure", "crawl-processes").as_deref(),
        Some("2"),
        "{dom}"
    );
    // A pause as another process of the crawl would set it, in Redis: this process never
    // saw a 429, yet its page shows the pause every process obeys.
    let until = now_ms() + 60_000;
    let state = format!("trawl:{{{id}/{host}}}:state");
    redis.cli(&["HSET", &state, "paused_until", &until.to_string()]);
    let row = wait_host(&u, &host, |r| r["paused_until"].as_i64() == Some(until)).await;
    assert!(row["in_flight"].is_u64(), "{row}");
    let live = json(&format!("{u}/api/live")).await;
    assert!(
        !live["recent"]["pages"].as_array().unwrap().is_empty(),
        "{live}"
    );
}
