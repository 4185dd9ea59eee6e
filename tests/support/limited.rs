//! A site with one rate-limited page, shared by the politeness tests of both engines:
//! the access log is the oracle for "nobody asked the host anything during its pause".

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;

use super::adhoc::Adhoc;

pub fn hub(n: usize) -> String {
    (0..n)
        .map(|i| format!("<a href=\"/p/{i}\">{i}</a>"))
        .collect()
}

/// `/` links to /limited and /p/0../p/{n-1}; /limited answers 429 with `retry_after` the
/// first time, then 200.
pub fn limited_site(n: usize, retry_after: &'static str) -> (Router, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let home = format!("<a href=\"/limited\">l</a>{}", hub(n));
    let app = Router::new()
        .route("/", get(move || async move { Html(home) }))
        .route(
            "/limited",
            get(move || {
                let c = c.clone();
                async move {
                    if c.fetch_add(1, Ordering::SeqCst) == 0 {
                        (
                            StatusCode::TOO_MANY_REQUESTS,
                            [(header::RETRY_AFTER, retry_after)],
                            "slow down",
                        )
                            .into_response()
                    } else {
                        Html("ok").into_response()
                    }
                }
            }),
        )
        .route(
            "/p/{i}",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Html("page")
            }),
        );
    (app, calls)
}

/// No request may start in (first 429 + slack, first 429 + pause - slack).
pub fn assert_quiet_after_429(server: &Adhoc, pause: Duration) {
    let t429 = server.hits("/limited")[0];
    let slack = Duration::from_millis(100);
    let early: Vec<_> = server
        .all()
        .into_iter()
        .filter(|h| h.at > t429 + slack && h.at < t429 + pause - slack)
        .collect();
    assert!(early.is_empty(), "requests during the pause: {early:?}");
}
