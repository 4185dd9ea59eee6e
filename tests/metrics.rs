//! The Prometheus endpoint, scraped during a real crawl of a local site.

use crate::support;

use std::time::Duration;

use support::{SiteServer, SiteSpec};
use trawl::Crawler;

fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_while_crawling() {
    let spec = SiteSpec {
        latency: Duration::from_millis(40),
        ..SiteSpec::small()
    };
    let server = SiteServer::start(support::Site::generate(&spec)).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let crawl = Crawler::builder()
        .db(dir.path().join("m.db"))
        .seed(format!("{}/", server.base()))
        .concurrency(2)
        .metrics_addr(addr.clone())
        .build()
        .unwrap()
        .run(std::future::pending());
    let crawl = tokio::spawn(crawl);
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/metrics");
    let mut scraped = None;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(r) = client.get(&url).send().await {
            let text = r.text().await.unwrap();
            if value(&text, "trawl_pages_total{class=\"2xx\"}") >= 5.0 {
                scraped = Some(text);
                break;
            }
        }
    }
    let text = scraped.expect("metrics show progress during the crawl");
    assert!(value(&text, "trawl_fetch_duration_seconds_count") >= 5.0);
    assert!(value(&text, "trawl_fetch_duration_seconds_bucket{le=\"+Inf\"}") >= 5.0);
    assert!(value(&text, "trawl_bytes_total") > 0.0);
    assert!(text.contains("# TYPE trawl_fetching gauge"));
    assert!(text.contains("# TYPE trawl_waiting gauge"));
    // A small crawl: the visited set is in memory, none of it on disk.
    assert!(value(&text, "trawl_visited_memory_bytes") > 0.0);
    assert_eq!(value(&text, "trawl_visited_disk"), 0.0);
    let summary = crawl.await.unwrap().unwrap();
    assert_eq!(summary.outcome, trawl::Outcome::Finished);
    // The endpoint lives as long as the crawl.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(client.get(&url).send().await.is_err());
}

/// With two workers on a slow site, "fetching" never passes two and reaches it, and the
/// URLs taken for the workers beyond them show as "waiting", not as fetches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetching_and_waiting_are_counted_apart() {
    let spec = SiteSpec {
        latency: Duration::from_millis(60),
        ..SiteSpec::small()
    };
    let server = SiteServer::start(support::Site::generate(&spec)).await;
    let dir = tempfile::tempdir().unwrap();
    let crawler = Crawler::builder()
        .db(dir.path().join("f.db"))
        .seed(format!("{}/", server.base()))
        .concurrency(2)
        .per_host(4)
        .build()
        .unwrap();
    let progress = crawler.progress();
    let crawl = tokio::spawn(crawler.run(std::future::pending()));
    let (mut most_fetching, mut most_waiting) = (0, 0);
    while !crawl.is_finished() {
        let s = progress.snapshot();
        assert!(s.fetching <= 2, "{s:?}");
        assert!(
            s.fetching + s.waiting <= s.frontier.in_flight as u64 + 2,
            "{s:?}"
        );
        most_fetching = most_fetching.max(s.fetching);
        most_waiting = most_waiting.max(s.waiting);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        crawl.await.unwrap().unwrap().outcome,
        trawl::Outcome::Finished
    );
    assert_eq!(most_fetching, 2);
    assert!(most_waiting >= 1, "nothing ever waited for a worker");
    let end = progress.snapshot();
    assert_eq!((end.fetching, end.waiting), (0, 0), "{end:?}");
}
