//! End-to-end crawls of a generated site on 127.0.0.1, through the library, in both
//! stores.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::backend::{both_stores, Backend};
use support::check::{assert_fetched_once, assert_matches};
use support::{SiteServer, SiteSpec};
use trawl::Outcome;

async fn crawl_stores_exactly_the_reachable_site(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    let summary = store
        .build(
            store
                .builder("site")
                .seed(format!("{}/", server.base()))
                .concurrency(4),
        )
        .await
        .unwrap()
        .run(std::future::pending())
        .await
        .unwrap();
    assert_eq!(summary.outcome, Outcome::Finished);
    assert!(
        !summary.resumed,
        "the run that started the crawl did not resume one"
    );
    let expected = server.expected();
    let path = store.db("site").await;
    let got = support::db::read(&path);
    assert_matches(&expected, &got, false);
    assert!(got.finished);
    assert_fetched_once(&server, &expected);
    // <a> edges carry their text.
    let anchored: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM edges WHERE kind = 0 AND anchor IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(anchored > 0, "anchor text stored");
    // The loop is reported on the hop that closes it.
    let loop_b = &got.fetched[&format!("{}/loop/b", server.base())];
    assert_eq!(loop_b.3.as_deref(), Some("redirect-loop"));
    assert_eq!(summary.run.pages as usize, expected.fetched.len());

    // Crawling a finished crawl again does nothing.
    server.clear_log();
    let again = store
        .build(store.builder("site"))
        .await
        .unwrap()
        .run(std::future::pending())
        .await
        .unwrap();
    assert_eq!(again.outcome, Outcome::AlreadyFinished);
    assert!(server.hits().is_empty());
}

async fn one_worker_crawls_breadth_first(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    store
        .crawl(
            store
                .builder("bfs")
                .seed(format!("{}/", server.base()))
                .concurrency(1),
        )
        .await;
    assert_matches(&server.expected(), &store.read("bfs").await, true);
}

async fn a_crawl_whose_pages_all_fail_still_ends(store: Backend) {
    // A port nobody listens on: every fetch is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let summary = store
        .crawl(
            store
                .builder("fail")
                .seed(format!("http://127.0.0.1:{port}/"))
                .seed(format!("http://127.0.0.1:{port}/other"))
                .ignore_robots(true)
                .max_attempts(2)
                .retry_backoff(Duration::from_millis(10)),
        )
        .await;
    assert_eq!(summary.outcome, Outcome::Finished);
    assert_eq!(summary.run.failed, 2);
    let got = store.read("fail").await;
    assert!(got
        .fetched
        .values()
        .all(|f| f.3.as_deref() == Some("connect")));
}

async fn a_panicking_page_hook_does_not_hang_the_crawl(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let summary = store
        .crawl(
            store
                .builder("panic")
                .seed(format!("{}/", server.base()))
                .on_page(move |page| {
                    c.fetch_add(1, Ordering::Relaxed);
                    if page.url.path() == "/p/5" {
                        panic!("hook refuses /p/5");
                    }
                }),
        )
        .await;
    assert_eq!(summary.outcome, Outcome::Finished);
    let got = store.read("panic").await;
    let p5 = &got.fetched[&format!("{}/p/5", server.base())];
    assert_eq!(p5.3.as_deref(), Some("panic"));
    assert_eq!(got.fetched.len(), server.expected().fetched.len());
    assert_eq!(calls.load(Ordering::Relaxed), got.fetched.len());
}

async fn the_last_modified_header_is_stored(store: Backend) {
    use axum::response::{Html, IntoResponse};
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(|| async {
                (
                    [("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT")],
                    Html("<a href=/plain>p</a>"),
                )
                    .into_response()
            }),
        )
        .route("/plain", axum::routing::get(|| async { Html("plain") }));
    let server = support::adhoc::Adhoc::start(app).await;
    store
        .crawl(
            store
                .builder("lm")
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .sitemaps(false),
        )
        .await;
    let db = store.db("lm").await;
    let got: std::collections::BTreeMap<String, Option<String>> =
        support::db::pairs(&db, "SELECT key, last_modified FROM urls");
    assert_eq!(
        got[&format!("{}/", server.base)].as_deref(),
        Some("Wed, 21 Oct 2015 07:28:00 GMT")
    );
    assert_eq!(got[&format!("{}/plain", server.base)], None);
}

both_stores!(
    the_last_modified_header_is_stored,
    crawl_stores_exactly_the_reachable_site,
    one_worker_crawls_breadth_first,
    a_crawl_whose_pages_all_fail_still_ends,
    a_panicking_page_hook_does_not_hang_the_crawl
);
