//! A report's rows for a table on the page, paged in SQL from the page's index
//! ([`super::cache`]): the same rows as `trawl report KIND --format json`, stored once in
//! the report's order, so a page of them is a primary-key range and a filtered page a
//! scan of that table alone, however large the crawl.

use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use super::cache::{Built, Cache, Part};
use super::UiError;
use crate::report::Kind;

/// Rows per page when the request names none, and the most it may name.
pub(super) const DEFAULT_LIMIT: u64 = 50;
const MAX_LIMIT: u64 = 1000;

/// Which rows a table wants: `?q=&offset=&limit=`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Window {
    /// Only rows with a URL containing this (ASCII case-insensitive).
    pub q: Option<String>,
    /// Matching rows skipped first.
    pub offset: u64,
    /// Rows at most.
    pub limit: u64,
    /// Only rows after this one (a page's `next`): the keyset way to page, whatever the
    /// filter.
    pub after: Option<i64>,
}

impl Window {
    /// From a query string; bad numbers fall back to the defaults.
    pub(super) fn parse(query: &str) -> Window {
        let mut w = Window {
            limit: DEFAULT_LIMIT,
            ..Window::default()
        };
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "q" if !v.is_empty() => w.q = Some(v.to_ascii_lowercase()),
                "offset" => w.offset = v.parse().unwrap_or(0),
                "limit" => w.limit = v.parse().unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
                "after" => w.after = v.parse().ok(),
                _ => {}
            }
        }
        w
    }
}

/// One page of a table: a report's rows, URLs, or a URL's links.
#[derive(Debug, Serialize)]
pub(super) struct Rows {
    pub offset: u64,
    pub limit: u64,
    /// Whether rows follow this page.
    pub more: bool,
    /// What to pass as `after` for the next page (`null` for a URL's links, paged by
    /// offset).
    pub next: Option<i64>,
    /// A report's rows: when they were read from the crawl file (ms since the epoch), and
    /// whether it has changed since (a running crawl's tables are rebuilt every so often,
    /// not per request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
    pub rows: Vec<Value>,
}

impl Window {
    /// A page of `rows` read with `LIMIT limit + 1` (the extra one only says more
    /// follow), each with its place for `after` when the table pages by it.
    pub(super) fn page(&self, mut rows: Vec<(Option<i64>, Value)>) -> Rows {
        let more = rows.len() as u64 > self.limit;
        rows.truncate(self.limit as usize);
        Rows {
            offset: self.offset,
            limit: self.limit,
            more,
            next: rows.last().and_then(|r| r.0).filter(|_| more),
            as_of: None,
            stale: None,
            rows: rows.into_iter().map(|r| r.1).collect(),
        }
    }
}

/// The rows of report `kind` in `window`.
pub(super) fn read(
    cache: &std::sync::Arc<Cache>,
    kind: Kind,
    window: &Window,
) -> Result<Rows, UiError> {
    let (conn, Built { at, stale }) = cache.ready(Part::Report(kind))?;
    let table = kind.as_str();
    // Without a filter, `ord` is a row's place: an offset is a range too.
    let (after, offset) = match (window.after, &window.q) {
        (Some(after), _) => (after, 0),
        (None, None) => (window.offset as i64, 0),
        (None, Some(_)) => (0, window.offset),
    };
    let mut st = conn
        .prepare(&format!(
            "SELECT ord, row FROM main.\"{table}\"
             WHERE ord > ?1 AND (?2 IS NULL OR instr(text, ?2) > 0)
             ORDER BY ord LIMIT ?3 OFFSET ?4"
        ))
        .map_err(|e| cache.index_err(e))?;
    let rows = st
        .query_map(params![after, window.q, window.limit + 1, offset], |r| {
            let row: String = r.get(1)?;
            Ok((
                Some(r.get(0)?),
                serde_json::from_str(&row).unwrap_or(Value::Null),
            ))
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| cache.index_err(e))?;
    Ok(Rows {
        as_of: Some(at),
        stale: Some(stale),
        ..window.page(rows)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_string_is_read_with_bounds() {
        let w = Window::parse("q=%2FP&offset=5&limit=99999&token=x&after=7");
        assert_eq!(w.q.as_deref(), Some("/p"));
        assert_eq!((w.offset, w.limit, w.after), (5, MAX_LIMIT, Some(7)));
        assert_eq!(Window::parse("limit=zz").limit, DEFAULT_LIMIT);
    }
}
