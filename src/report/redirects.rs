//! `redirects`: every redirect chain, from its first hop to where it ends.
//!
//! A chain starts at a URL that answered 3xx and that no redirect points at. Redirect
//! loops have no such start, so afterwards every 3xx URL no chain has passed through
//! starts one too (in key order, so a loop is reported once, from its smallest URL).
//! Each walk remembers its hops and stops at the first repeat: a loop cannot hang it.
//!
//! Memory: the `redirect` edges (one per 3xx URL) are held in a map, and the set of 3xx
//! URLs already reported; both are proportional to the redirects, not to the crawl.

use std::collections::{HashMap, HashSet};

use super::output::{Cell, Out};
use super::{sql, ReportError};
use crate::link::LinkKind;
use crate::store::{SqliteStore, UrlState};

/// What is known of one hop.
struct Hop {
    url: String,
    state: Option<UrlState>,
    status: Option<i64>,
    error_kind: Option<String>,
    skip_reason: Option<String>,
}

/// Write the report.
pub(super) fn run(store: &SqliteStore, o: &mut Out<'_>) -> Result<(), ReportError> {
    o.columns(&["start", "length", "final_status", "error", "chain"])?;
    let err = |e| sql(store, e);
    let conn = store.conn();
    let redirect = LinkKind::Redirect.code();
    let mut chains = Chains {
        store,
        next: redirect_edges(store)?,
        hop_st: conn
            .prepare(
                "SELECT coalesce(url, key), state, status, error_kind, skip_reason
                 FROM urls WHERE id = ?1",
            )
            .map_err(err)?,
        reported: HashSet::new(),
    };
    let passes = [
        format!(
            "SELECT id FROM urls WHERE status BETWEEN 300 AND 399
             AND id NOT IN (SELECT dst FROM edges WHERE kind = {redirect}) ORDER BY key"
        ),
        "SELECT id FROM urls WHERE status BETWEEN 300 AND 399 ORDER BY key".to_owned(),
    ];
    for query in passes {
        let mut st = conn.prepare(&query).map_err(err)?;
        let mut starts = st.query([]).map_err(err)?;
        while let Some(r) = starts.next().map_err(err)? {
            if !o.wants_more() {
                return Ok(());
            }
            let start: i64 = r.get(0).map_err(err)?;
            if !chains.reported.contains(&start) {
                chains.write(start, o)?;
            }
        }
    }
    Ok(())
}

/// Where each URL redirects to, by id.
fn redirect_edges(store: &SqliteStore) -> Result<HashMap<i64, i64>, ReportError> {
    let err = |e| sql(store, e);
    let redirect = LinkKind::Redirect.code();
    let mut next: HashMap<i64, i64> = HashMap::new();
    let mut st = store
        .conn()
        .prepare(&format!(
            "SELECT src, dst FROM edges WHERE kind = {redirect} ORDER BY rowid"
        ))
        .map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        // A URL answers once, so it has one redirect edge; keep the first if not.
        next.entry(r.get(0).map_err(err)?)
            .or_insert(r.get(1).map_err(err)?);
    }
    Ok(next)
}

/// The walk over the redirect edges, and the 3xx URLs already reported.
struct Chains<'s> {
    store: &'s SqliteStore,
    next: HashMap<i64, i64>,
    hop_st: rusqlite::Statement<'s>,
    reported: HashSet<i64>,
}

impl Chains<'_> {
    fn hop(&mut self, id: i64) -> Result<Hop, ReportError> {
        self.hop_st
            .query_row([id], |r| {
                Ok(Hop {
                    url: r.get(0)?,
                    state: UrlState::from_code(r.get(1)?),
                    status: r.get(2)?,
                    error_kind: r.get(3)?,
                    skip_reason: r.get(4)?,
                })
            })
            .map_err(|e| sql(self.store, e).into())
    }

    /// Follow the chain from `start` to its end or its first repeat, and write its row.
    fn write(&mut self, start: i64, o: &mut Out<'_>) -> Result<(), ReportError> {
        let mut chain = vec![self.hop(start)?.url];
        let mut seen = HashSet::from([start]);
        self.reported.insert(start);
        let mut cur = start;
        let mut looped = false;
        while let Some(&to) = self.next.get(&cur) {
            let h = self.hop(to)?;
            chain.push(h.url);
            if !seen.insert(to) {
                looped = true;
                break;
            }
            if h.status.is_some_and(|s| (300..400).contains(&s)) {
                self.reported.insert(to);
            }
            cur = to;
        }
        let last = self.hop(cur)?;
        let (status, error) = if looped {
            (Cell::Null, Cell::Text("loop".to_owned()))
        } else {
            outcome(&last)
        };
        o.row(vec![
            Cell::Text(chain[0].clone()),
            Cell::Int(chain.len() as i64 - 1),
            status,
            error,
            Cell::List(chain),
        ])
    }
}

/// Final status and error of a chain ending at `last`: its status, or why it has none.
fn outcome(last: &Hop) -> (Cell, Cell) {
    let error = match last.state {
        Some(UrlState::Failed) => last.error_kind.clone(),
        Some(UrlState::Skipped) => Some(format!(
            "skipped: {}",
            last.skip_reason.as_deref().unwrap_or("unknown")
        )),
        Some(UrlState::Queued) => Some("not fetched yet".to_owned()),
        _ => None,
    };
    (Cell::opt_int(last.status), Cell::opt_text(error))
}
