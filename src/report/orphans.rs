//! `orphans`: URLs a sitemap lists (an incoming `sitemap` edge) that no fetched page links
//! to by any other kind of edge; a page's link to itself does not count.
//!
//! Both conditions are uncorrelated `IN` subqueries, so SQLite builds each set once from
//! one scan of `edges` (in temporary b-trees that spill to disk).

use super::output::{Cell, Out};
use super::{sql, ReportError};
use crate::link::LinkKind;
use crate::store::{SqliteStore, UrlState};

/// Write the report.
pub(super) fn run(store: &SqliteStore, o: &mut Out<'_>) -> Result<(), ReportError> {
    o.columns(&["url", "status", "state"])?;
    let sitemap = LinkKind::Sitemap.code();
    let done = UrlState::Done as i64;
    let query = format!(
        "SELECT coalesce(u.url, u.key), u.status, u.state FROM urls u
         WHERE u.id IN (SELECT dst FROM edges WHERE kind = {sitemap})
           AND u.id NOT IN (
               SELECT e.dst FROM edges e JOIN urls s ON s.id = e.src
               WHERE e.kind != {sitemap} AND s.state = {done} AND e.src != e.dst)
         ORDER BY u.key"
    );
    let err = |e| sql(store, e);
    let mut st = store.conn().prepare(&query).map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while o.wants_more() {
        let Some(r) = rows.next().map_err(err)? else {
            break;
        };
        let state = UrlState::from_code(r.get(2).map_err(err)?).map_or("unknown", UrlState::as_str);
        o.row(vec![
            Cell::Text(r.get(0).map_err(err)?),
            Cell::opt_int(r.get(1).map_err(err)?),
            Cell::Text(state.to_owned()),
        ])?;
    }
    Ok(())
}
