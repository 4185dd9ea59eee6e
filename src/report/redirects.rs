//! `redirects`: every redirect chain, from its first hop to where it ends.
//!
//! A hop is a 3xx response's `redirect` edge or a page's declarative `refresh` (`<meta
//! http-equiv=refresh>` or the header) to another URL. A chain starts at a URL with a hop
//! that no hop points at. Loops have no such start, so afterwards every URL with a hop no
//! chain has passed through starts one too (in key order, so a loop is reported once, from
//! its smallest URL). Each walk remembers its hops and stops at the first repeat: a loop
//! cannot hang it.
//!
//! Memory: the hops (one per redirecting URL) are held in a map, and the set of URLs
//! already reported; both are proportional to the redirects, not to the crawl.

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
    o.columns(&["start", "length", "final_status", "error", "chain", "via"])?;
    let err = |e| sql(store, e);
    let conn = store.conn();
    let mut chains = Chains {
        store,
        next: hops(store)?,
        hop_st: conn
            .prepare(
                "SELECT coalesce(url, key), state, status, error_kind, skip_reason
                 FROM urls WHERE id = ?1",
            )
            .map_err(err)?,
        reported: HashSet::new(),
    };
    let (redirect, refresh) = (LinkKind::Redirect.code(), LinkKind::Refresh.code());
    let has_hop = format!(
        "(status BETWEEN 300 AND 399
          OR id IN (SELECT src FROM edges WHERE kind = {refresh} AND src != dst))"
    );
    let passes = [
        format!(
            "SELECT id FROM urls WHERE {has_hop}
             AND id NOT IN (SELECT dst FROM edges
                            WHERE kind = {redirect} OR (kind = {refresh} AND src != dst))
             ORDER BY key"
        ),
        format!("SELECT id FROM urls WHERE {has_hop} ORDER BY key"),
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

/// Where each URL goes next, by id, and by which kind of hop. A page refreshing to
/// itself only reloads: that is no hop.
fn hops(store: &SqliteStore) -> Result<HashMap<i64, (i64, LinkKind)>, ReportError> {
    let err = |e| sql(store, e);
    let (redirect, refresh) = (LinkKind::Redirect.code(), LinkKind::Refresh.code());
    let mut next = HashMap::new();
    let mut st = store
        .conn()
        .prepare(&format!(
            "SELECT src, dst, kind FROM edges
             WHERE kind = {redirect} OR (kind = {refresh} AND src != dst) ORDER BY rowid"
        ))
        .map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let kind = LinkKind::from_code(r.get(2).map_err(err)?).unwrap_or(LinkKind::Redirect);
        // A URL answers once, so it has one redirect edge, and a page's first refresh is
        // the one a browser follows; keep the first.
        next.entry(r.get(0).map_err(err)?)
            .or_insert((r.get(1).map_err(err)?, kind));
    }
    Ok(next)
}

/// The walk over the redirect edges, and the 3xx URLs already reported.
struct Chains<'s> {
    store: &'s SqliteStore,
    next: HashMap<i64, (i64, LinkKind)>,
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
        let mut via = Vec::new();
        let mut seen = HashSet::from([start]);
        self.reported.insert(start);
        let mut cur = start;
        let mut looped = false;
        while let Some(&(to, kind)) = self.next.get(&cur) {
            let h = self.hop(to)?;
            chain.push(h.url);
            via.push(kind.as_str().to_owned());
            if !seen.insert(to) {
                looped = true;
                break;
            }
            if self.next.contains_key(&to) {
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
            Cell::List(via),
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
