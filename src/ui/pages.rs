//! `/api/pages`: every URL the crawl knows, in the order it found them, a page at a time
//! (the crawl's own table, as a site auditor's main view), filtered by URL substring, state
//! and status class.
//!
//! Paged by primary key (`after`, a page's `next`): any page of the unfiltered table is a
//! range read. A filter is checked row by row from there, so a rare match on a huge crawl
//! reads far; `urls` has no index on its text, and the filter stops at a page of matches.

use std::path::Path;

use rusqlite::params;

use super::page::{url_row, URL_COLUMNS};
use super::rows::{Rows, Window};
use super::UiError;
use crate::store::{OpenMode, SqliteStore, StoreError, UrlState};

/// Which URLs: `state=done|failed|skipped|queued`, `class=2xx|3xx|4xx|5xx`.
#[derive(Debug, Default, PartialEq, Eq)]
struct Filter {
    state: Option<i64>,
    class: Option<i64>,
}

impl Filter {
    fn parse(query: &str) -> Filter {
        let mut f = Filter::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "state" => {
                    f.state = (0..=3)
                        .filter_map(UrlState::from_code)
                        .find(|s| s.as_str() == v)
                        .map(|s| s as i64)
                }
                "class" => {
                    f.class = v
                        .strip_suffix("xx")
                        .and_then(|d| d.parse().ok())
                        .filter(|d| (1..=5).contains(d))
                }
                _ => {}
            }
        }
        f
    }
}

/// The URLs of the crawl file `db` in `window`, filtered as `query` says.
pub(super) fn read(db: &Path, window: &Window, query: &str) -> Result<Rows, UiError> {
    let store = SqliteStore::open(db, OpenMode::Read)?;
    let filter = Filter::parse(query);
    let err = |source| {
        UiError::Store(StoreError::Sqlite {
            path: db.display().to_string(),
            source,
        })
    };
    let (after, offset) = match window.after {
        Some(after) => (after, 0),
        None => (0, window.offset),
    };
    let mut st = store
        .conn()
        .prepare(&format!(
            "SELECT {URL_COLUMNS} FROM urls
             WHERE id > ?1
               AND (?2 IS NULL OR instr(lower(coalesce(url, key)), ?2) > 0)
               AND (?3 IS NULL OR state = ?3)
               AND (?4 IS NULL OR status / 100 = ?4)
             ORDER BY id LIMIT ?5 OFFSET ?6"
        ))
        .map_err(err)?;
    let query = params![
        after,
        window.q,
        filter.state,
        filter.class,
        window.limit + 1,
        offset
    ];
    let rows = st
        .query_map(query, |r| url_row(r).map(|(id, _, view)| (Some(id), view)))
        .map_err(err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(err)?;
    Ok(window.page(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_from_the_query() {
        assert_eq!(
            Filter::parse("state=failed&class=4xx"),
            Filter {
                state: Some(UrlState::Failed as i64),
                class: Some(4)
            }
        );
        assert_eq!(Filter::parse("state=zz&class=9xx"), Filter::default());
    }
}
