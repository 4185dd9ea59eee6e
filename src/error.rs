//! The library's top-level error: one variant per module boundary, each message saying
//! what the user can do.

use crate::config::ConfigError;
use crate::fetch::FetchError;
use crate::store::StoreError;
use crate::url_norm::UrlError;
use crate::warc::WarcError;

/// Everything that can stop a crawl from starting or finishing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A seed or pattern is unusable.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database is unusable.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The HTTP client could not be built.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The WARC file is unusable, or could not be written.
    #[error(transparent)]
    Warc(#[from] WarcError),
    /// The metrics endpoint could not start.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    /// The crawl's page (`ui`) cannot be served.
    #[error(transparent)]
    Ui(#[from] crate::ui::UiError),
    /// The Redis crawl cannot go on.
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Distributed(#[from] crate::store::redis::DistError),
    /// No database path was given to the builder.
    #[error("no database given; set one with --db FILE")]
    NoDb,
    /// A new crawl needs at least one seed.
    #[error("{db} holds no crawl yet; give at least one seed URL, e.g. trawl crawl https://example.org/ --db {db}")]
    NoSeeds {
        /// The database path.
        db: String,
    },
    /// A bug in trawl.
    #[error("internal error: {0}; please report it")]
    Internal(String),
}

impl Error {
    /// Whether the error is the user's to fix (bad input), as opposed to a failure while
    /// crawling. The CLI exits 2 for these.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Url(_) | Error::Config(_) | Error::NoDb | Error::NoSeeds { .. } => true,
            Error::Store(e) => e.is_usage(),
            // Writing failed mid-crawl; every other WARC error is about the path given.
            Error::Warc(e) => !matches!(e, WarcError::Write { .. }),
            Error::Fetch(_) | Error::Metrics(_) | Error::Ui(_) => true,
            #[cfg(feature = "redis")]
            Error::Distributed(e) => e.is_usage(),
            Error::Internal(_) => false,
        }
    }

    /// Whether the store stayed unreachable until the crawl was stopped: nothing was lost,
    /// and what was not recorded is fetched again (by another process, or on resume).
    pub fn is_unreachable(&self) -> bool {
        #[cfg(feature = "redis")]
        if let Error::Distributed(crate::store::redis::DistError::Unreachable(_)) = self {
            return true;
        }
        false
    }
}
