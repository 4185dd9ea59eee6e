//! Counters of a running crawl, shared by the workers and read by progress displays and
//! the final summary. Plain atomics: updated once per page, never per link.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::result::{ErrorKind, PageResult};

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
    /// Fetch durations: counts per bucket of [`LATENCY_BUCKETS_MS`] (and one past the
    /// last), and their sum.
    latency: [AtomicU64; LATENCY_BUCKETS_MS.len() + 1],
    latency_sum_ms: AtomicU64,
    errors: Mutex<BTreeMap<ErrorKind, u64>>,
}

/// Upper bounds of the fetch-duration histogram, in milliseconds.
pub const LATENCY_BUCKETS_MS: [u64; 12] =
    [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

impl Stats {
    /// Count one page's result and its `edges`.
    pub fn record(&self, rec: &PageResult, edges: usize) {
        self.pages.fetch_add(1, Relaxed);
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
        self.bytes.fetch_add(rec.size.unwrap_or(0), Relaxed);
        self.edges.fetch_add(edges as u64, Relaxed);
        let bucket = LATENCY_BUCKETS_MS
            .iter()
            .position(|&b| rec.fetch_ms <= b)
            .unwrap_or(LATENCY_BUCKETS_MS.len());
        self.latency[bucket].fetch_add(1, Relaxed);
        self.latency_sum_ms.fetch_add(rec.fetch_ms, Relaxed);
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
            latency: std::array::from_fn(|i| self.latency[i].load(Relaxed)),
            latency_sum_ms: self.latency_sum_ms.load(Relaxed),
            errors: self
                .errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), *v))
                .collect(),
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
    /// Fetch durations per bucket of `LATENCY_BUCKETS_MS` (5 ms to 30 s), the last for longer ones.
    pub latency: [u64; LATENCY_BUCKETS_MS.len() + 1],
    /// Sum of fetch durations.
    pub latency_sum_ms: u64,
    /// Failures by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl RunCounts {
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
