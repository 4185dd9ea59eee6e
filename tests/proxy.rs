//! Proxies on loopback: requests go through the listed proxies in turn, a dead proxy is
//! taken out of rotation, and no page is lost on the way.

use crate::support;

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

/// A minimal SOCKS5 server (no auth, CONNECT only) counting the connections it relays.
async fn socks5() -> (String, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("socks5://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let c = c.clone();
            tokio::spawn(async move {
                let mut head = [0u8; 2];
                s.read_exact(&mut head).await?;
                let mut methods = vec![0u8; head[1] as usize];
                s.read_exact(&mut methods).await?;
                s.write_all(&[5, 0]).await?;
                let mut req = [0u8; 4];
                s.read_exact(&mut req).await?;
                let host = match req[3] {
                    1 => {
                        let mut ip = [0u8; 4];
                        s.read_exact(&mut ip).await?;
                        std::net::Ipv4Addr::from(ip).to_string()
                    }
                    3 => {
                        let n = s.read_u8().await? as usize;
                        let mut name = vec![0u8; n];
                        s.read_exact(&mut name).await?;
                        String::from_utf8_lossy(&name).into_owned()
                    }
                    _ => return Ok::<_, std::io::Error>(()),
                };
                let port = s.read_u16().await?;
                let mut upstream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
                s.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
                c.fetch_add(1, Ordering::SeqCst);
                tokio::io::copy_bidirectional(&mut s, &mut upstream).await?;
                Ok(())
            });
        }
    });
    (url, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socks5_proxy_carries_the_crawl() {
    let site = Adhoc::start(
        Router::new()
            .route(
                "/",
                get(|| async { Html("<a href=/a>a</a><a href=/b>b</a>") }),
            )
            .route("/a", get(|| async { Html("a") }))
            .route("/b", get(|| async { Html("b") })),
    )
    .await;
    let (proxy, relayed) = socks5().await;
    let dir = tempfile::tempdir().unwrap();
    let s = tokio::time::timeout(
        Duration::from_secs(60),
        Crawler::builder()
            .db(dir.path().join("socks.db"))
            .seed(format!("{}/", site.base))
            .ignore_robots(true)
            .sitemaps(false)
            .proxies(vec![proxy])
            .build()
            .unwrap()
            .run(std::future::pending()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!((s.run.pages, s.run.failed), (3, 0));
    assert!(
        relayed.load(Ordering::SeqCst) >= 1,
        "traffic went through SOCKS5"
    );
    assert_eq!(site.all().len(), 3);
}
