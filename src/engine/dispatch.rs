//! The dispatcher: the only sender into the bounded channel the workers receive from.
//!
//! Workers never send into that channel (what they find goes to the store, which never
//! blocks on it), so however many links a page has, a full channel cannot deadlock the
//! crawl. The dispatcher takes URLs of ready hosts from the store, holds those whose host's
//! robots.txt is being read and gives them back once its rules are known (so they are taken
//! again with the host's spacing counted from the requests made meanwhile), records those
//! robots.txt forbids (and as failed those of a host that gives no response), and sends the rest. When nothing can be taken it waits on the store (a change, a time
//! coming due) or a preparation ending, and looks again: so a missed wake-up costs at most
//! one wait, never the crawl.
//!
//! It is never dropped in the middle of a store call (a Redis take whose reply was never
//! read would leave leases nobody knows to give back): it sees a stop between steps.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::admit::{Outlinks, Rules, SkipReason};
use crate::live::HostBoard;
use crate::politeness::hosts::{HostRules, Verdict};
use crate::politeness::prepare::Preparer;
use crate::result::PageResult;
use crate::stats::Stats;
use crate::store::{Job, Store};
use crate::Error;

/// What the dispatcher needs.
pub struct Dispatcher<S: Store> {
    /// Where URLs come from.
    pub store: Arc<S>,
    /// Which hosts are prepared, and their rules.
    pub hosts: Arc<HostRules<S::Host>>,
    /// Prepares hosts.
    pub preparer: Arc<Preparer<S>>,
    /// Stops dispatching.
    pub cancel: CancellationToken,
    /// Counts the URLs of unreachable hosts, recorded as failed here.
    pub stats: Arc<Stats>,
    /// Tells checked URLs, which skip their host's robots.txt, from crawled ones.
    pub rules: Arc<Rules>,
    /// The live page's hosts, when the run serves its page.
    pub board: Option<Arc<HostBoard<S::Host>>>,
}

/// URLs held until their host's rules are known, and the preparations under way.
struct Held<S: Store> {
    jobs: HashMap<S::Host, Vec<Job<S>>>,
    preparing: JoinSet<Result<(), Error>>,
    /// Hosts whose rules became known (their sitemaps may still be being read).
    ready: mpsc::UnboundedReceiver<S::Host>,
    ready_tx: mpsc::UnboundedSender<S::Host>,
}

impl<S: Store> Dispatcher<S>
where
    Error: From<S::Error>,
{
    /// Feed `tx` until the crawl is drained (`Ok(true)`) or stopped (`Ok(false)`).
    /// Preparations under way end with it.
    pub async fn run(self, tx: async_channel::Sender<Job<S>>) -> Result<bool, Error> {
        let (ready_tx, ready) = mpsc::unbounded_channel();
        let mut held = Held {
            jobs: HashMap::new(),
            preparing: JoinSet::new(),
            ready,
            ready_tx,
        };
        loop {
            if self.cancel.is_cancelled() {
                return Ok(false);
            }
            while let Ok(host) = held.ready.try_recv() {
                self.give_back(&host, &mut held).await?;
            }
            while let Some(done) = held.preparing.try_join_next() {
                prepared(done)?;
            }
            let room = tx.capacity().unwrap_or(usize::MAX) - tx.len();
            let taken = self.store.take(room.max(1)).await?;
            let took = !taken.jobs.is_empty();
            for job in taken.jobs {
                if !self.route(job, &mut held, &tx).await? {
                    return Ok(false);
                }
            }
            if took {
                continue;
            }
            if held.jobs.is_empty() && held.preparing.is_empty() && self.store.is_drained().await? {
                return Ok(true);
            }
            tokio::select! {
                _ = self.store.wait(taken.next) => {}
                Some(host) = held.ready.recv() => self.give_back(&host, &mut held).await?,
                Some(done) = held.preparing.join_next(), if !held.preparing.is_empty() => {
                    prepared(done)?;
                }
                _ = self.cancel.cancelled() => return Ok(false),
            }
        }
    }

    /// Send `job` to the workers, record it as disallowed, or hold it while its host is
    /// prepared. False when the crawl stopped meanwhile.
    async fn route(
        &self,
        job: Job<S>,
        held: &mut Held<S>,
        tx: &async_channel::Sender<Job<S>>,
    ) -> Result<bool, Error> {
        if let Some(board) = &self.board {
            board.seen(&job.host, &job.url);
        }
        let verdict = if self.is_check(&job.url) {
            // robots.txt is not read for a single check (as link checkers do not), so
            // its host needs no preparation.
            Verdict::Fetch
        } else {
            self.hosts.check(&job.host, &job.url, Instant::now())
        };
        match verdict {
            Verdict::Fetch => {
                tokio::select! {
                    sent = tx.send(job) => Ok(sent.is_ok()),
                    _ = self.cancel.cancelled() => Ok(false),
                }
            }
            Verdict::Disallowed => {
                self.store.skip(job, SkipReason::Robots).await?;
                Ok(true)
            }
            Verdict::Unreachable(why) => {
                let result =
                    PageResult::failure(job.depth, job.attempts + 1, why.kind, why.message.clone());
                self.stats.record(&job.url, &result, 0);
                if let Some(board) = &self.board {
                    board.record(&job.host, &job.url, &result);
                }
                self.store.complete(job, result, Outlinks::None).await?;
                Ok(true)
            }
            Verdict::Wait => {
                held.jobs.entry(job.host.clone()).or_default().push(job);
                Ok(true)
            }
            Verdict::Prepare { first } => {
                let preparer = self.preparer.clone();
                let (host, url) = (job.host.clone(), job.url.clone());
                let ready = held.ready_tx.clone();
                held.preparing
                    .spawn(async move { preparer.prepare(host, url, first, &ready).await });
                held.jobs.entry(job.host.clone()).or_default().push(job);
                Ok(true)
            }
        }
    }

    fn is_check(&self, url: &url::Url) -> bool {
        if !self.rules.check_external {
            return false;
        }
        let mut key = String::new();
        self.rules.key_of(url, &mut key);
        self.rules.checks(url, &key)
    }

    /// `host`'s rules are known: give the URLs held for it back to the store.
    async fn give_back(&self, host: &S::Host, held: &mut Held<S>) -> Result<(), Error> {
        for job in held.jobs.remove(host).unwrap_or_default() {
            self.store.release(job).await?;
        }
        Ok(())
    }
}

/// A preparation ended (its host's URLs were given back when its rules were known).
fn prepared(done: Result<Result<(), Error>, tokio::task::JoinError>) -> Result<(), Error> {
    done.map_err(|e| Error::Internal(format!("host preparation failed: {e}")))?
}
