//! The store: where a crawl's state lives, behind one seam, `Store`, that the engine
//! (`engine`) crawls through. Its operations are those of a frontier: admit the seeds,
//! take work for hosts that are ready, complete a page with its result and links, retry
//! it, skip it, pause a host, tell whether the crawl is drained.
//!
//! Two sides implement it:
//! - `local`: per-host queues and the compact visited set in memory, one SQLite writer
//!   thread behind them; no call leaves the process, so the hot path has no round trips.
//! - [`redis`]: many processes share one crawl through Redis; each atomic step is one Lua
//!   script on one cluster slot, and leases return a dead process's URLs to the others.
//!
//! Everything above the seam (the worker, the dispatcher, host preparation, WARC output,
//! page events and hooks) is written once and works the same on both.

pub(crate) mod local;
#[cfg(feature = "redis")]
pub mod redis;

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::time::{Duration, Instant};

use url::Url;

use crate::admit::{Outlinks, SkipReason};
pub use crate::result::now_ms;
use crate::result::PageResult;

// The readers' part of the local store is public: a crawl's file is read by `export`,
// `report` and `status`, and by anyone with SQLite. The rest is the crate's.
#[cfg(feature = "redis")]
pub(crate) use local::check_cache::FileUrl;
pub use local::error::StoreError;
pub use local::history::{Generation, Pruned};
pub(crate) use local::pending::UrlId;
pub use local::sqlite::{CrawlRow, OpenMode, SqliteStore};
pub use local::visited::Footprint;

/// A URL taken from the store to be fetched.
pub(crate) struct Job<S: Store> {
    /// What to fetch.
    pub url: Url,
    /// Its host, as the store names hosts.
    pub host: S::Host,
    /// Click depth when queued.
    pub depth: u32,
    /// Attempts already made (transient faults are retried).
    pub attempts: u32,
    /// For a redirect target: the key hashes of the chain that led here, oldest first.
    pub chain: Vec<u128>,
    /// In a refresh: what the previous generation knew of the page, to ask conditionally.
    pub validators: Option<Box<crate::refresh::Validators>>,
    /// The store's own handle on the URL (a row id and drain guard, a lease).
    pub ticket: S::Ticket,
}

impl<S: Store> Debug for Job<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("url", &self.url.as_str())
            .field("host", &self.host)
            .field("depth", &self.depth)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// What a take gave.
pub(crate) struct Taken<S: Store> {
    /// URLs to fetch now; their host slots are taken until they complete, retry, are
    /// skipped or dropped.
    pub jobs: Vec<Job<S>>,
    /// When more may be ready without anything else happening (a host's spacing or pause
    /// ends, a retry comes due).
    pub next: Option<Instant>,
}

/// A sitemap document read while preparing a host, to be recorded with what it lists.
#[derive(Debug)]
pub(crate) struct SitemapDoc {
    /// The document's URL.
    pub url: Url,
    /// The index that listed it, if any.
    pub parent: Option<Url>,
    /// How fetching it went (status, type, size, times).
    pub result: PageResult,
    /// The URLs it lists, resolved against it.
    pub entries: Vec<Url>,
    /// An index (it lists sitemaps) rather than a URL set (it lists pages).
    pub index: bool,
}

/// What a store holds about its crawl, when it has one.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredCrawl {
    /// The configuration it started with (TOML).
    pub config: String,
    /// Its seeds, as stored.
    pub seeds: Vec<String>,
    /// It drained.
    pub finished: bool,
}

/// Counts a progress display reads, cheaply and at any time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrontierCounts {
    /// Queued in this process's memory.
    pub in_memory: usize,
    /// Queued elsewhere (on disk, in Redis).
    pub spilled: u64,
    /// Taken and not yet finished.
    pub in_flight: usize,
    /// Waiting for another attempt.
    pub retrying: usize,
}

/// What the store knows of one host now, for a live hosts table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HostState {
    /// Request slots taken (what `per-host` counts): this process's for a local store,
    /// every process's for a Redis store.
    pub in_flight: u64,
    /// The spacing between its requests: the configuration's, or its robots.txt
    /// Crawl-delay when longer.
    pub delay: Duration,
    /// No request starts before then (a 429 or 503's Retry-After), Unix ms; `None` when
    /// not paused. A Redis store's is the crawl-wide pause every process obeys.
    pub paused_until: Option<i64>,
}

/// A crawl several processes share (a Redis crawl), as every process sees it: read only
/// when a live page asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CrawlWide {
    /// Processes taking part now (beating).
    pub processes: u64,
    /// Pages those processes fetched in their runs.
    pub pages: u64,
    /// URLs their workers are fetching now.
    pub fetching: u64,
    /// URLs they have taken, waiting for a worker.
    pub waiting: u64,
    /// URLs known to the crawl.
    pub known: u64,
    /// Pages stored (results collected or on their way).
    pub stored: u64,
    /// URLs waiting in the queues.
    pub queued: u64,
    /// URLs leased by a process now.
    pub leased: u64,
    /// URLs waiting to be tried again.
    pub retrying: u64,
    /// URLs never to be fetched.
    pub skipped: u64,
}

/// Where the crawl stands when a run ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct Finished {
    /// URLs known to the crawl (all runs, all processes): fetched, queued and skipped.
    pub known_urls: u64,
    /// URLs still queued.
    pub queued: u64,
    /// The visited set's footprint, for a store that keeps it in this process.
    pub visited: Footprint,
}

/// The seam between the crawl engine and where a crawl's state lives. See the module doc.
///
/// Futures are `Send` so the engine can run them on any worker thread; the local side's
/// futures complete without waiting, except where its single writer applies backpressure.
pub(crate) trait Store: Send + Sync + Sized + 'static {
    /// How the store names a host (`host[:port]`).
    type Host: Clone + Eq + Hash + Debug + Send + Sync + 'static;
    /// The store's handle on a taken URL. Dropping it without completing the URL leaves
    /// the URL to be fetched later (on resume, or by another process).
    type Ticket: Send + Sync + 'static;
    /// What can go wrong (the engine turns it into the crate's [`Error`](crate::Error)).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Admit the seeds (never judged by scope: the user asked for them).
    fn admit_seeds(&self, seeds: &[Url]) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Take up to `room` URLs of hosts that are ready: under their per-host limit, past
    /// their spacing and pauses.
    fn take(&self, room: usize) -> impl Future<Output = Result<Taken<Self>, Self::Error>> + Send;

    /// Wait until something may have changed (a page admitted links, a slot came free) or
    /// `until` passes.
    fn wait(&self, until: Option<Instant>) -> impl Future<Output = ()> + Send;

    /// Whether every admitted URL is finished, here and in every other process.
    fn is_drained(&self) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// The depth to fetch `job` at: it may have been found along a shorter path since it
    /// was queued. `hash` is its canonical key's.
    fn depth_now(&self, job: &Job<Self>, hash: u128) -> u32;

    /// A request to `host` is about to leave: `Some(t)` when it must wait until `t` to keep
    /// the host's spacing after the previous request, in any process. Spacing is booked
    /// when a URL is taken, but a taken URL can wait before its fetch (a busy runtime)
    /// while the next one comes due; this keeps the spacing between the requests
    /// themselves, and a request that leaves late pushes the next one out.
    fn started(
        &self,
        host: &Self::Host,
    ) -> impl Future<Output = Result<Option<Instant>, Self::Error>> + Send;

    /// No request to `host` starts before `until` (a 429 or 503), in every process.
    fn pause(
        &self,
        host: &Self::Host,
        until: Instant,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Try `job` again at `at` (its attempt count goes up by one).
    fn retry(
        &self,
        job: Job<Self>,
        at: Instant,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Store `job`'s result and admit what it links to, in one step: after a crash either
    /// both are there or neither.
    fn complete(
        &self,
        job: Job<Self>,
        result: PageResult,
        links: Outlinks,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Give `job` back unfetched: it is taken again, ahead of its host's queue, when its
    /// host is next ready (so its spacing holds from the requests made meanwhile).
    fn release(&self, job: Job<Self>) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Record `job` as not fetched, for `reason` (robots.txt forbids it).
    fn skip(
        &self,
        job: Job<Self>,
        reason: SkipReason,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Space requests to `host` at least `interval` apart (a robots.txt Crawl-delay); the
    /// configured spacing still applies when longer.
    fn set_interval(&self, host: &Self::Host, interval: Duration);

    /// Take one of `host`'s request slots for a request made outside the queues (a sitemap
    /// read), so the per-host limit counts it, in every process; false when none is free
    /// now. Give it back with [`Store::vacate`].
    fn occupy(&self, host: &Self::Host) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Give back the slot [`Store::occupy`] took.
    fn vacate(&self, host: &Self::Host) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Book a request to `host` made outside the queues (a sitemap read), keeping its
    /// spacing: when it may start.
    fn book(&self, host: &Self::Host) -> impl Future<Output = Result<Instant, Self::Error>> + Send;

    /// Of the top-level sitemaps `listed` for `host`, those to read now: none when another
    /// process claimed the host's sitemaps, none already read in an earlier run.
    fn sitemaps_to_read(
        &self,
        host: &Self::Host,
        listed: Vec<Url>,
    ) -> impl Future<Output = Result<Vec<Url>, Self::Error>> + Send;

    /// Record a sitemap document and admit what it lists; false when it was already
    /// recorded (then its entries are not admitted again).
    fn record_sitemap(
        &self,
        doc: SitemapDoc,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Counts for progress displays.
    fn counts(&self) -> FrontierCounts;

    /// What the store knows of each of `hosts` now, in their order: read only when a
    /// live page asks, so it may cost a round trip.
    fn host_states(
        &self,
        hosts: Vec<Self::Host>,
    ) -> impl Future<Output = Result<Vec<HostState>, Self::Error>> + Send;

    /// The whole crawl's figures when other processes share it; `None` when this process
    /// is the crawl (its own counters say it all). Read only when a live page asks, so it
    /// may cost round trips.
    fn crawl_wide(&self) -> impl Future<Output = Result<Option<CrawlWide>, Self::Error>> + Send {
        async { Ok(None) }
    }

    /// The visited set's footprint, for a store that keeps it in this process.
    fn footprint(&self) -> Footprint {
        Footprint::default()
    }

    /// End this process's part of the run: commit or give back what it holds and, when
    /// `drained`, mark the crawl finished. Called once, after every worker has stopped.
    fn finish(&self, drained: bool) -> impl Future<Output = Result<Finished, Self::Error>> + Send;
}

/// Where a URL is in its life (`urls.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlState {
    /// Admitted, waiting to be fetched.
    Queued = 0,
    /// Fetched: a response came back (any status).
    Done = 1,
    /// No usable response: network error, timeout, redirect loop, ...
    Failed = 2,
    /// Known but never fetched (out of scope, limits).
    Skipped = 3,
}

impl UrlState {
    /// Inverse of `as i64`.
    pub fn from_code(code: i64) -> Option<UrlState> {
        Some(match code {
            0 => UrlState::Queued,
            1 => UrlState::Done,
            2 => UrlState::Failed,
            3 => UrlState::Skipped,
            _ => return None,
        })
    }

    /// The name used in exports.
    pub fn as_str(self) -> &'static str {
        match self {
            UrlState::Queued => "queued",
            UrlState::Done => "done",
            UrlState::Failed => "failed",
            UrlState::Skipped => "skipped",
        }
    }
}
