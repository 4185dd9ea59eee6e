//! `depth`: fetched pages per click depth, twice: as recorded (the depth at which the
//! crawl found each URL, lowered when it later found a shorter path), and the shortest
//! depth over the whole stored graph from the seeds. They differ when a crawl was limited
//! or interrupted, or seeds were added later.
//!
//! Shortest depths follow the crawl's rule: a link adds one, a redirect hop adds nothing.
//! They are computed by relaxing every edge until nothing changes (Bellman-Ford over 0/1
//! weights): each round is one sequential scan of `edges`, and since edges are stored in
//! roughly breadth-first order a few rounds usually suffice (at most one per depth level
//! plus one). Memory: one `u32` per URL id, the depth array; no adjacency is held.

use std::collections::{BTreeMap, HashSet};

use super::output::{Cell, Out};
use super::{id_space, sql, ReportError};
use crate::link::LinkKind;
use crate::store::SqliteStore;
use crate::url_norm::{canonical_key, parse_seed};

const UNREACHED: u32 = u32::MAX;

/// Write the report.
pub(super) fn run(store: &SqliteStore, o: &mut Out<'_>) -> Result<(), ReportError> {
    o.columns(&["depth", "recorded", "shortest"])?;
    let shortest = shortest_depths(store)?;
    let err = |e| sql(store, e);
    let mut by_depth: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    let mut unreached = 0i64;
    let mut st = store
        .conn()
        .prepare("SELECT id, depth FROM urls WHERE state IN (1, 2)")
        .map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let id: i64 = r.get(0).map_err(err)?;
        let recorded: u32 = r.get(1).map_err(err)?;
        by_depth.entry(recorded).or_default().0 += 1;
        match shortest.get(id as usize).copied().unwrap_or(UNREACHED) {
            UNREACHED => unreached += 1,
            d => by_depth.entry(d).or_default().1 += 1,
        }
    }
    for (depth, (recorded, shortest)) in by_depth {
        o.row(vec![
            Cell::Int(i64::from(depth)),
            Cell::Int(recorded),
            Cell::Int(shortest),
        ])?;
    }
    if unreached > 0 {
        // Depth null: fetched pages no path from a seed reaches in the stored graph.
        o.row(vec![Cell::Null, Cell::Null, Cell::Int(unreached)])?;
    }
    Ok(())
}

/// Shortest depth of every URL id from the seeds ([`UNREACHED`] when no path).
pub(super) fn shortest_depths(store: &SqliteStore) -> Result<Vec<u32>, ReportError> {
    let err = |e| sql(store, e);
    let crawl = store.crawl()?.ok_or_else(|| ReportError::NoCrawl {
        path: store.path().display().to_string(),
    })?;
    // A seed's row has its canonical key as `key`, or the seed as typed as `url`.
    let mut seeds: HashSet<String> = HashSet::new();
    for s in &crawl.seeds {
        seeds.insert(s.clone());
        if let Ok(u) = parse_seed(s) {
            seeds.insert(canonical_key(&u));
            seeds.insert(u.to_string());
        }
    }
    let mut depth = vec![UNREACHED; id_space(store)?];
    {
        let mut st = store
            .conn()
            .prepare("SELECT id, key, url FROM urls")
            .map_err(err)?;
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let key: String = r.get(1).map_err(err)?;
            let url: Option<String> = r.get(2).map_err(err)?;
            if seeds.contains(&key) || url.is_some_and(|u| seeds.contains(&u)) {
                let id: i64 = r.get(0).map_err(err)?;
                depth[id as usize] = 0;
            }
        }
    }
    let redirect = LinkKind::Redirect.code();
    let mut st = store
        .conn()
        .prepare("SELECT src, dst, kind FROM edges ORDER BY rowid")
        .map_err(err)?;
    loop {
        let mut changed = false;
        let mut rows = st.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let src = r.get::<_, i64>(0).map_err(err)? as usize;
            let dst = r.get::<_, i64>(1).map_err(err)? as usize;
            let (Some(&from), Some(&to)) = (depth.get(src), depth.get(dst)) else {
                continue;
            };
            if from == UNREACHED {
                continue;
            }
            let cost = u32::from(r.get::<_, i64>(2).map_err(err)? != redirect);
            if from + cost < to {
                depth[dst] = from + cost;
                changed = true;
            }
        }
        if !changed {
            return Ok(depth);
        }
    }
}
