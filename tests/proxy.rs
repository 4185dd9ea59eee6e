//! Proxies on loopback: requests go through the listed proxies in turn, a dead proxy is
//! taken out of rotation, and no page is lost on the way.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use support::adhoc::Adhoc;
use trawl::Crawler;

/// A forward proxy: takes absolute-form requests and fetches them directly.
async fn forward_proxy() -> (Adhoc, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let app = Router::new().fallback(move |uri: Uri| {
        let c = c.clone();
        let client = client.clone();
        async move {
            c.fetch_add(1, Ordering::SeqCst);
            match client.get(uri.to_string()).send().await {
                Ok(r) => {
                    let status = StatusCode::from_u16(r.status().as_u16()).unwrap();
                    let body = r.bytes().await.unwrap_or_default();
                    (status, [("content-type", "text/html")], body).into_response()
                }
                Err(_) => StatusCode::BAD_GATEWAY.into_response(),
            }
        }
    });
    (Adhoc::start(app).await, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_rotate_over_proxies_and_a_dead_one_is_benched() {
    let home: String = (0..20).map(|i| format!("<a href=/p/{i}>{i}</a>")).collect();
    let site = Adhoc::start(
        Router::new()
            .route("/", get(move || async move { Html(home) }))
            .route("/p/{i}", get(|| async { Html("p") })),
    )
    .await;
    let (p1, n1) = forward_proxy().await;
    let (p2, n2) = forward_proxy().await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.db");
    let s = tokio::time::timeout(
        Duration::from_secs(60),
        Crawler::builder()
            .db(&path)
            .seed(format!("{}/", site.base))
            .ignore_robots(true)
            .sitemaps(false)
            .concurrency(2)
            .proxies(vec![p1.base.clone(), dead_url, p2.base.clone()])
            .proxy_max_failures(2)
            .max_attempts(5)
            .retry_backoff(Duration::from_millis(10))
            .build()
            .unwrap()
            .run(std::future::pending()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(s.run.pages, 21);
    assert_eq!(s.run.failed, 0, "every page arrived through a live proxy");
    let (a, b) = (n1.load(Ordering::SeqCst), n2.load(Ordering::SeqCst));
    assert_eq!(a + b, 21, "all traffic went through the proxies");
    assert!(a >= 5 && b >= 5, "rotated: {a} / {b}");
    assert_eq!(site.all().len(), 21);
}
