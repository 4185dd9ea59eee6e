//! Reports: questions about a crawl answered from its file, as aligned tables for people or
//! CSV / JSON for programs. One file per report; `output` holds the three writers.
//!
//! Reports open the file read-only and create no index. The crawl does not index `edges`
//! (inserts stay fast), so every query here either scans `edges` once (with SQLite's sorts
//! and temporary b-trees, which spill to disk) or holds per-URL arrays indexed by id; none
//! is quadratic without an index. What each report keeps in memory is said in its file.

mod broken;
mod depth;
mod orphans;
mod output;
mod redirects;
mod summary;
mod top;

use std::io::Write;
use std::str::FromStr;

pub use output::{Cell, OutputFormat};

use crate::store::{SqliteStore, StoreError};
use output::Out;

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// URLs that failed or answered 4xx/5xx, with each page linking to them.
    Broken,
    /// Redirect chains from their first hop to their end.
    Redirects,
    /// Fetched pages per depth: as recorded, and shortest from the seeds.
    Depth,
    /// Most-linked pages: in-degree and PageRank.
    Top,
    /// URLs only a sitemap links to.
    Orphans,
    /// Counts by state, status, type, host and error; timing.
    Summary,
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "broken" => Kind::Broken,
            "redirects" => Kind::Redirects,
            "depth" => Kind::Depth,
            "top" => Kind::Top,
            "orphans" => Kind::Orphans,
            "summary" => Kind::Summary,
            _ => {
                return Err(format!(
                    "unknown report {s:?}; use broken, redirects, depth, top, orphans or summary"
                ))
            }
        })
    }
}

/// Why a report stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading the crawl failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing the report failed.
    #[error("cannot write the report: {0}")]
    Io(#[from] std::io::Error),
    /// The file holds no crawl row (a crawl that never started).
    #[error("{path} holds no crawl yet; run trawl crawl first")]
    NoCrawl {
        /// The file.
        path: String,
    },
}

impl ReportError {
    /// The reader went away (`trawl report ... | head`): not an error for the user.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ReportError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// The input was unusable (exit code 2), as opposed to a failure while reporting.
    pub fn is_usage(&self) -> bool {
        match self {
            ReportError::Store(s) => !matches!(s, StoreError::Sqlite { .. }),
            ReportError::NoCrawl { .. } => true,
            ReportError::Io(_) => false,
        }
    }
}

/// Default `--limit` of `top`: a screenful.
pub const TOP_DEFAULT_LIMIT: u64 = 20;
/// Default entries per section of `summary` (content types, hosts).
pub const SUMMARY_DEFAULT_LIMIT: u64 = 10;

/// Write report `kind` on `store` to `out` as `format`, at most `limit` rows (per section
/// for `summary`). Returns the rows written.
pub fn run(
    store: &SqliteStore,
    kind: Kind,
    format: OutputFormat,
    limit: Option<u64>,
    out: &mut dyn Write,
) -> Result<u64, ReportError> {
    // One snapshot for the whole report, so a running crawl cannot make its queries
    // disagree with each other.
    let _snapshot = store
        .conn()
        .unchecked_transaction()
        .map_err(|e| sql(store, e))?;
    let rows_limit = match kind {
        Kind::Top => Some(limit.unwrap_or(TOP_DEFAULT_LIMIT)),
        Kind::Summary => None,
        _ => limit,
    };
    let mut o = Out::new(format, rows_limit, out);
    match kind {
        Kind::Broken => broken::run(store, &mut o)?,
        Kind::Redirects => redirects::run(store, &mut o)?,
        Kind::Depth => depth::run(store, &mut o)?,
        Kind::Top => top::run(store, rows_limit.unwrap_or(TOP_DEFAULT_LIMIT), &mut o)?,
        Kind::Orphans => orphans::run(store, &mut o)?,
        Kind::Summary => summary::run(store, limit.unwrap_or(SUMMARY_DEFAULT_LIMIT), &mut o)?,
    }
    o.finish()
}

/// A SQLite error on this store, named after its file.
fn sql(store: &SqliteStore, e: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: store.path().display().to_string(),
        source: e,
    }
}

/// The export name of an `edges.kind` code.
fn kind_name(code: i64) -> &'static str {
    crate::link::LinkKind::from_code(code).map_or("unknown", crate::link::LinkKind::as_str)
}

/// `SELECT max(id) FROM urls` as an array length: per-URL arrays are indexed by id.
fn id_space(store: &SqliteStore) -> Result<usize, ReportError> {
    let max: Option<i64> = store
        .conn()
        .query_row("SELECT max(id) FROM urls", [], |r| r.get(0))
        .map_err(|e| sql(store, e))?;
    Ok(max.map_or(0, |m| m.max(0) as usize + 1))
}
