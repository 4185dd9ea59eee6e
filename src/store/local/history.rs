//! The generations a file keeps (see `generations` for how a refresh makes them): which
//! there are, reading an earlier one as if it were the file's only crawl, and dropping
//! old ones (`trawl prune`).
//!
//! An earlier generation is read through TEMP views named `crawl`, `urls`, `edges` and
//! `spill` on the reader's own connection: SQLite resolves an unqualified name in `temp`
//! before `main`, so every report, export and status query reads generation N unchanged,
//! with nothing written to the file (a read-only connection may create TEMP objects).

use rusqlite::{params, Connection, OptionalExtension};

use super::error::StoreError;
use super::generations::{kept_edge_generations, rebuild_edges_view, EDGE_COLUMNS};
use super::sqlite::SqliteStore;

/// The schema version that added generations (`migrations/0007_generations.sql`): an
/// older file holds one generation, the first.
const GENERATIONS_SCHEMA: i64 = 7;

/// One generation kept in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    /// Its number: 1 for the first crawl, one more for each `--refresh`.
    pub number: i64,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// When it finished (Unix ms); `None` while it runs or was interrupted.
    pub finished_at: Option<i64>,
    /// Whether it is the file's latest (the one a crawl writes to).
    pub current: bool,
}

/// What `trawl prune` dropped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pruned {
    /// The generations dropped, oldest first.
    pub dropped: Vec<i64>,
    /// The generations kept, oldest first.
    pub kept: Vec<i64>,
    /// The file's size before and after (bytes, with its WAL).
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

impl SqliteStore {
    /// Every generation the file keeps, oldest first; the last is the current one.
    pub fn generations(&self) -> Result<Vec<Generation>, StoreError> {
        generations(self.conn()).map_err(|e| self.err(e))
    }

    /// Read generation `number` from now on: on a reader, every query on `crawl`, `urls`
    /// and `edges` then sees that generation as the file's crawl. The current generation
    /// is the file itself; an earlier one must still be kept (not pruned).
    pub fn read_generation(&self, number: i64) -> Result<(), StoreError> {
        let kept = self.generations()?;
        let Some(g) = kept.iter().find(|g| g.number == number) else {
            return Err(StoreError::NoGeneration {
                path: self.path().display().to_string(),
                asked: number,
                kept: kept.iter().map(|g| g.number.to_string()).collect(),
            });
        };
        if g.current {
            return Ok(());
        }
        shadow(self.conn(), g).map_err(|e| self.err(e))
    }

    /// Drop every generation but the newest `keep` (at least 1: the current one), and
    /// give the space back to the file system. A refresh that has not finished needs the
    /// generation before it: dropping that one is refused.
    pub fn prune(&mut self, keep: usize) -> Result<Pruned, StoreError> {
        let all = self.generations()?;
        let cut = all.len().saturating_sub(keep.max(1));
        let (dropped, kept) = all.split_at(cut);
        if let (Some(last_dropped), Some(current)) = (dropped.last(), kept.last()) {
            if current.finished_at.is_none() && last_dropped.number == current.number - 1 {
                return Err(StoreError::RefreshUnfinished {
                    path: self.path().display().to_string(),
                    generation: current.number,
                });
            }
        }
        let mut pruned = Pruned {
            dropped: dropped.iter().map(|g| g.number).collect(),
            kept: kept.iter().map(|g| g.number).collect(),
            bytes_before: self.bytes(),
            ..Pruned::default()
        };
        if !pruned.dropped.is_empty() {
            drop_generations(self.conn_mut(), &pruned.dropped).map_err(|e| self.err(e))?;
            // Dropped tables leave free pages inside the file: VACUUM returns them.
            self.conn()
                .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(|e| self.err(e))?;
        }
        pruned.bytes_after = self.bytes();
        Ok(pruned)
    }

    /// The file's size with its WAL.
    fn bytes(&self) -> u64 {
        let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let mut wal = self.path().as_os_str().to_owned();
        wal.push("-wal");
        size(self.path()) + size(std::path::Path::new(&wal))
    }
}

fn generations(conn: &Connection) -> rusqlite::Result<Vec<Generation>> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let current_sql = match version >= GENERATIONS_SCHEMA {
        true => "SELECT generation, started_at, finished_at FROM crawl WHERE id = 1",
        false => "SELECT 1, started_at, finished_at FROM crawl WHERE id = 1",
    };
    let current = conn
        .query_row(current_sql, [], |r| {
            Ok(Generation {
                number: r.get(0)?,
                started_at: r.get(1)?,
                finished_at: r.get(2)?,
                current: true,
            })
        })
        .optional()?;
    let mut all = Vec::new();
    if version >= GENERATIONS_SCHEMA {
        let mut st = conn.prepare(
            "SELECT generation, started_at, finished_at FROM generations ORDER BY generation",
        )?;
        let rows = st.query_map([], |r| {
            Ok(Generation {
                number: r.get(0)?,
                started_at: r.get(1)?,
                finished_at: r.get(2)?,
                current: false,
            })
        })?;
        for g in rows {
            all.push(g?);
        }
    }
    all.extend(current);
    Ok(all)
}

/// The TEMP views that make `g` the crawl this connection reads.
fn shadow(conn: &Connection, g: &Generation) -> rusqlite::Result<()> {
    let n = g.number;
    let urls = columns_of(conn, "urls")?.join(", ");
    let crawl = columns_of(conn, "crawl")?
        .into_iter()
        .map(|c| match c.as_str() {
            "generation" => format!("{n} AS generation"),
            "started_at" => format!("{} AS started_at", g.started_at),
            "finished_at" => match g.finished_at {
                Some(at) => format!("{at} AS finished_at"),
                // An interrupted generation reads as one: `finished_at` NULL.
                None => "NULL AS finished_at".to_owned(),
            },
            "updated_at" => format!("{} AS updated_at", g.finished_at.unwrap_or(g.started_at)),
            "running_pid" => "NULL AS running_pid".to_owned(),
            _ => c,
        })
        .collect::<Vec<_>>()
        .join(", ");
    let edges = match kept_edge_generations(conn)?.contains(&n) {
        true => format!("SELECT rowid AS rowid, {EDGE_COLUMNS} FROM main.gen_edges_{n}"),
        // Kept URL rows without their edges cannot happen through trawl; read none.
        false => format!("SELECT rowid AS rowid, {EDGE_COLUMNS} FROM main.edges WHERE 0"),
    };
    conn.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp.crawl; DROP VIEW IF EXISTS temp.urls;
         DROP VIEW IF EXISTS temp.edges; DROP VIEW IF EXISTS temp.spill;
         CREATE TEMP VIEW crawl AS SELECT {crawl} FROM main.crawl;
         CREATE TEMP VIEW urls AS SELECT {urls} FROM main.gen_urls WHERE generation = {n};
         CREATE TEMP VIEW edges AS {edges};
         CREATE TEMP VIEW spill AS SELECT * FROM main.spill WHERE 0;"
    ))
}

/// A table's column names, in order.
fn columns_of(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
    let names = st.query_map([table], |r| r.get(0))?;
    names.collect()
}

fn drop_generations(conn: &mut Connection, numbers: &[i64]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for n in numbers {
        tx.execute("DELETE FROM gen_urls WHERE generation = ?1", params![n])?;
        tx.execute("DELETE FROM generations WHERE generation = ?1", params![n])?;
        tx.execute_batch(&format!("DROP TABLE IF EXISTS gen_edges_{n}"))?;
    }
    rebuild_edges_view(&tx)?;
    tx.commit()
}
