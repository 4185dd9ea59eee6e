//! The links part of `trawl diff`: both generations' edges counted per (page, target,
//! kind, fragment) in one SQLite GROUP BY over their union (a sort that spills to disk),
//! keeping the groups whose counts differ, in page order. Names come from the file's
//! current `urls`, which holds every URL any generation knew (rows are never dropped
//! from one generation to the next).

use super::{each_row, row, Change, DiffOptions, Side};
use crate::report::output::Out;
use crate::report::{kind_name, sql, ReportError};
use crate::store::SqliteStore;

fn query(from: &Side, to: &Side) -> String {
    format!(
        "SELECT coalesce(s.url, s.key), coalesce(d.url, d.key), x.kind, x.fragment, x.a, x.b
         FROM (SELECT src, dst, kind, fragment, sum(a) AS a, sum(b) AS b
               FROM (SELECT src, dst, kind, fragment, 1 AS a, 0 AS b FROM {}
                     UNION ALL
                     SELECT src, dst, kind, fragment, 0, 1 FROM {})
               GROUP BY src, dst, kind, fragment HAVING sum(a) <> sum(b)) x
         JOIN main.urls s ON s.id = x.src JOIN main.urls d ON d.id = x.dst
         ORDER BY x.src, x.dst, x.kind, x.fragment",
        from.edges(),
        to.edges()
    )
}

/// Write the links part.
pub(super) fn run(
    store: &SqliteStore,
    from: Side,
    to: Side,
    options: &DiffOptions,
    o: &mut Out<'_>,
) -> Result<(), ReportError> {
    let err = |e| sql(store, e);
    each_row(store, &query(&from, &to), o, |r, o| {
        let page: String = r.get(0).map_err(err)?;
        let target: String = r.get(1).map_err(err)?;
        let kind: i64 = r.get(2).map_err(err)?;
        let fragment: Option<String> = r.get(3).map_err(err)?;
        let (a, b): (i64, i64) = (r.get(4).map_err(err)?, r.get(5).map_err(err)?);
        let change = match b > a {
            true => Change::LinkAdded,
            false => Change::LinkRemoved,
        };
        if !options.wants(change) {
            return Ok(());
        }
        let url = match fragment {
            Some(f) => format!("{target}#{f}"),
            None => target,
        };
        let (a, b) = (Some(a.to_string()), Some(b.to_string()));
        row(o, change, url, a, b, Some(page), Some(kind_name(kind)))
    })
}
