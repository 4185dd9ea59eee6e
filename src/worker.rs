//! A worker: one page at a time, fetch, extract while the body streams in, admit the
//! links, and hand the result to the store writer.
//!
//! Whatever happens to a page (an HTTP error, a network error, a body over the cap, a
//! panic in trawl or in the user's page hook), the worker records a result for it and
//! frees its host slot, and the page's drain guard is dropped: nothing can leave the crawl
//! waiting for a page that will never finish.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::admit::Gate;
use crate::events::{EventSink, Page};
use crate::frontier::{Frontier, HostSlot, QueuedUrl};
use crate::page::{fail, Extras, Outcome, Reader};
use crate::stats::Stats;
use crate::store::{now_ms, PageRecord, WriterHandle};

/// Wait for a worker pool to finish what it holds once its channel is closed. After a
/// stop (`cancel`), fetches get `grace` to finish; then the rest are abandoned, and
/// `abandoned` says what becomes of them.
pub async fn join_pool(
    workers: &mut tokio::task::JoinSet<()>,
    cancel: &CancellationToken,
    grace: std::time::Duration,
    abandoned: &str,
) {
    let grace = tokio::time::sleep(grace);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            next = workers.join_next() => match next {
                None => break,
                Some(Err(e)) if e.is_panic() => tracing::error!("worker task panicked: {e}"),
                Some(_) => {}
            },
            _ = &mut grace, if cancel.is_cancelled() => {
                tracing::warn!(left = workers.len(), "grace period over: abandoning fetches under way ({abandoned})");
                workers.abort_all();
                while workers.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// What a page hook sees: one fetched URL and its result.
#[derive(Debug)]
pub struct PageEvent<'a> {
    /// The URL fetched.
    pub url: &'a url::Url,
    /// Its click depth.
    pub depth: u32,
    /// What will be stored for it.
    pub record: &'a PageRecord,
}

/// Called for every fetched URL, from the worker that fetched it.
pub type PageHook = Arc<dyn Fn(&PageEvent<'_>) + Send + Sync>;

/// The event for a finished page.
fn page_event(item: &QueuedUrl, rec: &PageRecord, extras: Extras) -> Page {
    Page {
        url: item.url.clone(),
        depth: rec.depth,
        status: rec.status,
        headers: extras.headers,
        content_type: rec.content_type.clone(),
        size: rec.size,
        truncated: rec.truncated,
        title: rec.title.clone(),
        fetch_ms: rec.fetch_ms,
        attempts: rec.attempts,
        error_kind: rec.error_kind,
        error: rec.error.clone(),
        outlinks: extras.outlinks,
        body: extras.body.map(|b| b.freeze()),
    }
}

/// Everything a worker shares with the others.
pub struct Worker {
    /// Fetches and reads pages.
    pub reader: Reader,
    /// Admission of discovered URLs.
    pub gate: Arc<Gate>,
    /// Per-host slots.
    pub frontier: Arc<Frontier>,
    /// Where results go.
    pub writer: WriterHandle,
    /// Run counters.
    pub stats: Arc<Stats>,
    /// Set when the crawl stops.
    pub cancel: CancellationToken,
    /// The user's page hook.
    pub hook: Option<PageHook>,
    /// Where page events go, if anyone subscribed.
    pub events: Option<EventSink>,
}

/// One attempt at a URL: a result to store, or another try later.
enum Attempt {
    Done(Box<(PageRecord, Extras)>),
    Retry(Instant),
}

impl Worker {
    /// Take pages from `rx` until it closes.
    pub async fn run(self: Arc<Self>, rx: async_channel::Receiver<QueuedUrl>) {
        while let Ok(mut item) = rx.recv().await {
            let _slot = HostSlot {
                frontier: &self.frontier,
                host: item.host,
            };
            if self.cancel.is_cancelled() {
                // Stays queued in the store; fetched on resume.
                continue;
            }
            let (record, extras) = match AssertUnwindSafe(self.page(&item)).catch_unwind().await {
                Ok(Attempt::Done(done)) => *done,
                Ok(Attempt::Retry(at)) => {
                    self.stats.record_retry();
                    // Keeps its drain guard while it waits.
                    item.attempts += 1;
                    self.frontier.retry_at(item, at);
                    continue;
                }
                Err(panic) => (
                    PageRecord {
                        id: item.id,
                        depth: item.depth,
                        failed: true,
                        fetched_at: now_ms(),
                        attempts: item.attempts + 1,
                        error_kind: Some("panic"),
                        error: Some(panic_message(&panic)),
                        ..PageRecord::default()
                    },
                    Extras::default(),
                ),
            };
            crate::failpoint::hit(crate::failpoint::Point::AfterFetch);
            self.stats.record(&record);
            let event = self
                .events
                .as_ref()
                .map(|_| page_event(&item, &record, extras));
            if self.writer.page(record).await.is_err() {
                // The store stopped on an error; the crawl reports it.
                self.cancel.cancel();
            }
            if let (Some(sink), Some(event)) = (&self.events, event) {
                // Waits while the consumer is behind: backpressure, never loss.
                sink.send(event).await;
            }
            // `item` (its drain guard) drops only now, after its result is queued.
            drop(item);
        }
    }

    async fn page(&self, item: &QueuedUrl) -> Attempt {
        let depth = self.gate.current_depth(&item.url, item.depth);
        self.frontier.started(item.host);
        let read = self.reader.read(&item.url, depth, item.attempts).await;
        if let Some(at) = read.pause {
            self.frontier.pause(item.host, at);
            self.stats.record_pause();
        }
        let mut found = match read.outcome {
            Outcome::Retry(at) => return Attempt::Retry(at),
            Outcome::Done(found) => *found,
        };
        let rec = &mut found.rec;
        rec.id = item.id;
        if let Some(target) = found.redirect.take() {
            let shown = target.to_string();
            let (edge, followed) = self.gate.admit_redirect(item, rec.depth, target);
            rec.edges.push(edge);
            if let Err(e) = followed {
                let msg = match e {
                    crate::admit::RedirectError::Loop => {
                        format!("redirect loop back to {shown}")
                    }
                    crate::admit::RedirectError::TooMany => {
                        format!("more than {} redirects", item.chain.len())
                    }
                };
                fail(rec, e.kind(), msg);
            }
        } else if !found.links.is_empty() {
            let links = std::mem::take(&mut found.links);
            rec.edges = self
                .gate
                .admit_links(item.id, rec.depth, links, found.follow);
        }
        if let Some(hook) = &self.hook {
            hook(&PageEvent {
                url: &item.url,
                depth: rec.depth,
                record: rec,
            });
        }
        Attempt::Done(Box::new((found.rec, found.extras)))
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("panicked: {msg}")
}
