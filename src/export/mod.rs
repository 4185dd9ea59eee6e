//! Export: the pages and the link graph out of a crawl's file, streaming.
//!
//! Rows are read with SQLite cursors and written as they come, so memory stays constant
//! however large the crawl; the only sort (edges grouped under their page for JSON Lines
//! pages) is SQLite's, which spills to disk. One file per format.

mod csv;
mod jsonl;
mod rows;

use std::io::Write;
use std::str::FromStr;

pub use rows::{EdgeRow, PageRow};

use crate::store::{SqliteStore, StoreError};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "csv" => Ok(Format::Csv),
            "jsonl" => Ok(Format::Jsonl),
            _ => Err(format!("unknown export format {s:?}; use csv or jsonl")),
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
}

impl FromStr for What {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pages" => Ok(What::Pages),
            "edges" => Ok(What::Edges),
            _ => Err(format!(
                "unknown export selection {s:?}; use pages or edges"
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
}

impl ExportError {
    /// The reader went away (`trawl export | head`): not an error for the user.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ExportError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Write `what` from `store` to `out` as `format`; returns the number of records.
pub fn export(
    store: &SqliteStore,
    format: Format,
    what: What,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    let n = match (format, what) {
        (Format::Csv, What::Pages) => csv::pages(store, out)?,
        (Format::Csv, What::Edges) => csv::edges(store, out)?,
        (Format::Jsonl, What::Pages) => jsonl::pages(store, out)?,
        (Format::Jsonl, What::Edges) => jsonl::edges(store, out)?,
    };
    out.flush()?;
    Ok(n)
}
