//! Interruptions of the real binary: kill -9 at several points, Ctrl-C once and twice;
//! every resumed crawl must end with exactly the pages and edges of an uninterrupted one.

use crate::support;

use std::time::{Duration, Instant};

use support::backend::{both_stores, Backend};
use support::run::trawl_child_with;
use support::{SiteServer, SiteSpec};
use tokio::process::Child;

const CONCURRENCY: usize = 4;
/// The crawl each test makes, in its own store.
const CRAWL: &str = "resume";

fn spec() -> SiteSpec {
    SiteSpec {
        seed: 11,
        pages: 300,
        links_per_page: 8,
        latency: Duration::from_millis(15),
        extras: true,
    }
}

/// The crawl as a child process. A short lease: a killed process's URLs go back to a Redis
/// crawl at once (a local crawl takes them back on resume whatever the lease).
fn child(store: &Backend, base: &str) -> Child {
    let mut args = store.args(CRAWL);
    args.extend(["--lease".to_string(), "1s".to_string()]);
    trawl_child_with(base, &args, CONCURRENCY)
}

fn host(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

async fn wait_for_pages(store: &Backend, base: &str, n: i64, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.stored(CRAWL, &host(base)) < n {
        assert!(Instant::now() < deadline, "no progress to {n} pages");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("trawl exited early with {status}");
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
}

fn signal(child: &Child, sig: i32) {
    let pid = child.id().expect("running") as i32;
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

async fn run_to_end(store: &Backend, base: &str) {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        child(store, base).wait_with_output(),
    )
    .await
    .expect("the resumed crawl ends")
    .unwrap();
    assert!(
        out.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn assert_complete(store: &Backend, server: &SiteServer, interruptions: usize) {
    let expected = server.expected();
    let got = store.read(CRAWL).await;
    assert_eq!(got.integrity, "ok");
    assert!(got.finished, "the crawl is marked finished");
    assert!(got.duplicate_keys.is_empty(), "{:?}", got.duplicate_keys);
    assert!(got.queued.is_empty());
    let have: std::collections::BTreeMap<_, _> =
        got.fetched.iter().map(|(k, v)| (k.clone(), v.0)).collect();
    let want: std::collections::BTreeMap<_, _> = expected
        .fetched
        .iter()
        .map(|(k, p)| (k.clone(), Some(p.status)))
        .collect();
    assert_eq!(have, want, "fetched pages");
    let skipped: std::collections::BTreeSet<_> = got.skipped.keys().cloned().collect();
    assert_eq!(skipped, expected.skipped);
    assert_eq!(got.edges, expected.edges, "edge multiset");
    // Only fetches under way at an interruption may be repeated.
    let hits: usize = server
        .hit_counts()
        .iter()
        .filter(|(p, _)| !["/robots.txt", "/sitemap.xml"].contains(&p.as_str()))
        .map(|(_, n)| n)
        .sum();
    let extra = hits - expected.fetched.len();
    assert!(
        extra <= CONCURRENCY * 2 * interruptions,
        "{extra} repeated fetches for {interruptions} interruptions"
    );
}

async fn kill_9_at_several_points_then_resume(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let total = server.expected().fetched.len() as i64;
    // Right at the start, then early, middle and late in the crawl.
    let points = [0, total / 10, total / 3, total / 2, total * 4 / 5];
    for &at in &points {
        let mut child = child(&store, &base);
        if at == 0 {
            tokio::time::sleep(Duration::from_millis(30)).await;
        } else {
            wait_for_pages(&store, &base, at, &mut child).await;
        }
        signal(&child, libc::SIGKILL);
        let status = child.wait().await.unwrap();
        assert!(!status.success());
        // Between runs the store is sound.
        store.assert_sound(CRAWL).await;
    }
    run_to_end(&store, &base).await;
    assert_complete(&store, &server, points.len()).await;
}

async fn ctrl_c_once_stops_cleanly_and_resumes(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let total = server.expected().fetched.len() as i64;
    let mut child = child(&store, &base);
    wait_for_pages(&store, &base, total / 3, &mut child).await;
    signal(&child, libc::SIGINT);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("stops within the grace period")
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = store.read(CRAWL).await;
    assert!(!got.finished);
    assert!(!got.queued.is_empty(), "stopped before the end");
    store.assert_released(CRAWL, &host(&base));
    run_to_end(&store, &base).await;
    assert_complete(&store, &server, 1).await;
}

async fn ctrl_c_twice_exits_at_once_and_resumes(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let total = server.expected().fetched.len() as i64;
    let mut child = child(&store, &base);
    wait_for_pages(&store, &base, total / 3, &mut child).await;
    signal(&child, libc::SIGINT);
    tokio::time::sleep(Duration::from_millis(5)).await;
    signal(&child, libc::SIGINT);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits at once")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    store.assert_sound(CRAWL).await;
    run_to_end(&store, &base).await;
    assert_complete(&store, &server, 1).await;
}

/// Abort at a chosen point (see `trawl::failpoint`), then resume; the result must be the
/// uninterrupted crawl's, with at most the concurrency of repeated fetches.
async fn crash_at(store: &Backend, point: &str) {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["crawl", &format!("{base}/")])
        .args(store.args(CRAWL))
        .args([
            "--concurrency",
            &CONCURRENCY.to_string(),
            "--lease",
            "1s",
            "--no-progress",
            "-q",
        ])
        .env("TRAWL_FAILPOINT", point)
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGABRT),
        "aborted at {point}"
    );
    store.assert_sound(CRAWL).await;
    run_to_end(store, &base).await;
    assert_complete(store, &server, 1).await;
}

async fn crash_after_a_fetch_before_its_commit(store: Backend) {
    crash_at(&store, "after-fetch:40").await;
}

async fn crash_just_after_a_commit(store: Backend) {
    crash_at(&store, "after-commit:6").await;
}

both_stores!(
    kill_9_at_several_points_then_resume,
    ctrl_c_once_stops_cleanly_and_resumes,
    ctrl_c_twice_exits_at_once_and_resumes,
    crash_after_a_fetch_before_its_commit,
    crash_just_after_a_commit,
);
