//! One URL's view: what the crawl recorded of it, the pages linking to it (inlinks) and
//! the URLs it links to (outlinks), a page of each at a time.
//!
//! Outlinks are read by the page's rowid range in `edges` (`edges_from`, `outlinks`; schema
//! 8), by primary key. `edges` has no index by target and `urls` none by key (the crawl
//! keeps inserts fast and readers create no index), so the URL is found by the page's
//! index's `names` and its inlinks by its `inlinks` ([`super::cache`]). While a crawl
//! runs, a URL found since the index was built is looked for in `urls` itself (a scan).

use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;
use serde_json::{json, Value};

use super::cache::{Cache, Part};
use super::rows::{Rows, Window};
use super::UiError;
use crate::link::LinkKind;
use crate::store::UrlState;
use crate::url_norm::{canonical_key, parse_seed};

/// A URL and a page of its links.
#[derive(Debug, Serialize)]
pub(super) struct PageView {
    pub url: Value,
    /// Links to it in all (from the index: while a crawl runs, as of its last build).
    pub inlinks_total: i64,
    pub inlinks: Rows,
    pub outlinks: Rows,
}

/// The columns [`url_row`] reads.
pub(super) const URL_COLUMNS: &str =
    "id, coalesce(url, key), state, status, content_type, title, depth, \
     error_kind, error, fetched_at, fetch_ms, size, edges_from, outlinks";

/// The view of `url` (as fetched or in any spelling with its canonical key), or of id
/// `id`; `None` when the crawl does not know it. `window` pages both link lists (and `q`
/// filters them by the URL at the other end).
pub(super) fn read(
    cache: &Arc<Cache>,
    url: Option<&str>,
    id: Option<i64>,
    window: &Window,
) -> Result<Option<PageView>, UiError> {
    let err = |e| cache.index_err(e);
    let (names, built) = cache.ready(Part::Names)?;
    let id = match (id, url) {
        (Some(id), _) => Some(id),
        (None, Some(url)) => {
            let key = parse_seed(url).map(|u| canonical_key(&u)).ok();
            let key = key.as_deref().unwrap_or(url);
            let named = "SELECT id FROM main.names WHERE name = ?1 OR name = ?2 LIMIT 1";
            let scan = "SELECT id FROM crawl.urls WHERE key = ?1 OR url = ?2 LIMIT 1";
            let find = |sql| {
                names
                    .query_row(sql, params![key, url], |r| r.get::<_, i64>(0))
                    .optional()
            };
            match find(named).map_err(err)? {
                Some(id) => Some(id),
                None if built.stale => find(scan).map_err(err)?,
                None => None,
            }
        }
        (None, None) => None,
    };
    let Some(id) = id else { return Ok(None) };
    let found = names
        .query_row(
            &format!("SELECT {URL_COLUMNS} FROM crawl.urls WHERE id = ?1"),
            [id],
            url_row,
        )
        .optional()
        .map_err(err)?;
    let Some((id, range, view)) = found else {
        return Ok(None);
    };
    let (inl, _) = cache.ready(Part::Inlinks)?;
    let inlinks_total = inl
        .query_row(
            "SELECT count(*) FROM main.inlinks WHERE dst = ?1",
            [id],
            |r| r.get(0),
        )
        .map_err(err)?;
    Ok(Some(PageView {
        url: view,
        inlinks_total,
        inlinks: inlinks(&inl, id, window).map_err(err)?,
        outlinks: outlinks(&names, id, range, window).map_err(err)?,
    }))
}

/// A URL's id, its rowid range of edges (first rowid, count) when recorded, and its row as
/// JSON.
pub(super) type Found = (i64, Option<(i64, i64)>, Value);

/// One URL as the page shows it.
pub(super) fn url_row(r: &Row<'_>) -> rusqlite::Result<Found> {
    let id: i64 = r.get(0)?;
    let state = UrlState::from_code(r.get(2)?).map_or("unknown", UrlState::as_str);
    let range = match (r.get::<_, Option<i64>>(12)?, r.get::<_, Option<i64>>(13)?) {
        (Some(from), Some(n)) => Some((from, n)),
        _ => None,
    };
    let view = json!({
        "id": id,
        "url": r.get::<_, String>(1)?,
        "state": state,
        "status": r.get::<_, Option<i64>>(3)?,
        "content_type": r.get::<_, Option<String>>(4)?,
        "title": r.get::<_, Option<String>>(5)?,
        "depth": r.get::<_, i64>(6)?,
        "error_kind": r.get::<_, Option<String>>(7)?,
        "error": r.get::<_, Option<String>>(8)?,
        "fetched_at": r.get::<_, Option<i64>>(9)?,
        "fetch_ms": r.get::<_, Option<i64>>(10)?,
        "size": r.get::<_, Option<i64>>(11)?,
    });
    Ok((id, range, view))
}

/// The link columns, with `o` the URL at the other end.
const LINK_COLUMNS: &str = "o.id, coalesce(o.url, o.key), o.state, o.status, e.kind, e.anchor, \
     e.fragment, e.line, e.col";

/// Pages linking to `id`, in the order their links were stored, by the index's
/// `inlinks`.
fn inlinks(conn: &Connection, id: i64, w: &Window) -> rusqlite::Result<Rows> {
    let sql = format!(
        "SELECT {LINK_COLUMNS} FROM main.inlinks i JOIN crawl.edges e ON e.rowid = i.edge
             JOIN crawl.urls o ON o.id = e.src
         WHERE i.dst = ?1 AND (?2 IS NULL OR lower(coalesce(o.url, o.key)) LIKE '%' || ?2 || '%')
         ORDER BY i.edge LIMIT ?3 OFFSET ?4"
    );
    links(conn, &sql, params![id, w.q, w.limit + 1, w.offset], w)
}

/// What `id` links to, in document order: by its rowid range when recorded, else by a
/// scan for its edges.
fn outlinks(
    conn: &Connection,
    id: i64,
    range: Option<(i64, i64)>,
    w: &Window,
) -> rusqlite::Result<Rows> {
    let filter = "(?3 IS NULL OR lower(coalesce(o.url, o.key)) LIKE '%' || ?3 || '%')";
    let (lo, hi) = match range {
        Some((from, n)) => (from, from + n),
        None => (i64::MIN, i64::MAX),
    };
    let sql = format!(
        "SELECT {LINK_COLUMNS} FROM crawl.edges e JOIN crawl.urls o ON o.id = e.dst
         WHERE e.rowid >= ?1 AND e.rowid < ?2 AND e.src = ?6 AND {filter}
         ORDER BY e.rowid LIMIT ?4 OFFSET ?5"
    );
    links(
        conn,
        &sql,
        params![lo, hi, w.q, w.limit + 1, w.offset, id],
        w,
    )
}

fn links(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    w: &Window,
) -> rusqlite::Result<Rows> {
    let mut st = conn.prepare(sql)?;
    let rows = st
        .query_map(params, |r| {
            let state = UrlState::from_code(r.get(2)?).map_or("unknown", UrlState::as_str);
            let kind = LinkKind::from_code(r.get(4)?).map_or("unknown", LinkKind::as_str);
            Ok((
                None,
                json!({
                    "id": r.get::<_, i64>(0)?,
                    "url": r.get::<_, String>(1)?,
                    "state": state,
                    "status": r.get::<_, Option<i64>>(3)?,
                    "kind": kind,
                    "anchor": r.get::<_, Option<String>>(5)?,
                    "fragment": r.get::<_, Option<String>>(6)?,
                    "line": r.get::<_, Option<i64>>(7)?,
                    "column": r.get::<_, Option<i64>>(8)?,
                }),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(w.page(rows))
}
