//! Page events: every fetched URL, delivered to the library user as it finishes, in a
//! bounded channel. Workers wait when the channel is full, so a slow consumer slows the
//! crawl instead of losing events; dropping the receiver just stops the events.
//!
//! ```no_run
//! # async fn demo() -> Result<(), trawl::Error> {
//! let mut crawler = trawl::Crawler::builder()
//!     .db("site.db")
//!     .seed("https://example.org/")
//!     .build()?;
//! let events = crawler.subscribe(64, false);
//! let crawl = tokio::spawn(crawler.run(std::future::pending()));
//! while let Some(page) = events.next().await {
//!     println!("{} {:?} {} links", page.url, page.result.status, page.outlinks.len());
//! }
//! crawl.await.expect("crawl task")?;
//! # Ok(()) }
//! ```

use bytes::Bytes;
use reqwest::header::HeaderMap;
use url::Url;

pub use crate::link::Outlink;
use crate::page::Extras;
use crate::result::PageResult;

/// One fetched URL and what came of it: what page events deliver and page hooks see.
#[derive(Debug, Clone)]
pub struct Page {
    /// The URL fetched.
    pub url: Url,
    /// What came of it, as stored.
    pub result: PageResult,
    /// Response headers (empty without a response).
    pub headers: HeaderMap,
    /// Links found in the page, in document order (or the redirect target).
    pub outlinks: Vec<Outlink>,
    /// The (decoded, capped) body, when events were asked for with bodies.
    pub body: Option<Bytes>,
}

impl Page {
    /// The page fetched at `url`, with what was gathered beyond its result.
    pub(crate) fn new(url: Url, result: PageResult, extras: Extras) -> Page {
        Page {
            url,
            result,
            headers: extras.headers,
            outlinks: extras.outlinks,
            body: extras.body.map(|b| b.freeze()),
        }
    }
}

/// The receiving end: pages as they finish.
#[derive(Debug, Clone)]
pub struct Events {
    rx: async_channel::Receiver<Page>,
}

impl Events {
    /// The next page, or `None` once the crawl has ended.
    pub async fn next(&self) -> Option<Page> {
        self.rx.recv().await.ok()
    }

    /// The pages as a `Stream`.
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Page> {
        self.rx
    }
}

/// The sending end, held by the workers.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: async_channel::Sender<Page>,
    /// Keep page bodies for the events.
    pub bodies: bool,
}

impl EventSink {
    /// Deliver a page, waiting while the consumer is behind. A gone consumer is ignored.
    pub async fn send(&self, page: Page) {
        let _ = self.tx.send(page).await;
    }
}

/// A channel of `capacity` pages; `bodies` to include page bodies.
pub fn channel(capacity: usize, bodies: bool) -> (EventSink, Events) {
    let (tx, rx) = async_channel::bounded(capacity.max(1));
    (EventSink { tx, bodies }, Events { rx })
}
