//! Politeness against a local server whose access log is the oracle: 429/503 pauses the
//! whole host until Retry-After, even across a restart; transient faults are retried with
//! backoff and recorded with their attempts; delays and rate limits space requests.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};
use support::limited::{assert_quiet_after_429, hub, limited_site};
use trawl::Outcome;

fn row(db: &std::path::Path, key: &str) -> (i64, Option<i64>, Option<i64>, Option<String>) {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT state, status, attempts, error_kind FROM urls WHERE key = ?1",
            [key],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap()
}

async fn a_429_pauses_every_worker_until_retry_after(store: Backend) {
    let (app, calls) = limited_site(30, "2");
    let server = Adhoc::start(app).await;
    let path = "429";
    let started = Instant::now();
    let s = store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .concurrency(4)
                .per_host(4),
        )
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_quiet_after_429(&server, Duration::from_secs(2));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "retried once");
    let key = format!("{}/limited", server.base);
    let db = store.db(path).await;
    assert_eq!(row(&db, &key), (1, Some(200), Some(2), None));
    let paused: Option<i64> = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT paused_until FROM hosts LIMIT 1", [], |r| r.get(0))
        .unwrap();
    assert!(paused.is_some(), "the pause is stored");
}

async fn a_pause_survives_a_restart(store: Backend) {
    let (app, _calls) = limited_site(30, "3");
    let server = Adhoc::start(app).await;
    let path = "restart";
    // Stop the first run as soon as the 429 has been answered.
    let log = server.log.clone();
    let stop = async move {
        loop {
            if log.lock().unwrap().iter().any(|h| h.path == "/limited") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let b = store
        .builder(path)
        .seed(format!("{}/", server.base))
        .ignore_robots(true)
        .concurrency(2)
        .per_host(2)
        .grace_period(Duration::from_millis(200));
    let s = store.build(b).await.unwrap().run(stop).await.unwrap();
    assert_eq!(s.outcome, Outcome::Interrupted);
    assert!(!s.resumed, "the first run started the crawl");
    let s = store.crawl(store.builder(path)).await;
    assert_eq!(s.outcome, Outcome::Finished);
    assert!(s.resumed, "the second run continued it");
    assert_quiet_after_429(&server, Duration::from_secs(3));
}

async fn transient_faults_are_retried_then_recorded(store: Backend) {
    let flaky = Arc::new(AtomicUsize::new(0));
    let f = flaky.clone();
    let app = Router::new()
        .route(
            "/",
            get(|| async { Html("<a href=/down>d</a><a href=/flaky>f</a><a href=/404>n</a>") }),
        )
        .route(
            "/down",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "down") }),
        )
        .route(
            "/flaky",
            get(move || {
                let f = f.clone();
                async move {
                    if f.fetch_add(1, Ordering::SeqCst) < 2 {
                        (StatusCode::BAD_GATEWAY, "oops").into_response()
                    } else {
                        Html("fine").into_response()
                    }
                }
            }),
        );
    let server = Adhoc::start(app).await;
    let path = "retry";
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .max_attempts(3)
                .retry_backoff(Duration::from_millis(20)),
        )
        .await;
    let b = &server.base;
    assert_eq!(server.hits("/down").len(), 3);
    assert_eq!(
        row(&store.db(path).await, &format!("{b}/down")),
        (1, Some(503), Some(3), None)
    );
    assert_eq!(server.hits("/flaky").len(), 3);
    assert_eq!(
        row(&store.db(path).await, &format!("{b}/flaky")),
        (1, Some(200), Some(3), None)
    );
    assert_eq!(server.hits("/404").len(), 1, "a 404 is not retried");

    // A refused connection is retried too, then recorded as failed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let path = "refused";
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("http://127.0.0.1:{port}/"))
                .ignore_robots(true)
                .max_attempts(2)
                .retry_backoff(Duration::from_millis(10)),
        )
        .await;
    let r = row(&store.db(path).await, &format!("http://127.0.0.1:{port}/"));
    assert_eq!((r.0, r.2, r.3.as_deref()), (2, Some(2), Some("connect")));
}

async fn delay_and_rate_limit_space_the_requests(store: Backend) {
    for (delay, rate, gap) in [
        (Some(Duration::from_millis(150)), None, 150),
        (None, Some("10/1s"), 100),
    ] {
        let home = hub(6);
        let app = Router::new()
            .route("/", get(move || async move { Html(home) }))
            .route("/p/{i}", get(|| async { Html("p") }));
        let server = Adhoc::start(app).await;
        let mut b = store
            .builder(&format!("d{gap}"))
            .seed(format!("{}/", server.base))
            .ignore_robots(true)
            .concurrency(8)
            .per_host(8);
        if let Some(d) = delay {
            b = b.delay(d);
        }
        if let Some(r) = rate {
            b = b.rate_limit(r.parse().unwrap());
        }
        store.crawl(b).await;
        let hits = server.all();
        let times: Vec<_> = hits.iter().map(|h| h.at).collect();
        // On failure, which requests came too close, and when each came.
        let trace: Vec<_> = hits.iter().map(|h| (&h.path, h.at - times[0])).collect();
        assert_eq!(times.len(), 8, "/sitemap.xml, / and six pages");
        for w in times.windows(2) {
            let d = w[1] - w[0];
            assert!(
                d >= Duration::from_millis(gap - 20),
                "requests {d:?} apart, want at least {gap} ms: {trace:?}"
            );
        }
    }
}

fn robots_site(robots: &'static str, robots_status: StatusCode) -> Router {
    Router::new()
        .route(
            "/robots.txt",
            get(move || async move { (robots_status, robots) }),
        )
        .route(
            "/",
            get(|| async { Html("<a href=/a>a</a><a href=/private/x>p</a><a href=/b>b</a>") }),
        )
        .route("/a", get(|| async { Html("a") }))
        .route("/b", get(|| async { Html("b") }))
        .route("/private/x", get(|| async { Html("secret") }))
}

fn skip_reason(db: &std::path::Path, key: &str) -> Option<String> {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("SELECT skip_reason FROM urls WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .unwrap()
}

async fn robots_txt_rules_and_crawl_delay_are_obeyed(store: Backend) {
    let server = Adhoc::start(robots_site(
        "User-agent: *\nDisallow: /private\nCrawl-delay: 0.2\n",
        StatusCode::OK,
    ))
    .await;
    let path = "robots";
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .concurrency(4),
        )
        .await;
    assert!(
        server.hits("/private/x").is_empty(),
        "disallowed, never fetched"
    );
    assert_eq!(
        skip_reason(&store.db(path).await, &format!("{}/private/x", server.base)).as_deref(),
        Some("robots")
    );
    assert_eq!(server.hits("/robots.txt").len(), 1, "read once per host");
    let pages: Vec<_> = server
        .all()
        .into_iter()
        .filter(|h| h.path != "/robots.txt")
        .map(|h| h.at)
        .collect();
    assert_eq!(pages.len(), 4, "/sitemap.xml and three pages");
    for w in pages.windows(2) {
        assert!(
            w[1] - w[0] >= Duration::from_millis(190),
            "Crawl-delay honoured"
        );
    }

    // The agent's own group wins over `*`, matched by product token.
    let server = Adhoc::start(robots_site(
        "User-agent: Trawl\nDisallow: /b\n\nUser-agent: *\nDisallow: /\n",
        StatusCode::OK,
    ))
    .await;
    let path = "group";
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .user_agent("Trawl/9.9 (+test)".to_string()),
        )
        .await;
    assert_eq!(server.hits("/a").len(), 1);
    assert!(server.hits("/b").is_empty());

    // --ignore-robots: everything, and robots.txt is not even read.
    let path = "ignore";
    let server = Adhoc::start(robots_site("User-agent: *\nDisallow: /\n", StatusCode::OK)).await;
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true),
        )
        .await;
    assert_eq!(server.hits("/private/x").len(), 1);
    assert!(server.hits("/robots.txt").is_empty());
}

async fn robots_txt_4xx_allows_and_5xx_disallows(store: Backend) {
    let server = Adhoc::start(robots_site("gone", StatusCode::NOT_FOUND)).await;
    let path = "404";
    store
        .crawl(store.builder(path).seed(format!("{}/", server.base)))
        .await;
    assert_eq!(server.hits("/private/x").len(), 1, "4xx: no rules");

    let server = Adhoc::start(robots_site("oops", StatusCode::INTERNAL_SERVER_ERROR)).await;
    let path = "500";
    let s = store
        .crawl(store.builder(path).seed(format!("{}/", server.base)))
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    assert_eq!(
        server.hits("/robots.txt").len(),
        3,
        "tried again before giving up"
    );
    assert!(server.hits("/").is_empty(), "nothing fetched without rules");
    assert_eq!(
        skip_reason(&store.db(path).await, &format!("{}/", server.base)).as_deref(),
        Some("robots")
    );
}

async fn identity_headers_and_cookies(store: Backend) {
    use axum::http::HeaderMap;
    let seen: Arc<std::sync::Mutex<Vec<(String, String, String)>>> = Arc::default();
    let s2 = seen.clone();
    let app = Router::new()
        .route(
            "/",
            get(|| async {
                (
                    [(header::SET_COOKIE, "visit=42; Path=/")],
                    Html("<a href=/check>c</a>"),
                )
            }),
        )
        .route(
            "/check",
            get(move |h: HeaderMap| {
                let s2 = s2.clone();
                async move {
                    let get = |n: &str| {
                        h.get(n)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string()
                    };
                    s2.lock()
                        .unwrap()
                        .push((get("user-agent"), get("cookie"), get("x-team")));
                    Html("ok")
                }
            }),
        );
    let server = Adhoc::start(app).await;
    store
        .crawl(
            store
                .builder("id")
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .headers(vec!["X-Team: crawl-ops".into()]),
        )
        .await;
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    let (ua, cookie, team) = &got[0];
    assert!(ua.starts_with("trawl/"), "{ua}");
    assert_eq!(cookie, "visit=42");
    assert_eq!(team, "crawl-ops");
}

async fn pages_only_in_sitemaps_are_found(store: Backend) {
    let app = support::sitemapped::site();
    let server = Adhoc::start(app).await;
    let path = "sm";
    let s = store
        .crawl(store.builder(path).seed(format!("{}/", server.base)))
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    for p in [
        "/orphan",
        "/orphan2",
        "/p",
        "/maps/index.xml",
        "/maps/a.xml",
    ] {
        assert_eq!(server.hits(p).len(), 1, "{p}");
    }
    assert!(
        server.hits("/sitemap.xml").is_empty(),
        "robots.txt named the sitemaps"
    );
    let conn = rusqlite::Connection::open(store.db(path).await).unwrap();
    let sitemap_edges: i64 = conn
        .query_row("SELECT count(*) FROM edges WHERE kind = 7", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(
        sitemap_edges,
        2 + 2 + 1,
        "index->2 maps, a->2 pages, b->1 page"
    );
    let docs: i64 = conn
        .query_row(
            "SELECT count(*) FROM urls WHERE skip_reason = 'sitemap' AND state = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(docs, 3);

    // Without Sitemap lines, /sitemap.xml is tried; resuming reads nothing again.
    let app = Router::new()
        .route(
            "/sitemap.xml",
            get(|| async { "<urlset><url><loc>/hidden</loc></url></urlset>" }),
        )
        .route("/", get(|| async { Html("home") }))
        .route("/hidden", get(|| async { Html("h") }));
    let server = Adhoc::start(app).await;
    let path = "probe";
    store
        .crawl(store.builder(path).seed(format!("{}/", server.base)))
        .await;
    assert_eq!(server.hits("/hidden").len(), 1);
    assert_eq!(server.hits("/sitemap.xml").len(), 1);
}

both_stores!(
    a_429_pauses_every_worker_until_retry_after,
    a_pause_survives_a_restart,
    transient_faults_are_retried_then_recorded,
    delay_and_rate_limit_space_the_requests,
    robots_txt_rules_and_crawl_delay_are_obeyed,
    robots_txt_4xx_allows_and_5xx_disallows,
    identity_headers_and_cookies,
    pages_only_in_sitemaps_are_found
);
