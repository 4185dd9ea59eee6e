//! Page events: one per fetched URL, in completion order, never lost however slow the
//! consumer, with outlinks and (on request) bodies; in both stores.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::backend::{both_stores, Backend};
use support::{SiteServer, SiteSpec};
use trawl::LinkKind;

async fn every_page_arrives_once_even_to_a_slow_consumer(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    let expected = server.expected();
    let mut crawler = store
        .build(
            store
                .builder("ev")
                .seed(format!("{}/", server.base()))
                .concurrency(4),
        )
        .await
        .unwrap();
    // Capacity 1 and a consumer slower than the crawl: the workers must wait for it.
    let events = crawler.subscribe(1, true);
    let crawl = tokio::spawn(crawler.run(std::future::pending()));
    let mut seen = BTreeMap::new();
    while let Some(page) = events.next().await {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let prev = seen.insert(page.url.to_string(), page);
        assert!(prev.is_none(), "an event per URL");
    }
    let summary = crawl.await.unwrap().unwrap();
    assert_eq!(summary.outcome, trawl::Outcome::Finished);
    assert_eq!(seen.len(), expected.fetched.len());
    let base = server.base();
    let home = &seen[&format!("{base}/")];
    assert_eq!(home.result.status, Some(200));
    assert_eq!(
        home.outlinks.len(),
        expected.out_degree(&format!("{base}/"))
    );
    let body = home.body.as_ref().expect("bodies were asked for");
    let text = std::str::from_utf8(body).unwrap();
    assert!(text.contains("href=") && text.contains("/p/0"), "{text}");
    assert!(home.headers.contains_key("content-type"));
    let hop = &seen[&format!("{base}/r/3")];
    assert_eq!(hop.result.status, Some(301));
    assert_eq!(hop.outlinks.len(), 1);
    assert_eq!(hop.outlinks[0].kind, LinkKind::Redirect);
    assert_eq!(hop.outlinks[0].url.path(), "/r/2");
}

both_stores!(every_page_arrives_once_even_to_a_slow_consumer);
