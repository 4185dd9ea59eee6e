//! Checks the test site and server themselves, so crawl tests can trust them as an oracle.

use crate::support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use support::{Site, SiteServer, SiteSpec, NEVER_FETCHED};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn target_of(url: &str) -> String {
    let url = url::Url::parse(url).unwrap();
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_what_expected_says() {
    let server = SiteServer::start(Site::generate(&SiteSpec::small())).await;
    let base = server.base();
    let expected = server.expected();
    let client = client();

    for (url, page) in &expected.fetched {
        let resp = client.get(url).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), page.status, "status of {url}");
        let ct = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert_eq!(ct, page.content_type, "content type of {url}");
        if (300..400).contains(&page.status) {
            assert!(resp.headers().contains_key(reqwest::header::LOCATION));
        }
        resp.bytes().await.unwrap();
    }

    // The log saw exactly our requests, each once.
    let counts = server.hit_counts();
    assert_eq!(server.hits().len(), expected.fetched.len());
    for url in expected.fetched.keys() {
        assert_eq!(counts.get(&target_of(url)), Some(&1), "{url}");
    }

    // Shape of the expectation.
    let u = |p: &str| format!("{base}{p}");
    for n in 0..60 {
        assert!(
            expected.fetched.contains_key(&u(&format!("/p/{n}"))),
            "/p/{n}"
        );
    }
    for path in NEVER_FETCHED {
        assert!(!expected.fetched.contains_key(&u(path)));
        assert!(expected.edges.keys().all(|(_, to, _)| to != &u(path)));
    }
    for bad in ["/p/%33", "/p/./3", "/p/x/../3", "/p/3#top", "/p/sub/"] {
        assert!(!expected.fetched.contains_key(&u(bad)), "{bad}");
    }
    assert_eq!(expected.fetched[&u("/")].depth, 0);
    assert_eq!(expected.fetched[&u("/p/0")].depth, 1);
    assert_eq!(expected.fetched[&u("/p/3")].depth, 1);
    assert_eq!(expected.fetched[&u("/r/3")].depth, 1);
    assert_eq!(expected.fetched[&u("/r/1")].depth, 1);
    assert_eq!(
        expected.fetched[&u("/p/7")].depth,
        1,
        "redirects add no depth"
    );
    assert_eq!(expected.fetched[&u("/loop/b")].status, 301);
    assert_eq!(expected.fetched[&u("/missing")].status, 404);
    assert_eq!(expected.fetched[&u("/gone")].status, 410);
    assert_eq!(expected.fetched[&u("/r/1")].content_type, "");
    assert_eq!(
        expected.skipped,
        ["http://other.example/page?x=1", "https://external.example/"]
            .map(String::from)
            .into()
    );

    // Five spellings of /p/3 on the start page, all one canonical edge target.
    assert_eq!(expected.edge_count(&u("/"), &u("/p/3"), "a"), 5);
    assert_eq!(
        expected.edge_count(&u("/"), &u("/static/site.css"), "link"),
        1
    );
    assert_eq!(expected.edge_count(&u("/"), &u("/embed"), "iframe"), 1);
    assert_eq!(expected.edge_count(&u("/"), &u("/p/5"), "area"), 1);
    assert_eq!(expected.edge_count(&u("/embed"), &u("/"), "a"), 1);
    assert_eq!(expected.edge_count(&u("/p/2"), &u("/p/11"), "a"), 1);
    assert_eq!(expected.edge_count(&u("/r/3"), &u("/r/2"), "redirect"), 1);
    assert_eq!(expected.edge_count(&u("/r/2"), &u("/r/1"), "redirect"), 1);
    assert_eq!(expected.edge_count(&u("/r/1"), &u("/p/7"), "redirect"), 1);
    assert_eq!(
        expected.edge_count(&u("/loop/a"), &u("/loop/b"), "redirect"),
        1
    );
    assert_eq!(
        expected.edge_count(&u("/loop/b"), &u("/loop/a"), "redirect"),
        1
    );
    assert_eq!(expected.out_degree(&u("/files/report.pdf")), 0);
    assert_eq!(expected.out_degree(&u("/missing")), 0);
    // Start page: /p/0 + 5 spellings + 2 external + css + iframe + pdf + area + missing
    // + gone + chain + loop (mailto, javascript, comment and script give none).
    assert_eq!(expected.out_degree(&u("/")), 16);
    // A page with no extras has its random links plus "next".
    let plain = (0..59)
        .filter(|n| ![2, 8].contains(n))
        .map(|n| expected.out_degree(&u(&format!("/p/{n}"))))
        .filter(|&d| d == 6)
        .count();
    assert!(plain > 45, "{plain}");

    // Bodies mention the server itself with the real port.
    let home = client
        .get(u("/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(home.contains(&format!("HTTP://{}/p/3", server.addr())));
    assert!(home.contains("/secret-comment") && home.contains("/secret-script"));
    let p2 = client
        .get(u("/p/2"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(p2.contains("<base href=\"/p/sub/\">") && p2.contains("<title>Page 2</title>"));
    assert!(p2.len() > 2000);
    let r1 = client.get(u("/r/1")).send().await.unwrap();
    assert_eq!(r1.headers()[reqwest::header::LOCATION], u("/p/7").as_str());

    // Secret and unknown pages: served, and logged.
    server.clear_log();
    let secret = client.get(u("/secret-comment")).send().await.unwrap();
    assert_eq!(secret.status(), 200);
    let robots = client.get(u("/robots.txt")).send().await.unwrap();
    assert_eq!(robots.status(), 404);
    let other = client.get(u("/nope?a=1")).send().await.unwrap();
    assert_eq!(other.status(), 404);
    assert_eq!(
        server.hits(),
        ["/secret-comment", "/robots.txt", "/nope?a=1"]
    );
}

#[test]
fn generation_is_deterministic() {
    let spec = SiteSpec::small();
    let (a, b) = (Site::generate(&spec), Site::generate(&spec));
    let base = "http://127.0.0.1:4321";
    assert_eq!(a.expected(base), b.expected(base));
    assert_eq!(a.paths(), b.paths());
    for path in a.paths() {
        assert_eq!(a.body_template(path), b.body_template(path), "{path}");
    }

    let other = Site::generate(&SiteSpec {
        seed: 8,
        ..SiteSpec::small()
    });
    assert_ne!(a.body_template("/p/0"), other.body_template("/p/0"));
    assert_ne!(a.expected(base).edges, other.expected(base).edges);

    // Without extras: exactly the start page and the pages.
    let bare = Site::generate(&SiteSpec {
        extras: false,
        pages: 5,
        ..SiteSpec::small()
    });
    let expected = bare.expected(base);
    assert_eq!(expected.fetched.len(), 6);
    assert!(expected.skipped.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_and_concurrency() {
    let spec = SiteSpec {
        latency: Duration::from_millis(100),
        extras: false,
        pages: 10,
        ..SiteSpec::small()
    };
    let server = SiteServer::start(Site::generate(&spec)).await;
    let client = client();
    let started = Instant::now();
    let requests = (0..5).map(|n| {
        let client = client.clone();
        let url = format!("{}/p/{n}", server.base());
        tokio::spawn(async move { client.get(url).send().await.unwrap().status() })
    });
    let requests: Vec<_> = requests.collect();
    for r in requests {
        assert_eq!(r.await.unwrap(), 200);
    }
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(100), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(450), "{elapsed:?}");
    assert_eq!(server.max_concurrent(), 5);
    let hits: HashSet<String> = server.hits().into_iter().collect();
    assert_eq!(hits.len(), 5);

    server.clear_log();
    assert_eq!(server.max_concurrent(), 0);
    assert!(server.hits().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_server_stops_it() {
    let server = SiteServer::start(Site::generate(&SiteSpec::small())).await;
    let url = format!("{}/", server.base());
    assert_eq!(client().get(&url).send().await.unwrap().status(), 200);
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A fresh client: no pooled connection to reuse.
    assert!(client().get(&url).send().await.is_err());
}
