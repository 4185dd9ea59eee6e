//! The rows every format writes, read from SQLite one at a time.

use rusqlite::Row;
use serde::Serialize;

use crate::link::LinkKind;
use crate::store::{SqliteStore, StoreError, UrlState};

/// One URL as exported.
#[derive(Debug, Clone, Serialize)]
pub struct PageRow {
    /// `urls.id`.
    #[serde(skip)]
    pub id: i64,
    /// The URL fetched (or that would be).
    pub url: String,
    /// queued, done, failed or skipped.
    pub state: &'static str,
    /// HTTP status.
    pub status: Option<u16>,
    /// Content-Type.
    pub content_type: Option<String>,
    /// Body bytes.
    pub size: Option<i64>,
    /// Body cut at max-body.
    pub truncated: bool,
    /// Click depth.
    pub depth: u32,
    /// `<title>`.
    pub title: Option<String>,
    /// When fetched, Unix ms.
    pub fetched_at: Option<i64>,
    /// Request duration.
    pub fetch_ms: Option<i64>,
    /// Error class.
    pub error_kind: Option<String>,
    /// Error message.
    pub error: Option<String>,
    /// Why never fetched.
    pub skip_reason: Option<String>,
}

/// One edge as exported.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeRow {
    /// `urls.id` of the source.
    #[serde(skip)]
    pub src: i64,
    /// `urls.id` of the target.
    #[serde(skip)]
    pub dst: i64,
    /// Source URL.
    pub from: String,
    /// Target URL.
    pub to: String,
    /// a, area, link, iframe, frame, redirect, canonical or sitemap.
    pub kind: &'static str,
    /// rel=nofollow on the link (collapsed: on every occurrence).
    pub nofollow: bool,
    /// Occurrences, when edges are collapsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The link's text (for `<a>` links).
    pub anchor: Option<String>,
}

pub(super) fn page_row(r: &Row<'_>) -> rusqlite::Result<PageRow> {
    Ok(PageRow {
        id: r.get(0)?,
        url: r.get(1)?,
        state: UrlState::from_code(r.get(2)?).map_or("unknown", UrlState::as_str),
        status: r.get(3)?,
        content_type: r.get(4)?,
        size: r.get(5)?,
        truncated: r.get::<_, i64>(6)? != 0,
        depth: r.get(7)?,
        title: r.get(8)?,
        fetched_at: r.get(9)?,
        fetch_ms: r.get(10)?,
        error_kind: r.get(11)?,
        error: r.get(12)?,
        skip_reason: r.get(13)?,
    })
}

/// Reads the columns of [`super::filter::Filter::edges_sql`]; `count` is kept when
/// `collapsed`.
pub(super) fn edge_row(r: &Row<'_>, collapsed: bool) -> rusqlite::Result<EdgeRow> {
    Ok(EdgeRow {
        src: r.get(0)?,
        dst: r.get(1)?,
        from: r.get(2)?,
        to: r.get(3)?,
        kind: kind_name(r.get(4)?),
        nofollow: r.get::<_, i64>(5)? != 0,
        count: collapsed
            .then(|| r.get::<_, i64>(6))
            .transpose()?
            .map(|n| n as u64),
        anchor: r.get(7)?,
    })
}

/// The export name of an `edges.kind` code.
pub(super) fn kind_name(code: i64) -> &'static str {
    LinkKind::from_code(code).map_or("unknown", LinkKind::as_str)
}

/// Call `f` for every row of `sql`, streaming.
pub(super) fn for_each<T>(
    store: &SqliteStore,
    sql: &str,
    map: impl Fn(&Row<'_>) -> rusqlite::Result<T>,
    mut f: impl FnMut(T) -> Result<(), super::ExportError>,
) -> Result<u64, super::ExportError> {
    let err = |e| sqlite_err(store, e);
    let mut st = store.conn().prepare(sql).map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    let mut n = 0;
    while let Some(r) = rows.next().map_err(err)? {
        f(map(r).map_err(err)?)?;
        n += 1;
    }
    Ok(n)
}

pub(super) fn sqlite_err(store: &SqliteStore, e: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: store.path().display().to_string(),
        source: e,
    }
}
