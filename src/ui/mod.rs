//! The crawl's web page: `trawl serve` for any crawl file, `trawl crawl --ui` while a crawl
//! runs. One HTML page (embedded, plain JavaScript, no build step) and the JSON endpoints
//! it reads, which scripts may read too.
//!
//! Nothing here writes to the crawl: its file is opened read-only for each request (the
//! page's own index of it is a second file, `cache`), and the live figures are a
//! [`Progress`] snapshot taken when asked for. What the crawl does for its page per page
//! is two counters and a bounded ring of the last pages, and only with `--ui`.
//!
//! - `server`: the accept loop and the routes (hyper, on the caller's runtime);
//! - `auth`: which addresses may be served without a token, and the token check;
//! - `cache`: the page's index of the crawl file (each report's rows, inlinks, names),
//!   built once and rebuilt while a crawl runs, so tables page in SQL;
//! - `rows`: a report's rows, filtered and paged from that index;
//! - `page`: one URL with its inlinks and outlinks;
//! - `pages`: every URL, paged by id, filtered by text, state and status class;
//! - `live`: the running crawl's figures, its hosts, its last pages and errors;
//! - `assets`: the page itself.

mod assets;
mod auth;
mod cache;
mod live;
mod page;
mod pages;
mod rows;
mod server;

use std::path::PathBuf;

pub(crate) use auth::check_bind;
pub use cache::CacheError;
pub use server::serve;

use crate::live::Progress;
use crate::store::StoreError;

/// The address `trawl serve` binds when given none.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9899";

/// What the page shows: a crawl's file, a running crawl's live figures, or both.
#[derive(Clone, Default)]
pub struct Sources {
    /// The crawl's SQLite file (for a Redis crawl, the file its results are collected
    /// into), read for the reports and the page views.
    pub db: Option<PathBuf>,
    /// The running crawl, for the live figures.
    pub progress: Option<Progress>,
}

/// Why the page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The address is not `IP:PORT`.
    #[error("cannot serve the page on {addr:?}: not an address and port such as 127.0.0.1:9899")]
    Address {
        /// The address given.
        addr: String,
    },
    /// Not loopback and no token: anyone who reaches the address could read the crawl.
    #[error(
        "refusing to serve the page on {addr} without a token: anyone who can reach that \
         address could read the crawl; pass --ui-token TOKEN (every request must then carry \
         it), or bind a loopback address such as 127.0.0.1"
    )]
    NeedsToken {
        /// The address given.
        addr: String,
    },
    /// Binding failed.
    #[error("cannot serve the page on {addr}: {source}; choose another address")]
    Bind {
        /// The address given.
        addr: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Reading the crawl failed (a missing file, not a trawl file, SQL).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A report could not be read.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// The page's index of the crawl could not be built or read.
    #[error(transparent)]
    Cache(#[from] cache::CacheError),
}

impl UiError {
    /// The input was unusable (an address, a missing token, a missing or foreign file), as
    /// opposed to a failure while serving.
    pub fn is_usage(&self) -> bool {
        match self {
            UiError::Address { .. } | UiError::NeedsToken { .. } => true,
            UiError::Store(e) => e.is_usage(),
            UiError::Report(e) => e.is_usage(),
            UiError::Cache(cache::CacheError::Crawl(e)) => e.is_usage(),
            UiError::Bind { .. } | UiError::Cache(_) => false,
        }
    }
}
