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
//!
//! - [`crawler`]: the builder and the crawl a user holds; opens the store and settles
//!   seeds and configuration the same way for a SQLite file and a Redis crawl.
//! - [`config`]: every option, its default, validation, TOML and layering.
//! - `engine`: the crawl loop, written once: the run loop, the dispatcher (the only
//!   sender into the bounded channel the workers read) and the workers.
//! - [`store`]: the seam the engine crawls through, and its two sides: `store::local`
//!   (per-host queues that spill to disk, the visited set within `visited-memory`, the
//!   single SQLite writer, resume) and `store::redis` (many processes, one crawl: leases,
//!   shared politeness, Lua scripts, a copy into SQLite for export and reports).
//! - [`admit`]: the admission rules and the planning of links, redirects, sitemap entries
//!   and seeds into candidates, shared by both stores.
//! - [`page`]: reading one response (fetch, charset, streaming extraction, robots meta).
//! - [`result`]: [`PageResult`], the one result type of a page, and [`ErrorKind`].
//! - [`events`]: fetched pages delivered to the library user, with backpressure; the same
//!   [`Page`] the page hook sees.
//! - [`politeness`]: what trawl asks of each host before fetching from it: robots.txt,
//!   Retry-After, host preparation (robots.txt and sitemaps, once per host).
//! - [`fetch`]: one HTTP request with timeouts and a body cap; no automatic redirects.
//! - [`proxy`]: proxy rotation and taking failing proxies out of rotation.
//! - [`dns`]: a DNS cache shared by every connection of a crawl.
//! - [`sitemap`]: sitemaps.org documents (XML, gzip, plain text), parsed streaming.
//! - [`extract`]: streaming link extraction with lol_html.
//! - [`charset`]: the document encoding (BOM, header, meta, detection) and UTF-16 transcoding.
//! - [`url_norm`]: seed parsing, canonical URL keys and crawl scope (pure functions).
//! - [`traps`]: URL shapes that never end (limits on length, depth of path, repeats) and
//!   session IDs.
//! - [`retry`]: which faults are retried, and the backoff between attempts.
//! - [`warc`]: every HTTP exchange as WARC records (`--warc`), written by one thread.
//! - [`export`]: the link graph and the pages out, streaming (CSV, JSON Lines, GraphML,
//!   DOT, sitemaps), with filters applied in SQL.
//! - [`report`]: broken links, redirect chains, depths, top pages, orphans and a summary,
//!   read from the file as tables, CSV or JSON.
//! - [`status`]: where a crawl stands (running, counts, rate), read from its file.
//! - [`metrics`]: the counters in Prometheus text format, served while a crawl runs.
//! - [`link`]: link kinds shared by all of the above.
//! - [`stats`]: run counters for progress and the summary.
//! - [`live`]: a live view of a running crawl (its counters and the store's), for progress
//!   displays and the metrics endpoint.
//! - [`failpoint`]: crash points for tests (`TRAWL_FAILPOINT`).

#![warn(missing_docs)]

pub mod admit;
pub mod charset;
pub mod config;
pub mod crawler;
pub mod dns;
mod engine;
mod error;
pub mod events;
pub mod export;
pub mod extract;
pub mod failpoint;
pub mod fetch;
pub mod link;
pub mod live;
pub mod metrics;
pub mod page;
pub mod politeness;
pub mod proxy;
pub mod report;
pub mod result;
pub mod retry;
pub mod sitemap;
pub mod stats;
pub mod status;
pub mod store;
pub mod traps;
pub mod url_norm;
pub mod warc;

pub use config::{ByteSize, CrawlConfig, RateLimit};
pub use crawler::{Crawler, CrawlerBuilder, Outcome, Progress, ProgressSnapshot, Summary};
pub use error::Error;
pub use events::Page;
pub use link::LinkKind;
pub use result::{ErrorKind, PageResult};
pub use url_norm::ScopeMode;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
