//! A live view of a running crawl for progress displays, the metrics endpoint and the
//! crawl's page: the run's counters and what the store holds, read at any time without
//! disturbing the crawl; for the page, its hosts (`hosts`) and last pages (`recent`).

mod hosts;
mod recent;

use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

pub(crate) use self::hosts::HostBoard;
pub use self::hosts::{HostRow, HOSTS};
use self::hosts::{HostsView, Watched};
pub use self::recent::{RecentPage, RecentPages, RECENT};
use crate::politeness::hosts::HostRules;
use crate::stats::{RunCounts, Stats};
use crate::store::{CrawlWide, Footprint, FrontierCounts, Store};

/// What a progress display reads of a store.
pub(crate) trait StoreView: Send + Sync {
    fn counts(&self) -> FrontierCounts;
    fn footprint(&self) -> Footprint;
}

impl<S: Store> StoreView for S {
    fn counts(&self) -> FrontierCounts {
        Store::counts(self)
    }

    fn footprint(&self) -> Footprint {
        Store::footprint(self)
    }
}

/// A live view of a running crawl, for progress displays. Cheap to clone.
#[derive(Clone)]
pub struct Progress {
    pub(crate) stats: Arc<Stats>,
    /// Weak: a progress display outliving the run must not keep the store open.
    store: Arc<OnceLock<Weak<dyn StoreView>>>,
    /// Set only when the run serves its page: otherwise the engine counts nothing per
    /// host.
    hosts: Arc<OnceLock<Arc<dyn HostsView>>>,
    pub(crate) started: Instant,
}

/// One reading of [`Progress`].
#[derive(Debug, Clone, Default)]
pub struct ProgressSnapshot {
    /// This run's counts.
    pub run: RunCounts,
    /// Frontier counts.
    pub frontier: FrontierCounts,
    /// URLs a worker is fetching (or reading, or storing) now: at most `concurrency`.
    pub fetching: u64,
    /// URLs taken from the frontier and waiting for a worker (in the channel to the
    /// workers, or held while their host's robots.txt is read).
    pub waiting: u64,
    /// Where the visited set is: memory and disk.
    pub visited: Footprint,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        Progress {
            stats: Arc::new(Stats::default()),
            store: Arc::new(OnceLock::new()),
            hosts: Arc::new(OnceLock::new()),
            started: Instant::now(),
        }
    }

    /// Show `store`'s counts from now on.
    pub(crate) fn watch<S: Store>(&self, store: &Arc<S>) {
        let view: Arc<dyn StoreView> = store.clone();
        let _ = self.store.set(Arc::downgrade(&view));
    }

    /// Show the hosts of `store`'s run, prepared by `rules`, from now on: the board the
    /// engine then counts each page on.
    pub(crate) fn watch_hosts<S: Store>(
        &self,
        store: &Arc<S>,
        rules: &Arc<HostRules<S::Host>>,
    ) -> Arc<HostBoard<S::Host>> {
        let watched = Watched::new(store, rules);
        let board = watched.board();
        let _ = self.hosts.set(Arc::new(watched));
        board
    }

    /// The hosts table: the hosts of this run with most pages, with what the store knows
    /// of each now (see [`HostRow`] for which figures are crawl-wide). Empty unless the
    /// run serves its page (`ui`).
    pub async fn hosts(&self) -> Vec<HostRow> {
        match self.hosts.get() {
            Some(view) => view.hosts().await,
            None => Vec::new(),
        }
    }

    /// The whole crawl's figures when other processes share it (a Redis crawl), at most a
    /// few seconds old; `None` for a crawl this process is alone in, or unless the run
    /// serves its page (`ui`).
    pub async fn crawl_wide(&self) -> Option<CrawlWide> {
        self.hosts.get()?.crawl_wide().await
    }

    /// The last pages this process fetched and its last errors. Empty unless the run
    /// serves its page (`ui`).
    pub fn recent(&self) -> RecentPages {
        self.hosts.get().map(|v| v.recent()).unwrap_or_default()
    }

    /// Read the counters now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        let store = self.store.get().and_then(Weak::upgrade);
        let frontier: FrontierCounts = store.as_ref().map(|s| s.counts()).unwrap_or_default();
        ProgressSnapshot {
            run: self.stats.snapshot(self.started.elapsed()),
            frontier,
            fetching: self.stats.fetching(),
            waiting: self.stats.waiting(frontier.in_flight),
            visited: store.as_ref().map(|s| s.footprint()).unwrap_or_default(),
        }
    }
}
