//! Interruptions of the real binary: kill -9 at several points, Ctrl-C once and twice;
//! every resumed crawl must end with exactly the pages and edges of an uninterrupted one.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use support::run::{fetched, trawl_child};
use support::{db, SiteServer, SiteSpec};
use tokio::process::Child;

const CONCURRENCY: usize = 4;

fn spec() -> SiteSpec {
    SiteSpec {
        seed: 11,
        pages: 300,
        links_per_page: 8,
        latency: Duration::from_millis(15),
        extras: true,
    }
}

async fn wait_for_pages(db: &Path, n: i64, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while fetched(db) < n {
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

async fn run_to_end(base: &str, db: &Path) {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        trawl_child(base, db, CONCURRENCY).wait_with_output(),
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

fn assert_complete(server: &SiteServer, path: &Path, interruptions: usize) {
    let expected = server.expected();
    let got = db::read(path);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_several_points_then_resume() {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let total = server.expected().fetched.len() as i64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.db");
    // Right at the start, then early, middle and late in the crawl.
    let points = [0, total / 10, total / 3, total / 2, total * 4 / 5];
    for &at in &points {
        let mut child = trawl_child(&base, &path, CONCURRENCY);
        if at == 0 {
            tokio::time::sleep(Duration::from_millis(30)).await;
        } else {
            wait_for_pages(&path, at, &mut child).await;
        }
        signal(&child, libc::SIGKILL);
        let status = child.wait().await.unwrap();
        assert!(!status.success());
        // Between runs the file is sound.
        assert_eq!(db::integrity(&path).as_deref().unwrap_or("ok"), "ok");
    }
    run_to_end(&base, &path).await;
    assert_complete(&server, &path, points.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_once_stops_cleanly_and_resumes() {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let total = server.expected().fetched.len() as i64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("int.db");
    let mut child = trawl_child(&base, &path, CONCURRENCY);
    wait_for_pages(&path, total / 3, &mut child).await;
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
    let got = db::read(&path);
    assert!(!got.finished);
    assert!(!got.queued.is_empty(), "stopped before the end");
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let pid: Option<i64> = conn
        .query_row("SELECT running_pid FROM crawl", [], |r| r.get(0))
        .unwrap();
    assert_eq!(pid, None, "a clean stop clears the running pid");
    run_to_end(&base, &path).await;
    assert_complete(&server, &path, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_twice_exits_at_once_and_resumes() {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let total = server.expected().fetched.len() as i64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("int2.db");
    let mut child = trawl_child(&base, &path, CONCURRENCY);
    wait_for_pages(&path, total / 3, &mut child).await;
    signal(&child, libc::SIGINT);
    tokio::time::sleep(Duration::from_millis(5)).await;
    signal(&child, libc::SIGINT);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits at once")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(db::read(&path).integrity, "ok");
    run_to_end(&base, &path).await;
    assert_complete(&server, &path, 1);
}

/// Abort at a chosen point (see `trawl::failpoint`), then resume; the result must be the
/// uninterrupted crawl's, with at most the concurrency of repeated fetches.
async fn crash_at(point: &str) {
    let server = SiteServer::start(support::Site::generate(&spec())).await;
    let base = server.base();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fp.db");
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["crawl", &format!("{base}/"), "--db"])
        .arg(&path)
        .args([
            "--concurrency",
            &CONCURRENCY.to_string(),
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
    let crashed = db::read_partial(&path);
    assert_eq!(crashed, "ok", "the file is sound after the abort");
    run_to_end(&base, &path).await;
    assert_complete(&server, &path, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_a_fetch_before_its_commit() {
    crash_at("after-fetch:40").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_just_after_a_commit() {
    crash_at("after-commit:6").await;
}
