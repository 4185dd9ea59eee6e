//! `top`: the most-linked URLs by in-degree (distinct pages linking to them, not counting
//! a page's links to itself nor redirect hops), with their PageRank.
//!
//! In-degrees are one `GROUP BY` over `edges`, which SQLite sorts on disk when large.
//! PageRank runs over the internal graph: HTML pages fetched with a 2xx answer, and the
//! distinct links between them other than self-links and redirects; a link to a redirect
//! does not pass through it. Damping 0.85; a page without outlinks spreads its rank over
//! every page; rounds stop when the ranks move by less than 1e-6 in total, or after 100.
//! Memory: the graph is held as arrays (compressed rows): 4 bytes per URL id, about 12
//! per page and 4 per distinct link, e.g. ~60 MB for 1M pages with 10M links.

use super::output::{Cell, Out};
use super::{id_space, sql, ReportError};
use crate::export::is_html_sql;
use crate::link::LinkKind;
use crate::store::SqliteStore;

const DAMPING: f64 = 0.85;
const TOLERANCE: f64 = 1e-6;
const MAX_ROUNDS: usize = 100;
const NOT_A_NODE: u32 = u32::MAX;

/// Write the `limit` most-linked URLs.
pub(super) fn run(store: &SqliteStore, limit: u64, o: &mut Out<'_>) -> Result<(), ReportError> {
    o.columns(&["url", "in_degree", "pagerank"])?;
    let (node_of, rank) = pagerank(store)?;
    let err = |e| sql(store, e);
    let redirect = LinkKind::Redirect.code();
    let mut st = store
        .conn()
        .prepare(&format!(
            "SELECT coalesce(u.url, u.key), g.n, u.id FROM (
                 SELECT dst, count(DISTINCT src) AS n FROM edges
                 WHERE src != dst AND kind != {redirect} GROUP BY dst) g
             JOIN urls u ON u.id = g.dst
             ORDER BY g.n DESC, u.key LIMIT ?1"
        ))
        .map_err(err)?;
    let mut rows = st.query([limit.min(i64::MAX as u64) as i64]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let id = r.get::<_, i64>(2).map_err(err)? as usize;
        let pr = match node_of.get(id) {
            Some(&n) if n != NOT_A_NODE => Cell::Float(rank[n as usize]),
            _ => Cell::Null,
        };
        o.row(vec![
            Cell::Text(r.get(0).map_err(err)?),
            Cell::Int(r.get(1).map_err(err)?),
            pr,
        ])?;
    }
    Ok(())
}

/// PageRank of the internal graph: (node index by URL id, rank by node index).
pub(super) fn pagerank(store: &SqliteStore) -> Result<(Vec<u32>, Vec<f64>), ReportError> {
    let (node_of, nodes) = page_nodes(store)?;
    if nodes == 0 {
        return Ok((node_of, Vec::new()));
    }
    let graph = Graph::read(store, &node_of, nodes)?;
    Ok((node_of, graph.rank()))
}

/// The node index of every page of the graph by URL id (`NOT_A_NODE` for other URLs),
/// in id order, and how many pages there are.
fn page_nodes(store: &SqliteStore) -> Result<(Vec<u32>, usize), ReportError> {
    let err = |e| sql(store, e);
    let mut node_of = vec![NOT_A_NODE; id_space(store)?];
    let mut n = 0u32;
    let mut st = store
        .conn()
        .prepare(&format!(
            "SELECT id FROM urls WHERE state = 1 AND status BETWEEN 200 AND 299 AND {}
             ORDER BY id",
            is_html_sql("content_type")
        ))
        .map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        node_of[r.get::<_, i64>(0).map_err(err)? as usize] = n;
        n += 1;
    }
    Ok((node_of, n as usize))
}

/// The links between pages, as compressed rows: the targets of node i are
/// `targets[start[i]..start[i + 1]]`.
struct Graph {
    start: Vec<u32>,
    targets: Vec<u32>,
}

impl Graph {
    /// The distinct links between the `nodes` pages other than self-links and redirects.
    fn read(store: &SqliteStore, node_of: &[u32], nodes: usize) -> Result<Graph, ReportError> {
        let err = |e| sql(store, e);
        let mut start = vec![0u32; nodes + 1];
        let mut targets: Vec<u32> = Vec::new();
        let redirect = LinkKind::Redirect.code();
        let mut st = store
            .conn()
            .prepare(&format!(
                "SELECT DISTINCT src, dst FROM edges
                 WHERE src != dst AND kind != {redirect} ORDER BY src, dst"
            ))
            .map_err(err)?;
        let mut rows = st.query([]).map_err(err)?;
        let node = |id: i64| {
            node_of
                .get(id as usize)
                .copied()
                .filter(|&x| x != NOT_A_NODE)
        };
        // Sources come sorted by id, and node indexes follow id order, so rows fill in order.
        while let Some(r) = rows.next().map_err(err)? {
            let (Some(s), Some(d)) = (node(r.get(0).map_err(err)?), node(r.get(1).map_err(err)?))
            else {
                continue;
            };
            targets.push(d);
            start[s as usize + 1] += 1;
        }
        for i in 0..nodes {
            start[i + 1] += start[i];
        }
        Ok(Graph { start, targets })
    }

    /// Power iteration from the uniform rank, to `TOLERANCE` or `MAX_ROUNDS`.
    fn rank(&self) -> Vec<f64> {
        let nodes = self.start.len() - 1;
        let uniform = 1.0 / nodes as f64;
        let mut rank = vec![uniform; nodes];
        let mut next = vec![0.0; nodes];
        for _ in 0..MAX_ROUNDS {
            self.round(&rank, &mut next, uniform);
            let moved: f64 = rank.iter().zip(&next).map(|(x, y)| (x - y).abs()).sum();
            std::mem::swap(&mut rank, &mut next);
            if moved < TOLERANCE {
                break;
            }
        }
        rank
    }

    /// One round: `next` from `rank`.
    fn round(&self, rank: &[f64], next: &mut [f64], uniform: f64) {
        let start = &self.start;
        let nodes = rank.len();
        let dangling: f64 = (0..nodes)
            .filter(|&i| start[i] == start[i + 1])
            .map(|i| rank[i])
            .sum();
        let base = (1.0 - DAMPING) * uniform + DAMPING * dangling * uniform;
        next.fill(base);
        for i in 0..nodes {
            let (a, b) = (start[i] as usize, start[i + 1] as usize);
            if a == b {
                continue;
            }
            let share = DAMPING * rank[i] / (b - a) as f64;
            for &t in &self.targets[a..b] {
                next[t as usize] += share;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranks_sum_to_one_and_favour_the_linked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        {
            let store =
                crate::store::SqliteStore::open(&path, crate::store::OpenMode::Crawl).unwrap();
            store
                .conn()
                .execute_batch(
                    "INSERT INTO hosts (id, name) VALUES (1, 'h');
                     INSERT INTO urls (id, key, host_id, depth, state, status, content_type)
                     VALUES (1, 'a', 1, 0, 1, 200, 'text/html'), (2, 'b', 1, 1, 1, 200, 'text/html'),
                            (3, 'c', 1, 1, 1, 200, 'text/html; charset=utf-8'),
                            (4, 'd.css', 1, 1, 1, 200, 'text/css');
                     INSERT INTO edges (src, dst, kind) VALUES
                       (1, 2, 0), (1, 3, 0), (2, 3, 0), (2, 3, 0), (3, 1, 0), (1, 4, 2), (3, 3, 0);",
                )
                .unwrap();
        }
        let store = crate::store::SqliteStore::open(&path, crate::store::OpenMode::Read).unwrap();
        let (node_of, rank) = super::pagerank(&store).unwrap();
        assert_eq!(rank.len(), 3);
        assert_eq!(node_of[4], super::NOT_A_NODE);
        let total: f64 = rank.iter().sum();
        assert!((total - 1.0).abs() < 1e-6, "{total}");
        // c is linked from a and b; b only from a.
        let (a, b, c) = (rank[0], rank[1], rank[2]);
        assert!(c > a && a > b, "{a} {b} {c}");
    }
}
