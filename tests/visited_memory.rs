//! Crawls whose visited set passes `visited-memory`: URLs move to files on disk, and the
//! crawl must store exactly what an unlimited one stores, fetch every page once, and
//! resume the same way.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::check::{assert_fetched_once, assert_matches};
use support::{db, SiteServer, SiteSpec};
use tokio::sync::Notify;
use trawl::{Crawler, Outcome};

/// The smallest budget: 17 URLs per generation per shard, so a few thousand URLs make
/// runs in every shard, and merged runs.
const BUDGET: u64 = 64 << 10;

fn spec() -> SiteSpec {
    SiteSpec {
        seed: 21,
        pages: 4_000,
        links_per_page: 6,
        latency: Duration::ZERO,
        extras: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_past_visited_memory_stores_the_whole_site_once() {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.db");
    let summary = support::run::crawl(
        Crawler::builder()
            .db(&path)
            .seed(format!("{}/", server.base()))
            .concurrency(8)
            .per_host(8)
            .visited_memory(BUDGET),
    )
    .await;
    assert_eq!(summary.outcome, Outcome::Finished);
    let v = summary.visited;
    assert!(v.runs >= 64, "every shard wrote runs: {v:?}");
    assert!(
        v.on_disk as u64 >= summary.known_urls / 2,
        "most URLs went to disk: {v:?}, {} known",
        summary.known_urls
    );
    assert!(v.memory < 1 << 20, "memory stayed near the budget: {v:?}");
    let expected = server.expected();
    assert_matches(&expected, &db::read(&path), false);
    assert_fetched_once(&server, &expected);
    // The run files were unlinked: only the database (and its WAL, open for reading
    // above) is left in its directory.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("site.db"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_crawl_past_visited_memory_resumes_without_refetching() {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.db");
    // Stop after 1,500 pages: by then the visited set is on disk in every shard.
    let pages = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(Notify::new());
    let (p, s) = (pages.clone(), stop.clone());
    let seen_live = Arc::new(std::sync::Mutex::new(None));
    let live = seen_live.clone();
    let crawler = Crawler::builder()
        .db(&path)
        .seed(format!("{}/", server.base()))
        .concurrency(8)
        .per_host(8)
        .visited_memory(BUDGET)
        .on_page(move |_| {
            if p.fetch_add(1, Ordering::SeqCst) + 1 == 1_500 {
                s.notify_one();
            }
        })
        .build()
        .unwrap();
    let progress = crawler.progress();
    let first = crawler
        .run(async move {
            stop.notified().await;
            // What a progress display or the metrics endpoint reads while crawling.
            *live.lock().unwrap() = Some(progress.snapshot().visited);
        })
        .await
        .unwrap();
    assert_eq!(first.outcome, Outcome::Interrupted);
    assert!(first.visited.runs > 0, "{:?}", first.visited);
    let live = seen_live.lock().unwrap().expect("read at the stop");
    assert!(live.on_disk > 0 && live.memory > 0, "{live:?}");

    // The resume rebuilds the set from the store, past the budget again.
    let second = support::run::crawl(Crawler::builder().db(&path).visited_memory(BUDGET)).await;
    assert_eq!(second.outcome, Outcome::Finished);
    assert!(second.visited.runs >= 64, "{:?}", second.visited);
    let expected = server.expected();
    assert_matches(&expected, &db::read(&path), false);
    assert_fetched_once(&server, &expected);
}

#[test]
fn a_budget_out_of_range_is_refused_before_the_file_exists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.db");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args([
            "crawl",
            "http://127.0.0.1:9/",
            "--visited-memory",
            "1KiB",
            "--db",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("visited-memory") && err.contains("64KiB"),
        "{err}"
    );
    assert!(!path.exists());
}
