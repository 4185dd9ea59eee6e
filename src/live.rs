//! A live view of a running crawl for progress displays and the metrics endpoint: the
//! run's counters and what the store holds, read at any time without disturbing the
//! crawl.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use crate::stats::{RunCounts, Stats};
use crate::store::{Footprint, FrontierCounts, Store};

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
            started: Instant::now(),
        }
    }

    /// Show `store`'s counts from now on.
    pub(crate) fn watch<S: Store>(&self, store: &Arc<S>) {
        let view: Arc<dyn StoreView> = store.clone();
        let _ = self.store.set(Arc::downgrade(&view));
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
