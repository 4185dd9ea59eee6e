//! The rows every format writes, read from SQLite one at a time.

use rusqlite::Row;
use serde::Serialize;

use crate::link::LinkKind;
use crate::result::PageResult;
use crate::store::local::columns;
use crate::store::{SqliteStore, StoreError, UrlState};

/// One URL as exported: its row (state, depth, skip reason) and, once fetched, what
/// fetching it came to, the crate's one [`PageResult`]. Serialised flat, one column each:
/// `url, state, status, content_type, size, truncated, depth, title, fetched_at, fetch_ms,
/// error_kind, error, skip_reason`.
#[derive(Debug, Clone)]
pub struct PageRow {
    /// `urls.id`.
    pub id: i64,
    /// The URL fetched (or that would be).
    pub url: String,
    /// queued, done, failed or skipped.
    pub state: &'static str,
    /// Click depth.
    pub depth: u32,
    /// Why never fetched.
    pub skip_reason: Option<String>,
    /// What fetching it came to (done or failed URLs, and sitemap documents read).
    pub result: Option<PageResult>,
}

impl PageRow {
    /// The HTTP status, when fetched and answered.
    pub fn status(&self) -> Option<u16> {
        self.result.as_ref().and_then(|r| r.status)
    }
}

impl Serialize for PageRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let r = self.result.as_ref();
        let mut st = s.serialize_struct("PageRow", 13)?;
        st.serialize_field("url", &self.url)?;
        st.serialize_field("state", self.state)?;
        st.serialize_field("status", &r.and_then(|r| r.status))?;
        st.serialize_field("content_type", &r.and_then(|r| r.content_type.as_deref()))?;
        st.serialize_field("size", &r.and_then(|r| r.size))?;
        st.serialize_field("truncated", &r.is_some_and(|r| r.truncated))?;
        st.serialize_field("depth", &self.depth)?;
        st.serialize_field("title", &r.and_then(|r| r.title.as_deref()))?;
        st.serialize_field("fetched_at", &r.map(|r| r.fetched_at))?;
        st.serialize_field("fetch_ms", &r.map(|r| r.fetch_ms))?;
        st.serialize_field(
            "error_kind",
            &r.and_then(|r| r.error_kind.map(|k| k.as_str())),
        )?;
        st.serialize_field("error", &r.and_then(|r| r.error.as_deref()))?;
        st.serialize_field("skip_reason", &self.skip_reason)?;
        st.end()
    }
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

/// Reads the columns of [`super::filter::Filter::pages_sql`].
pub(super) fn page_row(r: &Row<'_>) -> rusqlite::Result<PageRow> {
    let state = UrlState::from_code(r.get(2)?);
    let depth = r.get(3)?;
    // A fetched URL (or a sitemap document read) has its result; one never fetched has none.
    let result = match state {
        Some(UrlState::Done | UrlState::Failed) => {
            columns::read(r, 5, depth, state == Some(UrlState::Failed))?
        }
        _ => None,
    };
    Ok(PageRow {
        id: r.get(0)?,
        url: r.get(1)?,
        state: state.map_or("unknown", UrlState::as_str),
        depth,
        skip_reason: r.get(4)?,
        result,
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
