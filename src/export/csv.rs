//! CSV (RFC 4180, header row): pages or edges, one record per row.

use std::io::Write;

use super::rows::{edge_row, for_each, page_row, EDGES_SQL, PAGES_SQL};
use super::ExportError;
use crate::store::SqliteStore;

fn csv_err(e: csv::Error) -> ExportError {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => ExportError::Io(io),
        other => ExportError::Io(std::io::Error::other(format!("{other:?}"))),
    }
}

/// Every URL: one row each.
pub fn pages(store: &SqliteStore, out: &mut dyn Write) -> Result<u64, ExportError> {
    let mut w = csv::Writer::from_writer(out);
    let n = for_each(store, PAGES_SQL, page_row, |row| {
        w.serialize(row).map_err(csv_err)
    })?;
    w.flush()?;
    Ok(n)
}

/// Every edge: from, to, kind, nofollow.
pub fn edges(store: &SqliteStore, out: &mut dyn Write) -> Result<u64, ExportError> {
    let mut w = csv::Writer::from_writer(out);
    let n = for_each(store, EDGES_SQL, edge_row, |row| {
        w.serialize(row).map_err(csv_err)
    })?;
    if n == 0 {
        // serialize writes the header with the first row; an empty graph still gets one.
        w.write_record(["from", "to", "kind", "nofollow"])
            .map_err(csv_err)?;
    }
    w.flush()?;
    Ok(n)
}
