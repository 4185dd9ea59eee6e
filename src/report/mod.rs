//! Reports: questions about a crawl answered from its file, as aligned tables for people or
//! CSV / JSON for programs. One file per report; `output` holds the three writers every
//! report has, `ci/` the formats only `broken` is written in (JUnit, SARIF, Markdown,
//! GitHub annotations), for CI systems.
//!
//! Reports open the file read-only and create no index. The crawl does not index `edges`
//! (inserts stay fast), so every query here either scans `edges` once (with SQLite's sorts
//! and temporary b-trees, which spill to disk) or holds per-URL arrays indexed by id; none
//! is quadratic without an index. What each report keeps in memory is said in its file.

mod broken;
mod ci;
mod depth;
mod diff;
mod orphans;
mod output;
mod redirects;
mod summary;
mod top;

use std::io::Write;
use std::str::FromStr;

pub use crate::check::{ClassCounts, LinkClass, LinkClasses};
pub use diff::{diff, Change, DiffOptions};
pub use output::{json_object, Cell, OutputFormat, RowSink};

use crate::store::{SqliteStore, StoreError};
use output::Out;

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Links to fix, by class (broken, missing fragment, blocked, transient, and when
    /// asked redirected), with the page and place of each.
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

impl Kind {
    /// The name `trawl report` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Broken => "broken",
            Kind::Redirects => "redirects",
            Kind::Depth => "depth",
            Kind::Top => "top",
            Kind::Orphans => "orphans",
            Kind::Summary => "summary",
        }
    }
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
    /// A CI format asked of a report other than `broken`.
    #[error(
        "--format {format} is written for the broken report only; {kind} takes table, csv or json"
    )]
    Format {
        /// The format asked for.
        format: OutputFormat,
        /// The report asked for.
        kind: &'static str,
    },
    /// `trawl diff` on a file with one generation and no `--from`.
    #[error(
        "{path} keeps only generation {generation}: nothing to compare it with; \
         run trawl crawl --refresh to make another, or name two with --from and --to"
    )]
    NothingToCompare {
        /// The file.
        path: String,
        /// Its only generation.
        generation: i64,
    },
    /// Link classes given for a report other than `broken`.
    #[error("--class chooses the links of the broken report; {kind} has no classes")]
    Classes {
        /// The report asked for.
        kind: &'static str,
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
            ReportError::NoCrawl { .. }
            | ReportError::NothingToCompare { .. }
            | ReportError::Format { .. }
            | ReportError::Classes { .. } => true,
            ReportError::Io(_) => false,
        }
    }
}

/// Default `--limit` of `top`: a screenful.
pub const TOP_DEFAULT_LIMIT: u64 = 20;
/// Default entries per section of `summary` (content types, hosts).
pub const SUMMARY_DEFAULT_LIMIT: u64 = 10;

/// How a report is written: `--format`, `--limit` and, for `broken`, `--class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The format; the CI formats (JUnit, SARIF, Markdown, GitHub) for `broken` only.
    pub format: OutputFormat,
    /// At most this many rows (per section for `summary`); `None` for the report's
    /// default (all; [`TOP_DEFAULT_LIMIT`], [`SUMMARY_DEFAULT_LIMIT`]).
    pub limit: Option<u64>,
    /// `broken`: the classes of links listed; `None` for [`LinkClasses::REPORTED`]. Other
    /// reports refuse it.
    pub classes: Option<LinkClasses>,
}

impl Options {
    /// `format`, with every other option at its default.
    pub fn new(format: OutputFormat) -> Options {
        Options {
            format,
            ..Options::default()
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            format: OutputFormat::Table,
            limit: None,
            classes: None,
        }
    }
}

/// Write report `kind` on `store` to `out` as `options` say. Returns the rows written
/// (for the CI formats: the links listed).
pub fn run(
    store: &SqliteStore,
    kind: Kind,
    options: &Options,
    out: &mut dyn Write,
) -> Result<u64, ReportError> {
    let tabular = options.format.tabular();
    if kind != Kind::Broken {
        if tabular.is_none() {
            return Err(ReportError::Format {
                format: options.format,
                kind: kind.as_str(),
            });
        }
        if options.classes.is_some() {
            return Err(ReportError::Classes {
                kind: kind.as_str(),
            });
        }
    }
    let classes = options.classes.unwrap_or(LinkClasses::REPORTED);
    let _snapshot = snapshot(store)?;
    let Some(format) = tabular else {
        return ci::write(store, options.format, classes, options.limit, out);
    };
    write(
        store,
        kind,
        options,
        Out::new(format, rows_limit(kind, options), out),
    )
}

/// Hand report `kind`'s rows on `store` to `sink` as cells, in the report's order
/// (`options.format` is not used). Returns the rows handed.
///
/// ```no_run
/// # use trawl::report::{self, Cell, Kind, Options, ReportError, RowSink};
/// struct Count(u64);
/// impl RowSink for Count {
///     fn row(&mut self, _: &[&'static str], _: Vec<Cell>) -> Result<(), ReportError> {
///         self.0 += 1;
///         Ok(())
///     }
/// }
/// # fn f(store: &trawl::store::SqliteStore) -> Result<(), ReportError> {
/// let mut n = Count(0);
/// report::rows(store, Kind::Orphans, &Options::default(), &mut n)?;
/// # Ok(()) }
/// ```
pub fn rows(
    store: &SqliteStore,
    kind: Kind,
    options: &Options,
    sink: &mut dyn RowSink,
) -> Result<u64, ReportError> {
    if options.classes.is_some() && kind != Kind::Broken {
        return Err(ReportError::Classes {
            kind: kind.as_str(),
        });
    }
    let _snapshot = snapshot(store)?;
    write(
        store,
        kind,
        options,
        Out::rows(sink, rows_limit(kind, options)),
    )
}

/// The rows a report writes at most: `--limit`, or its default.
fn rows_limit(kind: Kind, options: &Options) -> Option<u64> {
    match kind {
        Kind::Top => Some(options.limit.unwrap_or(TOP_DEFAULT_LIMIT)),
        Kind::Summary => None,
        _ => options.limit,
    }
}

/// Write report `kind` to `o` (in a snapshot already).
fn write(
    store: &SqliteStore,
    kind: Kind,
    options: &Options,
    mut o: Out<'_>,
) -> Result<u64, ReportError> {
    let classes = options.classes.unwrap_or(LinkClasses::REPORTED);
    match kind {
        Kind::Broken => broken::write(store, classes, &mut o)?,
        Kind::Redirects => redirects::run(store, &mut o)?,
        Kind::Depth => depth::run(store, &mut o)?,
        Kind::Top => top::run(
            store,
            rows_limit(kind, options).unwrap_or(TOP_DEFAULT_LIMIT),
            &mut o,
        )?,
        Kind::Orphans => orphans::run(store, &mut o)?,
        Kind::Summary => summary::run(
            store,
            options.limit.unwrap_or(SUMMARY_DEFAULT_LIMIT),
            &mut o,
        )?,
    }
    o.finish()
}

/// How many links of each of `classes` `report broken` lists (all of them: no limit), in
/// one snapshot: what `trawl crawl --fail-on` counts.
pub fn count_links(store: &SqliteStore, classes: LinkClasses) -> Result<ClassCounts, StoreError> {
    let _snapshot = snapshot(store)?;
    let mut counts = ClassCounts::default();
    match broken::run(store, classes, &mut counts) {
        Ok(()) => Ok(counts),
        Err(ReportError::Store(e)) => Err(e),
        Err(other) => unreachable!("counting writes nothing: {other}"),
    }
}

/// One snapshot for a whole report, so a running crawl cannot make its queries disagree
/// with each other.
fn snapshot(store: &SqliteStore) -> Result<rusqlite::Transaction<'_>, StoreError> {
    store
        .conn()
        .unchecked_transaction()
        .map_err(|e| sql(store, e))
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
