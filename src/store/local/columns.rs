//! The columns of `urls` a page's result fills, written once: the single writer's
//! `UPDATE` of a fetched page and the copy of a Redis crawl's `INSERT` both bind a
//! [`PageResult`] through here, so a new field of the result is one line here (and its
//! migration).

use std::sync::LazyLock;

use rusqlite::types::Type;
use rusqlite::Error::FromSqlConversionFailure;
use rusqlite::{Row, Statement};

use crate::result::{ErrorKind, PageResult, Unchanged};

/// The result's columns, in the order [`bind`] binds them.
pub const COLUMNS: [&str; 17] = [
    "status",
    "content_type",
    "size",
    "truncated",
    "title",
    "fetched_at",
    "fetch_ms",
    "error_kind",
    "error",
    "attempts",
    "noindex",
    "last_modified",
    "ids",
    "checked",
    "etag",
    "content_hash",
    "unchanged",
];

/// Bind `result`'s values (all NULL for a URL never fetched) from parameter `first` on.
pub fn bind(
    st: &mut Statement<'_>,
    first: usize,
    result: Option<&PageResult>,
) -> rusqlite::Result<()> {
    let r = result;
    let i = first;
    st.raw_bind_parameter(i, r.and_then(|r| r.status))?;
    st.raw_bind_parameter(i + 1, r.and_then(|r| r.content_type.as_deref()))?;
    st.raw_bind_parameter(i + 2, r.and_then(|r| r.size.map(|s| s as i64)))?;
    st.raw_bind_parameter(i + 3, r.map(|r| r.truncated))?;
    st.raw_bind_parameter(i + 4, r.and_then(|r| r.title.as_deref()))?;
    st.raw_bind_parameter(i + 5, r.map(|r| r.fetched_at))?;
    st.raw_bind_parameter(i + 6, r.map(|r| r.fetch_ms as i64))?;
    st.raw_bind_parameter(i + 7, r.and_then(|r| r.error_kind.map(|k| k.as_str())))?;
    st.raw_bind_parameter(i + 8, r.and_then(|r| r.error.as_deref()))?;
    st.raw_bind_parameter(i + 9, r.map(|r| r.attempts))?;
    st.raw_bind_parameter(i + 10, r.map(|r| r.noindex))?;
    st.raw_bind_parameter(i + 11, r.and_then(|r| r.last_modified.as_deref()))?;
    st.raw_bind_parameter(i + 12, r.and_then(|r| r.ids.as_deref()))?;
    // NULL unless checked: a crawled page's row stays as before.
    st.raw_bind_parameter(i + 13, r.and_then(|r| r.checked.then_some(1)))?;
    st.raw_bind_parameter(i + 14, r.and_then(|r| r.etag.as_deref()))?;
    let hash = r.and_then(|r| r.content_hash).map(hash_text);
    st.raw_bind_parameter(i + 15, hash)?;
    st.raw_bind_parameter(i + 16, r.and_then(|r| r.unchanged.map(Unchanged::code)))
}

/// A content hash as stored: 32 hex digits.
pub fn hash_text(hash: u128) -> String {
    format!("{hash:032x}")
}

/// A stored content hash read back (`None` for NULL or text trawl did not write).
pub fn hash_from_text(text: Option<String>) -> Option<u128> {
    text.and_then(|h| u128::from_str_radix(&h, 16).ok())
}

/// The result read back from `row`'s columns from `first` on (selected as [`names`]
/// gives them), for a URL at `depth` that `failed` or not; `None` for one never fetched.
pub fn read(
    row: &Row<'_>,
    first: usize,
    depth: u32,
    failed: bool,
) -> rusqlite::Result<Option<PageResult>> {
    let i = first;
    let Some(fetched_at) = row.get::<_, Option<i64>>(i + 5)? else {
        return Ok(None);
    };
    let error_kind = row
        .get::<_, Option<String>>(i + 7)?
        .map(|k| k.parse::<ErrorKind>())
        .transpose()
        .map_err(|e| FromSqlConversionFailure(i + 7, Type::Text, e.into()))?;
    Ok(Some(PageResult {
        depth,
        failed,
        status: row.get(i)?,
        content_type: row.get(i + 1)?,
        size: row.get::<_, Option<i64>>(i + 2)?.map(|n| n as u64),
        truncated: row.get::<_, Option<bool>>(i + 3)?.unwrap_or(false),
        title: row.get(i + 4)?,
        fetched_at,
        fetch_ms: row.get::<_, Option<i64>>(i + 6)?.unwrap_or(0) as u64,
        error_kind,
        error: row.get(i + 8)?,
        attempts: row.get::<_, Option<u32>>(i + 9)?.unwrap_or(1),
        noindex: row.get::<_, Option<bool>>(i + 10)?.unwrap_or(false),
        last_modified: row.get(i + 11)?,
        ids: row.get(i + 12)?,
        checked: row.get::<_, Option<bool>>(i + 13)?.unwrap_or(false),
        etag: row.get(i + 14)?,
        content_hash: hash_from_text(row.get(i + 15)?),
        unchanged: row
            .get::<_, Option<i64>>(i + 16)?
            .and_then(Unchanged::from_code),
    }))
}

/// `c1 = ?N, c2 = ?N+1, ...` for an `UPDATE`, parameters from `first` on.
pub fn assignments(first: usize) -> String {
    COLUMNS
        .iter()
        .enumerate()
        .map(|(k, c)| format!("{c} = ?{}", first + k))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `c1, c2, ...` for an `INSERT` or a `SELECT` (each prefixed `table.` when given).
pub fn names_of(table: &str) -> String {
    COLUMNS
        .iter()
        .map(|c| format!("{table}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The writer's statement for a fetched page: ?1 its id, ?2 its state, ?3 its depth (kept
/// when it was found along a shorter path since), then the result's columns.
pub static UPDATE_PAGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE urls SET state = ?2, depth = min(depth, ?3), {}, edges_from = ?{}, \
         outlinks = ?{} WHERE id = ?1",
        assignments(4),
        4 + COLUMNS.len(),
        5 + COLUMNS.len()
    )
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_is_bound_and_read_back() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let cols: Vec<String> = COLUMNS.iter().map(|c| format!("{c} ANY")).collect();
        conn.execute_batch(&format!("CREATE TABLE t ({})", cols.join(", ")))
            .unwrap();
        let marks: Vec<String> = (1..=COLUMNS.len()).map(|i| format!("?{i}")).collect();
        let mut st = conn
            .prepare(&format!(
                "INSERT INTO t ({}) VALUES ({})",
                names_of(""),
                marks.join(", ")
            ))
            .unwrap();
        let r = PageResult {
            attempts: 2,
            status: Some(200),
            title: Some("t".into()),
            ids: Some("a\nb".into()),
            checked: true,
            etag: Some("\"v1\"".into()),
            content_hash: Some(u128::MAX - 7),
            unchanged: Some(Unchanged::NotModified),
            ..PageResult::default()
        };
        bind(&mut st, 1, Some(&r)).unwrap();
        assert_eq!(st.raw_execute().unwrap(), 1);
        let (status, title, attempts): (u16, String, u32) = conn
            .query_row("SELECT status, title, attempts FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!((status, title.as_str(), attempts), (200, "t", 2));
        let back = conn
            .query_row(&format!("SELECT {} FROM t", names_of("")), [], |row| {
                read(row, 0, 0, false)
            })
            .unwrap();
        assert_eq!(back.as_ref(), Some(&r), "every field round-trips");
        assert!(UPDATE_PAGE.contains("noindex = ?14"));
    }
}
