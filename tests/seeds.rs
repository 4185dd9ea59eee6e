//! Seeds that cannot be reached: reported as failed with their connection error in the
//! run's summary, `trawl status` and `report broken`, and the command exits 1 when not
//! one seed could be fetched. Seeds from a file (`seeds-file`, `-` for standard input).
//!
//! The unreachable host is a closed port on 127.0.0.3: connection refused, at once.

use crate::support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};
use trawl::Outcome;

/// A URL on a port where nothing listens.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.3:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.3:{port}/")
}

fn stored_failure(db: &std::path::Path, url: &str) -> (i64, Option<String>, Option<String>) {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT state, error_kind, error FROM urls WHERE url = ?1 OR key = ?1",
            [url],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
}

async fn an_unreachable_seed_is_a_failure_with_its_error(store: Backend) {
    let dead = closed_port_url();
    let s = store.crawl(store.builder("dead").seed(dead.clone())).await;
    assert_eq!(s.outcome, Outcome::Finished);
    assert!(s.run.no_seed_fetched(), "{:?}", s.run);
    assert_eq!(s.run.failed_seeds.len(), 1, "{:?}", s.run.failed_seeds);
    let seed = &s.run.failed_seeds[0];
    assert_eq!(
        (seed.url.as_str(), seed.error_kind.as_str()),
        (dead.as_str(), "connect")
    );
    assert!(seed.error.contains("robots.txt got no response"), "{seed}");
    let (state, kind, error) = stored_failure(&store.db("dead").await, &dead);
    assert_eq!((state, kind.as_deref()), (2, Some("connect")));
    assert!(error.unwrap_or_default().contains("onnection refused"));
}

async fn one_unreachable_seed_does_not_fail_the_others(store: Backend) {
    let app = Router::new()
        .route("/", get(|| async { Html("<a href=/a>a</a>") }))
        .route("/a", get(|| async { Html("a") }));
    let server = Adhoc::start(app).await;
    let dead = closed_port_url();
    let s = store
        .crawl(
            store
                .builder("mixed")
                .seed(dead.clone())
                .seed(format!("{}/", server.base)),
        )
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    assert!(!s.run.no_seed_fetched());
    assert_eq!(s.run.failed_seeds.len(), 1);
    assert_eq!(s.run.failed_seeds[0].url, dead);
    assert_eq!(server.hits("/a").len(), 1);
}

fn trawl(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
        .args(args)
        .env_remove("TRAWL_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run trawl")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn the_command_line_reports_an_unreachable_seed_and_exits_1(store: Backend) {
    let dead = closed_port_url();
    let with = |cmd: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        a.extend(if cmd[0] == "crawl" {
            store.args("cli")
        } else {
            store.read_args("cli")
        });
        a
    };
    let crawl = tokio::task::spawn_blocking({
        let args = with(&["crawl", &dead]);
        move || trawl(&args)
    })
    .await
    .unwrap();
    let (out, err) = (text(&crawl.stdout), text(&crawl.stderr));
    assert_eq!(
        crawl.status.code(),
        Some(1),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains(&format!("seed failed: {dead} (connect: ")),
        "{out}"
    );
    assert!(err.contains("no seed could be fetched"), "{err}");
    // No proxy is configured: nothing may speak of one.
    assert!(!err.contains("proxy taken out"), "{err}");

    let status = trawl(&with(&["status"]));
    let shown = text(&status.stdout);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{shown}{}",
        text(&status.stderr)
    );
    assert!(
        shown.contains(&format!("seed failed: {dead} (connect: ")),
        "{shown}"
    );

    let broken = trawl(&with(&["report", "broken"]));
    let listed = text(&broken.stdout);
    assert_eq!(
        broken.status.code(),
        Some(0),
        "{listed}{}",
        text(&broken.stderr)
    );
    let row = listed
        .lines()
        .find(|l| l.starts_with(&dead))
        .unwrap_or_else(|| {
            panic!("{dead} not in report broken:\n{listed}");
        });
    assert!(row.contains("connect"), "{row}");
}

/// Two sites, each a page linking to one more.
async fn two_sites() -> (Adhoc, Adhoc) {
    let site = || {
        Router::new()
            .route("/", get(|| async { Html("<a href=/a>a</a>") }))
            .route("/a", get(|| async { Html("a") }))
    };
    (Adhoc::start(site()).await, Adhoc::start(site()).await)
}

async fn seeds_come_from_a_file_with_comments_and_blank_lines(store: Backend) {
    let (one, two) = two_sites().await;
    let file = store.dir().join("sites.txt");
    std::fs::write(
        &file,
        format!(
            "# the sites\n{}/\n\n   {}/  \n# {}/never\n",
            one.base, two.base, one.base
        ),
    )
    .unwrap();
    let s = store
        .crawl(
            store
                .builder("file")
                .seeds_file(file.clone())
                .ignore_robots(true),
        )
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    for site in [&one, &two] {
        assert_eq!((site.hits("/").len(), site.hits("/a").len()), (1, 1));
    }
    assert!(one.hits("/never").is_empty());
    // The seeds are stored with the crawl: a resume needs no file.
    std::fs::remove_file(&file).unwrap();
    let again = store
        .build(store.builder("file"))
        .await
        .expect("resume without the file");
    assert_eq!(again.seeds().len(), 2);
}

async fn a_bad_line_in_the_seeds_file_is_refused_with_its_number(store: Backend) {
    let file = store.dir().join("bad.txt");
    std::fs::write(&file, "http://127.0.0.1:9/\n\nnot a url at all\n").unwrap();
    let err = store
        .build(store.builder("bad").seeds_file(file.clone()))
        .await
        .err()
        .expect("refused");
    assert!(err.is_usage());
    let text = err.to_string();
    assert!(
        text.contains("bad.txt line 3: \"not a url at all\""),
        "{text}"
    );
    // Nothing was written.
    if !store.is_redis() {
        assert!(!store.dir().join("bad.db").exists());
    }
    let missing = store
        .build(
            store
                .builder("missing")
                .seeds_file(store.dir().join("none.txt")),
        )
        .await
        .err()
        .expect("refused");
    assert!(
        missing.to_string().contains("cannot read the seeds file"),
        "{missing}"
    );
}

async fn the_command_line_reads_seeds_from_standard_input(store: Backend) {
    let (one, two) = two_sites().await;
    let mut args = vec!["crawl".to_string(), "--seeds-file".into(), "-".into()];
    args.extend(["--ignore-robots".to_string(), "-q".into()]);
    args.extend(store.args("stdin"));
    let input = format!("{}/\n# a comment\n{}/\n", one.base, two.base);
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
            .args(&args)
            .env_remove("TRAWL_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for site in [&one, &two] {
        assert_eq!(site.hits("/a").len(), 1);
    }
}

both_stores!(
    an_unreachable_seed_is_a_failure_with_its_error,
    one_unreachable_seed_does_not_fail_the_others,
    the_command_line_reports_an_unreachable_seed_and_exits_1,
    seeds_come_from_a_file_with_comments_and_blank_lines,
    a_bad_line_in_the_seeds_file_is_refused_with_its_number,
    the_command_line_reads_seeds_from_standard_input
);
