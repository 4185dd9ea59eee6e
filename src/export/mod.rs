//! Export: the pages and the link graph out of a crawl's file, streaming.
//!
//! Rows are read with SQLite cursors and written as they come, so memory stays constant
//! however large the crawl; the only sorts (edges grouped under their page for JSON Lines
//! pages, collapsed edges) are SQLite's, which spill to disk. Filters are SQL conditions
//! ([`Filter`]). One file per format.

mod csv;
mod dot;
mod filter;
mod graphml;
mod jsonl;
mod rows;
pub mod sitemap_xml;
mod xml;

use std::io::Write;
use std::str::FromStr;

pub(crate) use filter::is_html_sql;
pub use filter::{Filter, StatusClass};
pub use rows::{EdgeRow, PageRow};

use crate::store::{SqliteStore, StoreError};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
    /// GraphML (XML) for networkx, igraph, Gephi.
    Graphml,
    /// Graphviz DOT.
    Dot,
    /// A sitemaps.org XML sitemap of the HTML pages that answered 200.
    Sitemap,
}

impl Format {
    /// What is exported when `--what` is not given.
    pub fn default_what(self) -> What {
        match self {
            Format::Csv | Format::Jsonl => What::Edges,
            Format::Graphml | Format::Dot => What::Graph,
            Format::Sitemap => What::Pages,
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "csv" => Ok(Format::Csv),
            "jsonl" => Ok(Format::Jsonl),
            "graphml" => Ok(Format::Graphml),
            "dot" => Ok(Format::Dot),
            "sitemap" => Ok(Format::Sitemap),
            _ => Err(format!(
                "unknown export format {s:?}; use csv, jsonl, graphml, dot or sitemap"
            )),
        }
    }
}

/// What to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// One record per URL (for JSON Lines, with its outlinks).
    Pages,
    /// One record per edge.
    Edges,
    /// Nodes and edges together (GraphML, DOT).
    Graph,
}

impl FromStr for What {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pages" => Ok(What::Pages),
            "edges" => Ok(What::Edges),
            "graph" => Ok(What::Graph),
            _ => Err(format!(
                "unknown export selection {s:?}; use pages, edges or graph"
            )),
        }
    }
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the crawl failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing the output failed.
    #[error("cannot write the export: {0}")]
    Io(#[from] std::io::Error),
    /// The format cannot write that selection (or those filters).
    #[error("{0}")]
    Unsupported(String),
    /// A sitemap larger than one file was asked for on standard output.
    #[error("the sitemap lists {count} URLs, more than the {max} one sitemap file may hold; give --out DIR/sitemap.xml to write it split into several files with an index")]
    SitemapTooLarge {
        /// URLs to list.
        count: u64,
        /// Most URLs per file.
        max: u64,
    },
}

impl ExportError {
    /// The reader went away (`trawl export | head`): not an error for the user.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ExportError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// The request was unusable (exit code 2), as opposed to a failure while exporting.
    pub fn is_usage(&self) -> bool {
        match self {
            ExportError::Unsupported(_) | ExportError::SitemapTooLarge { .. } => true,
            ExportError::Store(s) => !matches!(s, StoreError::Sqlite { .. }),
            ExportError::Io(_) => false,
        }
    }
}

/// Refuse combinations that would silently mean nothing, before anything is written.
pub fn check(format: Format, what: What, filter: &Filter) -> Result<(), ExportError> {
    let bad = |m: &str| Err(ExportError::Unsupported(m.to_owned()));
    match (format, what) {
        (Format::Csv | Format::Jsonl, What::Graph) => {
            bad("--what graph needs --format graphml or dot; csv and jsonl write pages or edges")
        }
        (Format::Graphml | Format::Dot, What::Pages | What::Edges) => {
            bad("graphml and dot write the whole graph: use --what graph (the default) or csv/jsonl for pages or edges")
        }
        (Format::Sitemap, What::Edges | What::Graph) => {
            bad("a sitemap lists pages: use --what pages (the default) with --format sitemap")
        }
        (Format::Sitemap, _) if *filter != Filter::default() => bad(
            "a sitemap always lists the HTML pages that answered 200: --internal-only, --collapse and --status do not apply",
        ),
        _ => Ok(()),
    }
}

/// Write `what` from `store` to `out` as `format`, keeping what `filter` keeps; returns
/// the number of records (for graphs, nodes plus edges). A sitemap that needs more than
/// one file is refused here: write it with [`sitemap_xml::to_files`].
pub fn export(
    store: &SqliteStore,
    format: Format,
    what: What,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    check(format, what, filter)?;
    let n = match (format, what) {
        (Format::Csv, What::Pages) => csv::pages(store, filter, out)?,
        (Format::Csv, _) => csv::edges(store, filter, out)?,
        (Format::Jsonl, What::Pages) => jsonl::pages(store, filter, out)?,
        (Format::Jsonl, _) => jsonl::edges(store, filter, out)?,
        (Format::Graphml, _) => graphml::graph(store, filter, out)?,
        (Format::Dot, _) => dot::graph(store, filter, out)?,
        (Format::Sitemap, _) => sitemap_xml::to_writer(store, sitemap_xml::MAX_URLS, out)?,
    };
    out.flush()?;
    Ok(n)
}
