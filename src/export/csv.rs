//! CSV (RFC 4180, header row): pages or edges, one record per row.

use std::io::Write;

use super::filter::{EdgeOrder, Filter};
use super::rows::{edge_row, for_each, page_row};
use super::ExportError;
use crate::store::SqliteStore;

fn csv_err(e: csv::Error) -> ExportError {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => ExportError::Io(io),
        other => ExportError::Io(std::io::Error::other(format!("{other:?}"))),
    }
}

/// Every URL the filter keeps: one row each.
pub fn pages(
    store: &SqliteStore,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    let mut w = csv::Writer::from_writer(out);
    let n = for_each(store, &filter.pages_sql(), page_row, |row| {
        w.serialize(row).map_err(csv_err)
    })?;
    w.flush()?;
    Ok(n)
}

/// Every edge the filter keeps: from, to, kind, nofollow (and count when collapsed).
pub fn edges(
    store: &SqliteStore,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    let mut w = csv::Writer::from_writer(out);
    // The header is written by hand rather than by serde so an empty graph still has one
    // and the collapsed form can add its column.
    let mut header = vec!["from", "to", "kind", "nofollow", "anchor"];
    if filter.collapse {
        header.push("count");
    }
    w.write_record(&header).map_err(csv_err)?;
    let collapse = filter.collapse;
    let n = for_each(
        store,
        &filter.edges_sql(EdgeOrder::Stored),
        |r| edge_row(r, collapse),
        |row| {
            let nofollow = if row.nofollow { "true" } else { "false" };
            let anchor = row.anchor.as_deref().unwrap_or("");
            match row.count {
                Some(count) => w.write_record([
                    row.from.as_str(),
                    &row.to,
                    row.kind,
                    nofollow,
                    anchor,
                    &count.to_string(),
                ]),
                None => w.write_record([row.from.as_str(), &row.to, row.kind, nofollow, anchor]),
            }
            .map_err(csv_err)
        },
    )?;
    w.flush()?;
    Ok(n)
}
