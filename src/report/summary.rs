//! `summary`: one row per figure, as (section, name, value): URLs by state, fetched
//! URLs by status class, content type (the `limit` most common, parameters dropped), host
//! (the `limit` with most URLs), error kind and skip reason; then the crawl's times, with
//! its duration and rate taken from the first and last fetch.
//!
//! Each section is one `GROUP BY` over `urls`.

use super::output::{Cell, Out};
use super::{sql, ReportError};
use crate::store::{SqliteStore, UrlState};

/// How a section names the group of a row.
type Label = fn(&rusqlite::Row<'_>) -> rusqlite::Result<String>;

/// The sections counted from `urls`: name, query (`?1` is the limit), and group label.
const SECTIONS: [(&str, &str, Label); 6] = [
    (
        "state",
        "SELECT state, count(*) FROM urls WHERE ?1 = ?1 GROUP BY state ORDER BY state",
        state_label,
    ),
    (
        "status",
        "SELECT status / 100, count(*) FROM urls WHERE status IS NOT NULL AND ?1 = ?1
         GROUP BY status / 100 ORDER BY 1",
        status_label,
    ),
    (
        "content_type",
        "SELECT coalesce(lower(trim(CASE WHEN instr(content_type, ';') > 0
                    THEN substr(content_type, 1, instr(content_type, ';') - 1)
                    ELSE content_type END)), '(none)') AS t, count(*)
         FROM urls WHERE state = 1 GROUP BY t ORDER BY 2 DESC, t LIMIT ?1",
        text_label,
    ),
    (
        "host",
        "SELECT h.name, g.n FROM (SELECT host_id, count(*) AS n FROM urls GROUP BY host_id) g
         JOIN hosts h ON h.id = g.host_id ORDER BY g.n DESC, h.name LIMIT ?1",
        text_label,
    ),
    (
        "error",
        "SELECT error_kind, count(*) FROM urls WHERE error_kind IS NOT NULL AND ?1 = ?1
         GROUP BY error_kind ORDER BY 2 DESC, 1",
        text_label,
    ),
    (
        "skipped",
        "SELECT coalesce(skip_reason, 'unknown'), count(*) FROM urls WHERE state = 3 AND ?1 = ?1
         GROUP BY 1 ORDER BY 2 DESC, 1",
        text_label,
    ),
];

fn state_label(r: &rusqlite::Row<'_>) -> rusqlite::Result<String> {
    Ok(UrlState::from_code(r.get(0)?)
        .map_or("unknown", UrlState::as_str)
        .to_owned())
}

fn status_label(r: &rusqlite::Row<'_>) -> rusqlite::Result<String> {
    Ok(format!("{}xx", r.get::<_, i64>(0)?))
}

fn text_label(r: &rusqlite::Row<'_>) -> rusqlite::Result<String> {
    r.get::<_, String>(0)
}

/// Write the report.
pub(super) fn run(store: &SqliteStore, limit: u64, o: &mut Out<'_>) -> Result<(), ReportError> {
    o.columns(&["section", "name", "value"])?;
    let limit = limit.min(i64::MAX as u64) as i64;
    for (name, query, label) in SECTIONS {
        section(store, limit, o, name, query, label)?;
    }
    crawl_figures(store, o)
}

/// One row per group of `query`: (`name`, its label, its count).
fn section(
    store: &SqliteStore,
    limit: i64,
    o: &mut Out<'_>,
    name: &'static str,
    query: &str,
    label: Label,
) -> Result<(), ReportError> {
    let err = |e| sql(store, e);
    let mut st = store.conn().prepare(query).map_err(err)?;
    let mut rows = st.query([limit]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        o.row(vec![
            Cell::Text(name.to_owned()),
            Cell::Text(label(r).map_err(err)?),
            Cell::Int(r.get(1).map_err(err)?),
        ])?;
    }
    Ok(())
}

/// The `crawl` section: its times, and the fetch count, duration and rate between the
/// first and last fetch.
fn crawl_figures(store: &SqliteStore, o: &mut Out<'_>) -> Result<(), ReportError> {
    let crawl = store.crawl()?;
    let (first, last, fetched): (Option<i64>, Option<i64>, i64) = store
        .conn()
        .query_row(
            "SELECT min(fetched_at), max(fetched_at), count(*) FROM urls WHERE state IN (1, 2)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(|e| sql(store, e))?;
    let times = [
        ("started_at", crawl.as_ref().map(|c| c.started_at)),
        ("finished_at", crawl.as_ref().and_then(|c| c.finished_at)),
        ("first_fetch", first),
        ("last_fetch", last),
    ];
    for (name, ms) in times {
        crawl_row(o, name, ms.map_or(Cell::Null, |ms| Cell::Text(rfc3339(ms))))?;
    }
    let seconds = match (first, last) {
        (Some(a), Some(b)) => Some((b - a).max(0) as f64 / 1000.0),
        _ => None,
    };
    let figures = [
        ("fetched", Cell::Int(fetched)),
        ("duration_s", seconds.map_or(Cell::Null, Cell::Float)),
        (
            "pages_per_s",
            match seconds {
                Some(s) if s > 0.0 => Cell::Float(fetched as f64 / s),
                _ => Cell::Null,
            },
        ),
    ];
    for (name, value) in figures {
        crawl_row(o, name, value)?;
    }
    Ok(())
}

fn crawl_row(o: &mut Out<'_>, name: &str, value: Cell) -> Result<(), ReportError> {
    o.row(vec![
        Cell::Text("crawl".to_owned()),
        Cell::Text(name.to_owned()),
        value,
    ])
}

/// Unix milliseconds as RFC 3339 UTC.
fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}
