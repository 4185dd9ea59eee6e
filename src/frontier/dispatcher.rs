//! The dispatcher: the only sender into the bounded channel the workers receive from.
//!
//! Workers never send into that channel (they push discovered URLs into the frontier,
//! which never blocks), so however many links a page has, a full channel cannot deadlock
//! the crawl. The dispatcher waits on one `Notify` for anything that may make a URL
//! dispatchable (a push, a released slot, a refill) or end the crawl (the drain counter
//! at zero), and re-checks everything each time it wakes, so a missed wake-up is
//! impossible: `Notify` keeps one permit for a wake that comes while it is busy.

use std::sync::Arc;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use std::time::Instant;

use super::prepare::Preparer;
use super::{Frontier, Pop, QueuedUrl, REFILL_BATCH};
use crate::drain::Drain;
use crate::store::{Pending, StoreError, WriterHandle};
use crate::url_norm::SkipReason;

/// What the dispatcher needs.
pub struct Dispatcher {
    /// The queues.
    pub frontier: Arc<Frontier>,
    /// Ends the crawl at zero.
    pub drain: Arc<Drain>,
    /// Reads spilled URLs back.
    pub writer: WriterHandle,
    /// Wakes the dispatcher.
    pub wake: Arc<Notify>,
    /// Stops dispatching.
    pub cancel: CancellationToken,
    /// Reads robots.txt and sitemaps.
    pub preparer: Preparer,
    /// Where URLs skipped at dispatch are recorded.
    pub pending: Arc<Pending>,
}

impl Dispatcher {
    /// Feed `tx` until the frontier drains or the crawl is cancelled. Returns an error
    /// only when the store failed while reading queued URLs back.
    pub async fn run(self, tx: async_channel::Sender<QueuedUrl>) -> Result<(), StoreError> {
        // Host preparations end with the dispatcher (dropping the set aborts them): after a
        // stop, nothing of theirs is needed.
        let mut prep_tasks = tokio::task::JoinSet::new();
        let (refill_err_tx, mut refill_err) = tokio::sync::mpsc::unbounded_channel();
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Ok(e) = refill_err.try_recv() {
                return Err(e);
            }
            if self.cancel.is_cancelled() || self.drain.count() == 0 {
                return Ok(());
            }
            while prep_tasks.try_join_next().is_some() {}
            for host in self.frontier.take_refill_requests() {
                let writer = self.writer.clone();
                let frontier = self.frontier.clone();
                let drain = self.drain.clone();
                let errs = refill_err_tx.clone();
                tokio::spawn(async move {
                    match writer.refill(host, REFILL_BATCH).await {
                        Ok(rows) => {
                            let consumed = rows.len();
                            let items = rows
                                .into_iter()
                                .filter_map(|r| {
                                    // Adopt first: a row that no longer parses still
                                    // releases its count.
                                    let guard = drain.adopt();
                                    Some(QueuedUrl {
                                        id: r.id,
                                        url: url::Url::parse(&r.url).ok()?,
                                        depth: r.depth,
                                        host,
                                        chain: Vec::new(),
                                        attempts: 0,
                                        guard,
                                    })
                                })
                                .collect();
                            frontier.refilled(host, items, consumed);
                        }
                        Err(e) => {
                            let _ = errs.send(e);
                        }
                    }
                });
            }
            let until = match self.frontier.pop(Instant::now()) {
                Pop::Fetch(item) => {
                    tokio::select! {
                        sent = tx.send(item) => if sent.is_err() { return Ok(()) },
                        _ = self.cancel.cancelled() => return Ok(()),
                    }
                    continue;
                }
                Pop::Robots { host, url } => {
                    let guard = self.drain.admit();
                    prep_tasks.spawn(self.preparer.clone().prepare(host, url, guard));
                    continue;
                }
                Pop::Disallowed(item) => {
                    // Recorded as skipped; dropping the item releases its count.
                    self.pending.push_skip(item.id, SkipReason::Robots);
                    continue;
                }
                Pop::Wait(until) => until,
            };
            // Sleep until something is due, or something changes.
            let sleep = async {
                match until {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = notified => {}
                _ = sleep => {}
                _ = self.cancel.cancelled() => return Ok(()),
            }
        }
    }
}
