//! JSON Lines: one object per line. Pages carry their outlinks.

use std::io::Write;

use serde::Serialize;

use super::filter::{EdgeOrder, Filter};
use super::rows::{edge_row, for_each, page_row, sqlite_err, PageRow};
use super::ExportError;
use crate::store::SqliteStore;

#[derive(Serialize)]
struct Outlink {
    url: String,
    kind: &'static str,
    nofollow: bool,
    /// Link text.
    #[serde(skip_serializing_if = "Option::is_none")]
    anchor: Option<String>,
    /// Occurrences, when collapsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
}

#[derive(Serialize)]
struct PageLine<'a> {
    #[serde(flatten)]
    page: &'a PageRow,
    outlinks: &'a [Outlink],
}

/// Every URL the filter keeps with its outlinks in document order. Pages are read in id
/// order and edges sorted by source (SQLite sorts on disk when it must), and the two are
/// merged.
pub fn pages(
    store: &SqliteStore,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    let err = |e| sqlite_err(store, e);
    let conn = store.conn();
    let collapse = filter.collapse;
    let edge_tuple = |r: &rusqlite::Row<'_>| edge_row(r, collapse);
    let mut edges_st = conn
        .prepare(&filter.edges_sql(EdgeOrder::BySource))
        .map_err(err)?;
    let mut edges = edges_st.query([]).map_err(err)?;
    let mut next_edge = edges
        .next()
        .map_err(err)?
        .map(edge_tuple)
        .transpose()
        .map_err(err)?;
    let mut outlinks = Vec::new();
    let mut pages_st = conn.prepare(&filter.pages_sql()).map_err(err)?;
    let mut pages = pages_st.query([]).map_err(err)?;
    let mut n = 0;
    while let Some(r) = pages.next().map_err(err)? {
        let page = page_row(r).map_err(err)?;
        outlinks.clear();
        while let Some(edge) = &next_edge {
            if edge.src > page.id {
                break;
            }
            let edge = next_edge.take().expect("checked");
            if edge.src == page.id {
                outlinks.push(Outlink {
                    url: edge.to,
                    kind: edge.kind,
                    nofollow: edge.nofollow,
                    anchor: edge.anchor,
                    count: edge.count,
                });
            }
            next_edge = edges
                .next()
                .map_err(err)?
                .map(edge_tuple)
                .transpose()
                .map_err(err)?;
        }
        serde_json::to_writer(
            &mut *out,
            &PageLine {
                page: &page,
                outlinks: &outlinks,
            },
        )
        .map_err(std::io::Error::from)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    Ok(n)
}

/// Every edge the filter keeps, one object per line.
pub fn edges(
    store: &SqliteStore,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    let collapse = filter.collapse;
    let sql = filter.edges_sql(EdgeOrder::Stored);
    for_each(
        store,
        &sql,
        |r| edge_row(r, collapse),
        |row| {
            serde_json::to_writer(&mut *out, &row).map_err(std::io::Error::from)?;
            out.write_all(b"\n")?;
            Ok(())
        },
    )
}
