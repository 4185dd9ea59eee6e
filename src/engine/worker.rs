//! A worker: one page at a time, fetch it, extract while the body streams in, plan its
//! links or redirect, and complete it in the store.
//!
//! Whatever happens to a page (an HTTP error, a network error, a body over the cap, a
//! panic in trawl or in the user's page hook), the worker completes it with a result, and
//! the store frees its host slot: nothing can leave the crawl waiting for a page that will
//! never finish.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::admit::{plan_redirect, Outlinks, Rules};
use crate::events::{EventSink, Page};
use crate::live::HostBoard;
use crate::page::{Ask, Outcome, Reader};
use crate::result::{ErrorKind, PageResult};
use crate::stats::Stats;
use crate::store::{Job, Store};
use crate::Error;

/// Called for every fetched URL, from the worker that fetched it. A panic in it is
/// recorded as the page's error.
pub type PageHook = Arc<dyn Fn(&Page) + Send + Sync>;

/// Wait for a worker pool to finish what it holds once its channel is closed. After a
/// stop (`cancel`), fetches get `grace` to finish; then the rest are abandoned (they stay
/// to be fetched later: on resume, or by another process).
pub async fn join_pool(
    workers: &mut tokio::task::JoinSet<()>,
    cancel: &CancellationToken,
    grace: std::time::Duration,
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
                tracing::warn!(left = workers.len(), "grace period over: abandoning fetches under way (they are fetched again later)");
                workers.abort_all();
                while workers.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// The first error that stopped the crawl, kept for the run's result.
#[derive(Default)]
pub struct Failure(Mutex<Option<Error>>);

impl Failure {
    /// Keep `e` unless an earlier error is kept, and stop the crawl.
    pub fn set(&self, e: Error, cancel: &CancellationToken) {
        if e.is_unreachable() {
            // The store stayed away until the crawl was stopped: nothing is lost, the
            // page is fetched again (by another process, or on resume).
            tracing::warn!("could not record a page: {e}");
            return;
        }
        tracing::error!("the crawl stops: {e}");
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        cancel.cancel();
    }

    /// The error kept, if any.
    pub fn take(&self) -> Option<Error> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Everything a worker shares with the others.
pub struct Worker<S: Store> {
    /// Fetches and reads pages.
    pub reader: Reader,
    /// Where results go.
    pub store: Arc<S>,
    /// Canonical keys, for redirect planning.
    pub rules: Arc<Rules>,
    /// Run counters.
    pub stats: Arc<Stats>,
    /// Set when the crawl stops.
    pub cancel: CancellationToken,
    /// The user's page hook.
    pub hook: Option<PageHook>,
    /// Where page events go, if anyone subscribed.
    pub events: Option<EventSink>,
    /// The error that stopped the crawl.
    pub failure: Arc<Failure>,
    /// The live page's hosts, when the run serves its page.
    pub board: Option<Arc<HostBoard<S::Host>>>,
}

/// One attempt at a URL: a result to store, or another try later.
enum Attempt {
    Done(Box<Done>),
    Retry(Instant),
}

/// A finished page: its result, what it links to, and its event (when anyone listens).
struct Done {
    result: PageResult,
    links: Outlinks,
    page: Option<Page>,
}

impl<S: Store> Worker<S>
where
    Error: From<S::Error>,
{
    /// Take pages from `rx` until it closes.
    pub async fn run(self: Arc<Self>, rx: async_channel::Receiver<Job<S>>) {
        while let Ok(job) = rx.recv().await {
            if self.cancel.is_cancelled() {
                // Dropped unfetched: fetched later, on resume or by another process.
                continue;
            }
            if let Err(e) = self.page(job).await {
                self.failure.set(e, &self.cancel);
            }
        }
    }

    async fn page(&self, job: Job<S>) -> Result<(), Error> {
        let _fetching = self.stats.start_fetching();
        let done = match AssertUnwindSafe(self.attempt(&job)).catch_unwind().await {
            Ok(Ok(Attempt::Done(done))) => *done,
            Ok(Ok(Attempt::Retry(at))) => {
                self.stats.record_retry();
                return Ok(self.store.retry(job, at).await?);
            }
            Ok(Err(e)) => return Err(e),
            Err(panic) => self.panicked(&job, panic_message(&panic)),
        };
        crate::failpoint::hit(crate::failpoint::Point::AfterFetch);
        self.stats.record(&job.url, &done.result, done.links.len());
        if let Some(board) = &self.board {
            board.record(&job.host, &job.url, &done.result);
        }
        let event = done.page.filter(|_| self.events.is_some());
        self.store.complete(job, done.result, done.links).await?;
        if let (Some(sink), Some(event)) = (&self.events, event) {
            // Waits while the consumer is behind: backpressure, never loss.
            sink.send(event).await;
        }
        Ok(())
    }

    async fn attempt(&self, job: &Job<S>) -> Result<Attempt, Error> {
        let mut key = String::new();
        let own = self.rules.hash_of(&job.url, &mut key);
        let depth = self.store.depth_now(job, own);
        let ask = if self.rules.checks(&job.url, &key) {
            Ask::Check
        } else {
            Ask::Crawl
        };
        if let Some(at) = self.store.started(&job.host).await? {
            tokio::time::sleep_until(at.into()).await;
        }
        let validators = job.validators.as_deref();
        let read = self
            .reader
            .read(&job.url, depth, job.attempts, ask, validators)
            .await;
        if let Some(at) = read.pause {
            self.store.pause(&job.host, at).await?;
            self.stats.record_pause();
        }
        let mut found = match read.outcome {
            Outcome::Retry(at) => return Ok(Attempt::Retry(at)),
            Outcome::Done(found) => *found,
        };
        let links = if let Some(target) = found.redirect.take() {
            let (target, error) = plan_redirect(&self.rules, own, &job.chain, depth, target);
            if let Some((kind, message)) = error {
                found.rec.fail(kind, message);
            }
            Outlinks::Redirect(target)
        } else if found.links.is_empty() {
            Outlinks::None
        } else {
            Outlinks::Links {
                depth: found.rec.depth,
                follow: found.follow,
                links: std::mem::take(&mut found.links),
            }
        };
        let page = (self.hook.is_some() || self.events.is_some())
            .then(|| Page::new(job.url.clone(), found.rec.clone(), found.extras));
        if let (Some(hook), Some(page)) = (&self.hook, &page) {
            hook(page);
        }
        Ok(Attempt::Done(Box::new(Done {
            result: found.rec,
            links,
            page,
        })))
    }

    /// The result of a page whose handling panicked (in trawl or in the page hook).
    fn panicked(&self, job: &Job<S>, message: String) -> Done {
        let result = PageResult::failure(job.depth, job.attempts + 1, ErrorKind::Panic, message);
        let page = self
            .events
            .as_ref()
            .map(|_| Page::new(job.url.clone(), result.clone(), Default::default()));
        Done {
            result,
            links: Outlinks::None,
            page,
        }
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
