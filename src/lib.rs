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
//! The data flow of `../DESIGN.md`, one concept per module:
//!
//! - [`crawler`]: the builder and the run loop that wires everything together.
//! - [`config`]: every option, its default, validation and TOML.
//! - [`url_norm`]: canonical URL keys and crawl scope (pure functions).
//! - [`admit`]: the gate each discovered URL passes once (canonicalise, scope, visited).
//! - [`visited`]: the visited set, keyed by 128-bit hashes of canonical keys, within a
//!   memory budget (`visited-memory`): past it, sorted runs on disk behind Bloom filters.
//! - [`frontier`]: per-host queues that spill to disk, and the [`frontier::dispatcher`],
//!   the only sender into the bounded channel the workers read.
//! - [`drain`]: the drain counter that says when the crawl is over.
//! - [`worker`]: one page of a local crawl: read it, admit its links, record it.
//! - [`page`]: reading one response (fetch, charset, streaming extraction, robots meta),
//!   shared by the local and the distributed crawl.
//! - [`distributed`]: many processes, one crawl, through Redis (server or cluster):
//!   leases, shared politeness, Lua scripts, a copy into SQLite for export and reports.
//! - [`events`]: fetched pages delivered to the library user, with backpressure.
//! - [`fetch`]: one HTTP request with timeouts and a body cap; no automatic redirects.
//! - [`proxy`]: proxy rotation and taking failing proxies out of rotation.
//! - [`dns`]: a DNS cache shared by every connection of a crawl.
//! - [`politeness`]: what trawl asks of each host before fetching from it (robots.txt,
//!   Retry-After).
//! - [`sitemap`]: sitemaps.org documents (XML, gzip, plain text), parsed streaming.
//! - [`extract`]: streaming link extraction with lol_html.
//! - [`charset`]: the document encoding (BOM, header, meta, detection) and UTF-16 transcoding.
//! - [`store`]: the SQLite file, its single writer thread, and resume.
//! - [`retry`]: which faults are retried, and the backoff between attempts.
//! - [`export`]: the link graph and the pages out, streaming (CSV, JSON Lines, GraphML,
//!   DOT, sitemaps), with filters applied in SQL.
//! - [`report`]: broken links, redirect chains, depths, top pages, orphans and a summary,
//!   read from the file as tables, CSV or JSON.
//! - [`link`]: link kinds shared by all of the above.
//! - [`stats`]: run counters for progress and the summary.
//! - [`failpoint`]: crash points for tests (`TRAWL_FAILPOINT`).
//! - [`metrics`]: the counters in Prometheus text format, served while a crawl runs.
//! - [`status`]: where a crawl stands (running, counts, rate), read from its file.
//! - [`warc`]: every HTTP exchange as WARC records (`--warc`), written by one thread.
//! - [`traps`]: URL shapes that never end (limits on length, depth of path, repeats) and session IDs.

#![warn(missing_docs)]

pub mod admit;
pub mod charset;
pub mod config;
pub mod crawler;
pub mod distributed;
pub mod dns;
pub mod drain;
mod error;
pub mod events;
pub mod export;
pub mod extract;
pub mod failpoint;
pub mod fetch;
pub mod frontier;
pub mod link;
pub mod metrics;
pub mod page;
pub mod politeness;
pub mod proxy;
pub mod report;
pub mod retry;
pub mod sitemap;
pub mod stats;
pub mod status;
pub mod store;
pub mod traps;
pub mod url_norm;
pub mod visited;
pub mod warc;
pub mod worker;

pub use config::{ByteSize, CrawlConfig, RateLimit};
pub use crawler::{Crawler, CrawlerBuilder, Outcome, Progress, Summary};
pub use error::Error;
pub use link::LinkKind;
pub use url_norm::ScopeMode;
pub use worker::PageEvent;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
