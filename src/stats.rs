//! Counters of a running crawl, shared by the workers and read by progress displays and
//! the final summary. Plain atomics: updated once per page, never per link.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::result::{ErrorKind, FailedSeed, PageResult, Unchanged, MAX_FAILED_SEEDS};

/// Live counters for this run.
#[derive(Debug, Default)]
pub struct Stats {
    pages: AtomicU64,
    by_class: [AtomicU64; 6],
    failed: AtomicU64,
    bytes: AtomicU64,
    edges: AtomicU64,
    retries: AtomicU64,
    pauses: AtomicU64,
    /// In a refresh: pages answered 304, and 200s with the same content hash.
    not_modified: AtomicU64,
    same_content: AtomicU64,
    /// Fetch durations: counts per bucket of [`LATENCY_BUCKETS_MS`] (and one past the
    /// last), and their sum.
    latency: [AtomicU64; LATENCY_BUCKETS_MS.len() + 1],
    latency_sum_ms: AtomicU64,
    errors: Mutex<BTreeMap<ErrorKind, u64>>,
    seeds_fetched: AtomicU64,
    failed_seeds: Mutex<Vec<FailedSeed>>,
    /// Workers fetching or reading a page now (a gauge).
    fetching: AtomicU64,
}

/// One worker at work on a page, counted in [`Stats::fetching`] while it lives.
pub struct Fetching<'a>(&'a AtomicU64);

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Upper bounds of the fetch-duration histogram, in milliseconds.
pub const LATENCY_BUCKETS_MS: [u64; 12] =
    [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

impl Stats {
    /// Count the result of fetching `url` and its `edges`.
    pub fn record(&self, url: &url::Url, rec: &PageResult, edges: usize) {
        self.pages.fetch_add(1, Relaxed);
        if rec.depth == 0 {
            self.record_seed(url, rec);
        }
        if let Some(s) = rec.status {
            let class = (s / 100).min(5) as usize;
            self.by_class[class].fetch_add(1, Relaxed);
        }
        if rec.failed {
            self.failed.fetch_add(1, Relaxed);
        }
        if let Some(kind) = rec.error_kind {
            *self
                .errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(kind)
                .or_default() += 1;
        }
        match rec.unchanged {
            Some(Unchanged::NotModified) => self.not_modified.fetch_add(1, Relaxed),
            Some(Unchanged::SameContent) => self.same_content.fetch_add(1, Relaxed),
            None => 0,
        };
        self.bytes.fetch_add(rec.size.unwrap_or(0), Relaxed);
        self.edges.fetch_add(edges as u64, Relaxed);
        let bucket = LATENCY_BUCKETS_MS
            .iter()
            .position(|&b| rec.fetch_ms <= b)
            .unwrap_or(LATENCY_BUCKETS_MS.len());
        self.latency[bucket].fetch_add(1, Relaxed);
        self.latency_sum_ms.fetch_add(rec.fetch_ms, Relaxed);
    }

    /// A seed's outcome: fetched (a redirect does not count, its target will), or failed.
    fn record_seed(&self, url: &url::Url, rec: &PageResult) {
        if let Some(seed) = FailedSeed::of(url.to_string(), rec) {
            let mut failed = self.failed_seeds.lock().unwrap_or_else(|p| p.into_inner());
            if failed.len() < MAX_FAILED_SEEDS {
                failed.push(seed);
            }
        } else if !rec.status.is_some_and(|s| (300..400).contains(&s)) {
            self.seeds_fetched.fetch_add(1, Relaxed);
        }
    }

    /// A worker starts on a page; it counts as fetching until the guard drops.
    pub fn start_fetching(&self) -> Fetching<'_> {
        self.fetching.fetch_add(1, Relaxed);
        Fetching(&self.fetching)
    }

    /// Workers fetching or reading a page now.
    pub fn fetching(&self) -> u64 {
        self.fetching.load(Relaxed)
    }

    /// Of `taken` URLs taken from the frontier and not finished, those waiting for a
    /// worker. Read apart from the fetching gauge, the two can disagree for a moment:
    /// never more waiting than taken.
    pub fn waiting(&self, taken: usize) -> u64 {
        (taken as u64).saturating_sub(self.fetching())
    }

    /// Count an attempt that will be repeated.
    pub fn record_retry(&self) {
        self.retries.fetch_add(1, Relaxed);
    }

    /// Count a host paused by a 429 or 503.
    pub fn record_pause(&self) {
        self.pauses.fetch_add(1, Relaxed);
    }

    /// URLs fetched (or failed) this run.
    pub fn pages(&self) -> u64 {
        self.pages.load(Relaxed)
    }

    /// URLs that got no usable response, or hit a redirect loop or limit.
    pub fn failed(&self) -> u64 {
        self.failed.load(Relaxed)
    }

    /// A copy of the counters.
    pub fn snapshot(&self, elapsed: Duration) -> RunCounts {
        RunCounts {
            pages: self.pages(),
            by_class: std::array::from_fn(|i| self.by_class[i].load(Relaxed)),
            failed: self.failed(),
            bytes: self.bytes.load(Relaxed),
            edges: self.edges.load(Relaxed),
            retries: self.retries.load(Relaxed),
            pauses: self.pauses.load(Relaxed),
            not_modified: self.not_modified.load(Relaxed),
            same_content: self.same_content.load(Relaxed),
            latency: std::array::from_fn(|i| self.latency[i].load(Relaxed)),
            latency_sum_ms: self.latency_sum_ms.load(Relaxed),
            errors: self
                .errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), *v))
                .collect(),
            seeds_fetched: self.seeds_fetched.load(Relaxed),
            failed_seeds: self
                .failed_seeds
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            elapsed,
        }
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCounts {
    /// URLs fetched (or failed) this run.
    pub pages: u64,
    /// Responses by status class: index 1 is 1xx ... index 5 is 5xx (and above).
    pub by_class: [u64; 6],
    /// URLs that failed.
    pub failed: u64,
    /// Body bytes read.
    pub bytes: u64,
    /// Edges recorded.
    pub edges: u64,
    /// Attempts that were retried.
    pub retries: u64,
    /// Host pauses after a 429 or 503.
    pub pauses: u64,
    /// In a refresh: pages answered 304 Not Modified (not read again).
    pub not_modified: u64,
    /// In a refresh: pages answered 200 with the previous generation's content hash.
    pub same_content: u64,
    /// Fetch durations per bucket of `LATENCY_BUCKETS_MS` (5 ms to 30 s), the last for longer ones.
    pub latency: [u64; LATENCY_BUCKETS_MS.len() + 1],
    /// Sum of fetch durations.
    pub latency_sum_ms: u64,
    /// Failures by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Seeds (depth-0 URLs) that got a response other than a redirect.
    pub seeds_fetched: u64,
    /// Seeds that got no usable response (the first hundred).
    pub failed_seeds: Vec<FailedSeed>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl RunCounts {
    /// Seeds were tried this run and not one could be fetched: a wrong URL, no network,
    /// or a host that is down.
    pub fn no_seed_fetched(&self) -> bool {
        !self.failed_seeds.is_empty() && self.seeds_fetched == 0
    }

    /// Pages per second over the run.
    pub fn rate(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.pages as f64 / s
        } else {
            0.0
        }
    }
}
