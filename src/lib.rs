//! trawl: a site crawler. Give it seed URLs; it discovers and fetches every in-scope page,
//! keeps every page and every link in a SQLite file, resumes after any interruption with
//! nothing lost and nothing fetched twice, and exports the link graph.
//!
//! ```no_run
//! # async fn demo() -> Result<(), trawl::Error> {
//! let summary = trawl::Crawler::builder()
//!     .db("site.db")
//!     .seed("https://example.org/")
//!     .build()?
//!     .run(std::future::pending())
//!     .await?;
//! assert_eq!(summary.outcome, trawl::Outcome::Finished);
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! Data flows down this list and never back up: the crawler hands a store to the engine;
//! the engine calls the store and the readers; the readers know nothing of the engine.
//! There are no import cycles between modules. Modules not linked are internal.
//!
//! - [`crawler`]: the builder and the crawl a user holds; opens the store and settles
//!   seeds and configuration the same way for a SQLite file and a Redis crawl.
//! - [`config`]: every option (listed once, in `crawl_options!`), its default, validation,
//!   TOML and layering.
//! - `engine`: the crawl loop, written once: the run loop, the dispatcher (the only
//!   sender into the bounded channel the workers read) and the workers.
//! - [`store`]: the seam the engine crawls through (`Store`), and its two sides:
//!   `store::local` (per-host queues that spill to disk, the visited set within
//!   `visited-memory`, the single SQLite writer, resume) and `store::redis` (many
//!   processes, one crawl: the keys and their shards, Lua scripts, leases and tokens for
//!   shared politeness, and the results sink, a collector writing the crawl's SQLite file
//!   through the local writer; the `redis` feature).
//! - `admit`: the admission rules, skip reasons, and the planning of links, redirects,
//!   sitemap entries and seeds into candidates, shared by both stores.
//! - `politeness`: what trawl asks of each host before fetching from it: robots.txt,
//!   Retry-After, host preparation (robots.txt and sitemaps, once per host).
//! - `page`: reading one response (fetch, charset, streaming extraction, robots meta).
//! - `result`: [`PageResult`], the one result type of a page, and [`ErrorKind`].
//! - [`events`]: fetched pages delivered to the library user, with backpressure; the same
//!   [`Page`] the page hook sees.
//! - `fetch`: one HTTP request with timeouts and a body cap; no automatic redirects.
//!   `proxy` rotates proxies; `dns` caches lookups; `retry` says which faults are retried.
//! - `extract`: streaming link extraction with lol_html; `charset` decides the encoding;
//!   `sitemap` parses sitemaps.org documents.
//! - `url_norm`: seed parsing, canonical URL keys and crawl scope (pure functions);
//!   `traps`: URL shapes that never end, and session IDs.
//! - `warc`: every HTTP exchange as WARC records (`--warc`), written by one thread.
//! - `live`, `stats`, `metrics`: the counters of a run, a live view of them, and their
//!   Prometheus endpoint.
//! - `check`: what a checked link's result means (the classes broken, blocked,
//!   transient, redirected, fragment) and whether a `#fragment` is on its page; read by
//!   `report` and `status`, written once for both stores since it reads only the file.
//! - [`export`], [`report`], [`status`]: reading a crawl's file (the link graph and pages
//!   out, the reports people crawl for, where a crawl stands).
//! - [`ui`]: the crawl's web page (`trawl serve`, `trawl crawl --ui`): the live figures
//!   and the reports in a browser, and the JSON endpoints behind them; read-only.
//! - `failpoint`: crash points for tests (`TRAWL_FAILPOINT`).
//!
//! The `trawl` binary (`src/bin/trawl/`, the `cli` feature) is apart from the library: one
//! file per subcommand, the clap definitions, the progress line and the exit codes. It
//! calls only this crate's public API.

#![warn(missing_docs)]

// The public API: what a crawl is given and gives back, and the readers of a crawl's file.
pub mod config;
pub mod crawler;
pub mod events;
pub mod export;
pub mod report;
pub mod status;
pub mod store;
pub mod ui;

// Internals, reached from outside only through the re-exports below (and, for benches and
// fuzz targets, `internals`).
pub(crate) mod admit;
pub(crate) mod charset;
pub(crate) mod check;
pub(crate) mod dns;
pub(crate) mod engine;
mod error;
pub(crate) mod extract;
pub(crate) mod failpoint;
pub(crate) mod fetch;
pub(crate) mod link;
pub(crate) mod listen;
pub(crate) mod live;
pub(crate) mod metrics;
mod names;
pub(crate) mod page;
pub(crate) mod politeness;
pub(crate) mod proxy;
pub(crate) mod refresh;
pub(crate) mod result;
pub(crate) mod retry;
pub(crate) mod sitemap;
pub(crate) mod stats;
pub(crate) mod traps;
pub(crate) mod url_norm;
pub(crate) mod warc;

pub use admit::SkipReason;
pub use config::{ByteSize, ConfigError, CrawlConfig, RateLimit};
pub use crawler::{
    Crawler, CrawlerBuilder, HostRow, Outcome, Progress, ProgressSnapshot, RecentPage, RecentPages,
    Summary,
};
pub use error::Error;
pub use events::{Events, Page};
pub use fetch::FetchError;
pub use link::{LinkKind, Outlink};
pub use metrics::MetricsError;
pub use proxy::Rotation;
pub use result::{ErrorKind, FailedSeed, PageResult};
pub use stats::RunCounts;
pub use store::Footprint;
pub use url_norm::{ScopeMode, UrlError};
pub use warc::WarcError;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The hot path's parts and the pure parsers, for benches, fuzz targets and conformance
/// tests: not part of the API, and free to change with any release.
#[doc(hidden)]
pub mod internals {
    pub use crate::admit::{EdgeSpec, Outlinks, Rules};
    pub use crate::extract::{extract, Extractor, Link, Position};
    pub use crate::politeness::retry_after::{capped, parse_retry_after};
    pub use crate::politeness::robots::Robots;
    pub use crate::sitemap::parse as parse_sitemap;
    pub use crate::store::local::drain::Drain;
    pub use crate::store::local::frontier::{Frontier, HostPolicy};
    pub use crate::store::local::gate::Gate;
    pub use crate::store::local::pending::{Edge, NewHost, NewUrl, PageRecord, Pending};
    pub use crate::store::local::visited::{Held, Seen, Visited};
    pub use crate::store::local::writer::StoreWriter;
    pub use crate::traps::{query_group, strip_session_ids};
    pub use crate::url_norm::{canonical_key, canonical_key_into, key_hash, Scope};
}
