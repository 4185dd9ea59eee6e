//! JSON Lines: one object per line. Pages carry their outlinks.

use std::io::Write;

use serde::Serialize;

use super::rows::{edge_row, for_each, page_row, sqlite_err, PageRow, EDGES_SQL};
use super::ExportError;
use crate::link::LinkKind;
use crate::store::SqliteStore;

#[derive(Serialize)]
struct Outlink {
    url: String,
    kind: &'static str,
    nofollow: bool,
}

#[derive(Serialize)]
struct PageLine<'a> {
    #[serde(flatten)]
    page: &'a PageRow,
    outlinks: &'a [Outlink],
}

/// Every URL with its outlinks in document order. Pages are read in id order and edges
/// sorted by source (SQLite sorts on disk when it must), and the two are merged.
pub fn pages(store: &SqliteStore, out: &mut dyn Write) -> Result<u64, ExportError> {
    let err = |e| sqlite_err(store, e);
    let conn = store.conn();
    let mut edges_st = conn
        .prepare(
            "SELECT e.src, coalesce(d.url, d.key), e.kind, e.nofollow
             FROM edges e JOIN urls d ON d.id = e.dst ORDER BY e.src, e.rowid",
        )
        .map_err(err)?;
    let mut edges = edges_st.query([]).map_err(err)?;
    let mut next_edge = edges
        .next()
        .map_err(err)?
        .map(edge_tuple)
        .transpose()
        .map_err(err)?;
    let mut outlinks = Vec::new();
    let mut pages_st = conn.prepare(super::rows::PAGES_SQL).map_err(err)?;
    let mut pages = pages_st.query([]).map_err(err)?;
    let mut n = 0;
    while let Some(r) = pages.next().map_err(err)? {
        let page = page_row(r).map_err(err)?;
        outlinks.clear();
        while let Some((src, _, _, _)) = &next_edge {
            if *src > page.id {
                break;
            }
            let (src, url, kind, nofollow) = next_edge.take().expect("checked");
            if src == page.id {
                outlinks.push(Outlink {
                    url,
                    kind,
                    nofollow,
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

fn edge_tuple(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, &'static str, bool)> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        LinkKind::from_code(r.get(2)?).map_or("unknown", LinkKind::as_str),
        r.get::<_, i64>(3)? != 0,
    ))
}

/// Every edge, one object per line.
pub fn edges(store: &SqliteStore, out: &mut dyn Write) -> Result<u64, ExportError> {
    for_each(store, EDGES_SQL, edge_row, |row| {
        serde_json::to_writer(&mut *out, &row).map_err(std::io::Error::from)?;
        out.write_all(b"\n")?;
        Ok(())
    })
}
