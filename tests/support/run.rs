//! Running crawls from tests: in-process through the library, or the real binary as a
//! child process that a test can kill.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::process::{Child, Command};
use trawl::CrawlerBuilder;

/// Build and run a crawl to its end (at most two minutes) and return its summary.
pub async fn crawl(builder: CrawlerBuilder) -> trawl::Summary {
    tokio::time::timeout(
        Duration::from_secs(120),
        builder.build().unwrap().run(std::future::pending()),
    )
    .await
    .expect("the crawl ends")
    .unwrap()
}

/// `trawl crawl BASE/ --db DB --concurrency N` as a child process, output discarded.
pub fn trawl_child(base: &str, db: &Path, concurrency: usize) -> Child {
    let args = ["--db".to_string(), db.display().to_string()];
    trawl_child_with(base, &args, concurrency)
}

/// `trawl crawl BASE/ ARGS... --concurrency N` as a child process, output discarded: `ARGS`
/// name the crawl (`--db FILE`, or `--store URL --crawl-id NAME`).
pub fn trawl_child_with(base: &str, args: &[String], concurrency: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(["crawl", &format!("{base}/")])
        .args(args)
        .args([
            "--concurrency",
            &concurrency.to_string(),
            "--no-progress",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting trawl")
}

/// Pages stored as fetched so far (0 while the file or its tables do not exist yet).
pub fn fetched(db: &Path) -> i64 {
    let Ok(conn) = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return 0;
    };
    conn.query_row("SELECT count(*) FROM urls WHERE state IN (1, 2)", [], |r| {
        r.get(0)
    })
    .unwrap_or(0)
}

/// The small generated site crawled into a fresh file with four workers; the edge set is
/// checked against the generator's before it is returned.
pub async fn crawl_small_site() -> (
    super::SiteServer,
    tempfile::TempDir,
    std::path::PathBuf,
    super::Expected,
) {
    let server = super::SiteServer::start(super::Site::generate(&super::SiteSpec::small())).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("site.db");
    crawl(
        trawl::Crawler::builder()
            .db(&db)
            .seed(format!("{}/", server.base()))
            .concurrency(4),
    )
    .await;
    let expected = server.expected();
    assert_eq!(super::db::read(&db).edges, expected.edges);
    (server, dir, db, expected)
}

/// `trawl ARGS` run to its end in `dir`, with no input and no `TRAWL_LOG`.
pub fn trawl_output(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
        .current_dir(dir)
        .env_remove("TRAWL_LOG")
        .stdin(Stdio::null())
        .args(args)
        .output()
        .expect("run trawl")
}
