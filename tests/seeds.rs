//! Seeds that cannot be reached: reported as failed with their connection error in the
//! run's summary, `trawl status` and `report broken`, and the command exits 1 when not
//! one seed could be fetched.
//!
//! The unreachable host is a closed port on 127.0.0.3: connection refused, at once.

mod support;

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
        a.extend(store.args("cli"));
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

both_stores!(
    an_unreachable_seed_is_a_failure_with_its_error,
    one_unreachable_seed_does_not_fail_the_others,
    the_command_line_reports_an_unreachable_seed_and_exits_1
);
