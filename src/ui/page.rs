//! One URL's view: what the crawl recorded of it, the pages linking to it (inlinks) and
//! the URLs it links to (outlinks), a page of each at a time.
//!
//! Outlinks are read by the page's rowid range in `edges` (`edges_from`, `outlinks`; schema
//! 8), by primary key. `edges` has no index by target and `urls` none by key (the crawl
//! keeps inserts fast and readers create no index), so finding the URL and its inlinks is
//! one scan each, stopped as soon as a page of rows is found.

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;
use serde_json::{json, Value};

use super::rows::Window;
use crate::link::LinkKind;
use crate::store::{SqliteStore, UrlState};
use crate::url_norm::{canonical_key, parse_seed};

/// A URL and a page of its links.
#[derive(Debug, Serialize)]
pub(super) struct PageView {
    pub url: Value,
    pub inlinks: Links,
    pub outlinks: Links,
}

/// A page of links, each with the URL at its other end.
#[derive(Debug, Serialize)]
pub(super) struct Links {
    pub offset: u64,
    pub limit: u64,
    pub more: bool,
    pub rows: Vec<Value>,
}

const URL_COLUMNS: &str = "id, coalesce(url, key), state, status, content_type, title, depth, \
     error_kind, error, fetched_at, fetch_ms, size, edges_from, outlinks";

/// The view of `url` (as fetched or in any spelling with its canonical key), or of id
/// `id`; `None` when the crawl does not know it. `window` pages both link lists (and `q`
/// filters them by the URL at the other end).
pub(super) fn read(
    store: &SqliteStore,
    url: Option<&str>,
    id: Option<i64>,
    window: &Window,
) -> rusqlite::Result<Option<PageView>> {
    let conn = store.conn();
    let found = match (id, url) {
        (Some(id), _) => conn
            .query_row(
                &format!("SELECT {URL_COLUMNS} FROM urls WHERE id = ?1"),
                [id],
                url_row,
            )
            .optional()?,
        (None, Some(url)) => {
            let key = parse_seed(url).map(|u| canonical_key(&u)).ok();
            conn.query_row(
                &format!("SELECT {URL_COLUMNS} FROM urls WHERE key = ?1 OR url = ?2 LIMIT 1"),
                params![key.as_deref().unwrap_or(url), url],
                url_row,
            )
            .optional()?
        }
        (None, None) => None,
    };
    let Some((id, range, view)) = found else {
        return Ok(None);
    };
    Ok(Some(PageView {
        url: view,
        inlinks: inlinks(store, id, window)?,
        outlinks: outlinks(store, id, range, window)?,
    }))
}

/// A URL's id, its rowid range of edges (first rowid, count) when recorded, and its row as
/// JSON.
type Found = (i64, Option<(i64, i64)>, Value);

fn url_row(r: &Row<'_>) -> rusqlite::Result<Found> {
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

/// Pages linking to `id`, in the order their links were stored.
fn inlinks(store: &SqliteStore, id: i64, w: &Window) -> rusqlite::Result<Links> {
    let sql = format!(
        "SELECT {LINK_COLUMNS} FROM edges e JOIN urls o ON o.id = e.src
         WHERE e.dst = ?1 AND (?2 IS NULL OR lower(coalesce(o.url, o.key)) LIKE '%' || ?2 || '%')
         ORDER BY e.rowid LIMIT ?3 OFFSET ?4"
    );
    links(store, &sql, params![id, w.q, w.limit + 1, w.offset], w)
}

/// What `id` links to, in document order: by its rowid range when recorded, else by a
/// scan for its edges.
fn outlinks(
    store: &SqliteStore,
    id: i64,
    range: Option<(i64, i64)>,
    w: &Window,
) -> rusqlite::Result<Links> {
    let filter = "(?3 IS NULL OR lower(coalesce(o.url, o.key)) LIKE '%' || ?3 || '%')";
    let (lo, hi) = match range {
        Some((from, n)) => (from, from + n),
        None => (i64::MIN, i64::MAX),
    };
    let sql = format!(
        "SELECT {LINK_COLUMNS} FROM edges e JOIN urls o ON o.id = e.dst
         WHERE e.rowid >= ?1 AND e.rowid < ?2 AND e.src = ?6 AND {filter}
         ORDER BY e.rowid LIMIT ?4 OFFSET ?5"
    );
    links(
        store,
        &sql,
        params![lo, hi, w.q, w.limit + 1, w.offset, id],
        w,
    )
}

fn links(
    store: &SqliteStore,
    sql: &str,
    params: impl rusqlite::Params,
    w: &Window,
) -> rusqlite::Result<Links> {
    let mut st = store.conn().prepare(sql)?;
    let mut rows: Vec<Value> = st
        .query_map(params, |r| {
            let state = UrlState::from_code(r.get(2)?).map_or("unknown", UrlState::as_str);
            let kind = LinkKind::from_code(r.get(4)?).map_or("unknown", LinkKind::as_str);
            Ok(json!({
                "id": r.get::<_, i64>(0)?,
                "url": r.get::<_, String>(1)?,
                "state": state,
                "status": r.get::<_, Option<i64>>(3)?,
                "kind": kind,
                "anchor": r.get::<_, Option<String>>(5)?,
                "fragment": r.get::<_, Option<String>>(6)?,
                "line": r.get::<_, Option<i64>>(7)?,
                "column": r.get::<_, Option<i64>>(8)?,
            }))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let more = rows.len() as u64 > w.limit;
    rows.truncate(w.limit as usize);
    Ok(Links {
        offset: w.offset,
        limit: w.limit,
        more,
        rows,
    })
}
