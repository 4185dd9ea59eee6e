//! `broken`: every URL whose fetch failed or that answered 4xx/5xx, once per page (and
//! link kind) pointing at it, ordered by target.
//!
//! Each (target, source, kind) is listed once, with one of the anchor texts used.
//!
//! Edges are scanned once and joined to `urls` by primary key; the matches are sorted by
//! SQLite (on disk when large). URLs with no incoming edge at all (a broken seed) are
//! listed once with no source.

use super::output::{Cell, Out};
use super::{kind_name, sql, ReportError};
use crate::store::SqliteStore;

const BROKEN: &str = "(d.state = 2 OR (d.state = 1 AND d.status >= 400))";

/// Write the report.
pub(super) fn run(store: &SqliteStore, o: &mut Out<'_>) -> Result<(), ReportError> {
    o.columns(&["target", "status", "error", "source", "kind", "anchor"])?;
    let query = format!(
        "SELECT coalesce(d.url, d.key) AS target, d.status, d.error_kind,
                coalesce(s.url, s.key) AS source, e.kind, d.key AS dk, s.key AS sk,
                max(e.anchor)
         FROM edges e JOIN urls d ON d.id = e.dst JOIN urls s ON s.id = e.src
         WHERE {BROKEN}
         GROUP BY e.dst, e.src, e.kind
         UNION ALL
         SELECT coalesce(d.url, d.key), d.status, d.error_kind, NULL, NULL, d.key, NULL, NULL
         FROM urls d WHERE {BROKEN} AND d.id NOT IN (SELECT dst FROM edges)
         ORDER BY dk, sk, kind"
    );
    let err = |e| sql(store, e);
    let mut st = store.conn().prepare(&query).map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while o.wants_more() {
        let Some(r) = rows.next().map_err(err)? else {
            break;
        };
        let kind: Option<i64> = r.get(4).map_err(err)?;
        o.row(vec![
            Cell::Text(r.get(0).map_err(err)?),
            Cell::opt_int(r.get(1).map_err(err)?),
            Cell::opt_text(r.get(2).map_err(err)?),
            Cell::opt_text(r.get(3).map_err(err)?),
            kind.map_or(Cell::Null, |k| Cell::Text(kind_name(k).to_owned())),
            Cell::opt_text(r.get(7).map_err(err)?),
        ])?;
    }
    Ok(())
}
