//! Generations of a crawl in one file (`trawl crawl --refresh`): the finished generation
//! is archived (its URL rows copied into `gen_urls`, its `edges` table kept whole as
//! `gen_edges_N`; see `migrations/0007_generations.sql`) and
//! the file starts the next one from every page it knows, asked again with the archived
//! validators (`refresh`). URL rows keep their ids across the step, so an archived edge
//! still names the same URLs in the new generation: a 304 page's links are carried over
//! by copying its archived edges, without parsing it again. A page's row records where
//! its edges are (`edges_from`, `outlinks`: a rowid range, see
//! `migrations/0008_edge_ranges.sql`), so the archive needs no index to find them.

use rusqlite::{params, OptionalExtension, Transaction};

use super::columns;
use super::error::StoreError;
use super::sqlite::SqliteStore;
use crate::refresh::Validators;
use crate::store::now_ms;

/// The columns of `urls` that are not a page's result ([`columns::COLUMNS`]).
const URL_OWN_COLUMNS: &str =
    "id, key, url, host_id, depth, state, skip_reason, referrer, edges_from, outlinks";

/// The columns of `edges`, as the writer inserts them.
pub(super) const EDGE_COLUMNS: &str = "src, dst, kind, nofollow, anchor, fragment, line, col";

/// What a 304 carries over from the previous generation's row: the page as it was read.
const CARRIED: &str = "status, content_type, size, truncated, title, noindex, last_modified, \
                       ids, etag, content_hash";

/// The previous generation's number, for queries during a refresh.
const PREVIOUS: &str = "(SELECT generation - 1 FROM crawl WHERE id = 1)";

/// Joins a query on `urls u` to the previous generation's row `g` of a page that answered
/// 2xx: what a refresh asks it with (`g.etag`, `g.last_modified`, `g.content_hash`; `g.id`
/// is NULL when there is nothing to ask with).
pub(super) const VALIDATORS_JOIN: &str = "LEFT JOIN gen_urls g
    ON g.generation = (SELECT generation - 1 FROM crawl WHERE id = 1)
    AND g.id = u.id AND g.status BETWEEN 200 AND 299";

/// The validators of a row selected with [`VALIDATORS_JOIN`], from column `first` on
/// ([`VALIDATORS`]).
pub(super) fn validators_at(
    r: &rusqlite::Row<'_>,
    first: usize,
) -> rusqlite::Result<Option<Validators>> {
    if !r.get::<_, bool>(first)? {
        return Ok(None);
    }
    Ok(Some(Validators {
        etag: r.get(first + 1)?,
        last_modified: r.get(first + 2)?,
        content_hash: columns::hash_from_text(r.get(first + 3)?),
        fetched_at: r.get(first + 4)?,
    }))
}

/// The columns [`validators_at`] reads.
pub(super) const VALIDATORS: &str =
    "g.id IS NOT NULL, g.etag, g.last_modified, g.content_hash, g.fetched_at";

/// A new generation begun: its number, and how many pages it asks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Begun {
    /// The new generation's number.
    pub generation: i64,
    /// Pages queued to be asked again.
    pub queued: usize,
}

impl SqliteStore {
    /// Archive the finished generation and start the next: every URL fetched before (not
    /// the skipped ones, nor sitemap documents) is queued again, with its result cleared
    /// (the archive keeps it); the links are written again as each page is read or carried
    /// over. One transaction: an interruption leaves the file as it was, or the new
    /// generation begun and resumable.
    pub fn start_generation(&mut self) -> Result<Begun, StoreError> {
        let begun = (|| {
            let tx = self.conn_mut().transaction()?;
            let generation: i64 =
                tx.query_row("SELECT generation FROM crawl WHERE id = 1", [], |r| {
                    r.get(0)
                })?;
            let urls = format!("{URL_OWN_COLUMNS}, {}", columns::names_of(""));
            tx.execute(
                &format!("INSERT INTO gen_urls (generation, {urls}) SELECT ?1, {urls} FROM urls"),
                [generation],
            )?;
            archive_edges(&tx, generation)?;
            tx.execute(
                "INSERT INTO generations (generation, started_at, finished_at)
                 SELECT ?1, started_at, finished_at FROM crawl WHERE id = 1",
                [generation],
            )?;
            let mut st = tx.prepare(&format!(
                "UPDATE urls SET state = 0, edges_from = NULL, outlinks = NULL, {}
                 WHERE state IN (1, 2) AND skip_reason IS NULL",
                columns::assignments(1)
            ))?;
            columns::bind(&mut st, 1, None)?;
            let queued = st.raw_execute()?;
            drop(st);
            let now = now_ms();
            tx.execute_batch("DELETE FROM spill;")?;
            tx.execute(
                "UPDATE crawl SET generation = ?1, finished_at = NULL, started_at = ?2,
                     updated_at = ?2 WHERE id = 1",
                params![generation + 1, now],
            )?;
            tx.commit()?;
            Ok(Begun {
                generation: generation + 1,
                queued,
            })
        })();
        begun.map_err(|e| self.err(e))
    }
}

/// Keep generation `generation`'s edges: the `edges` table renamed `gen_edges_N` (no
/// row copied: a docs site's 2.3 M edges took 1.6 s to copy), and a new empty `edges`
/// made from the old one's own `CREATE` statement (so every column a migration added is
/// there). [`carry_edges`] finds a page's edges by the rowid range its row records; pages
/// written before ranges were recorded (schema 7) are found by `src`, through an index
/// built here only for them.
fn archive_edges(tx: &Transaction<'_>, generation: i64) -> rusqlite::Result<()> {
    let create: String = tx.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'edges'",
        [],
        |r| r.get(0),
    )?;
    let unranged: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM urls WHERE state IN (1, 2) AND outlinks IS NULL)",
        [],
        |r| r.get(0),
    )?;
    // Dropped first: renaming a table rewrites the views that name it.
    tx.execute_batch("DROP VIEW IF EXISTS gen_edges")?;
    let kept = format!("gen_edges_{generation}");
    tx.execute_batch(&format!("ALTER TABLE edges RENAME TO {kept}; {create};"))?;
    if unranged {
        tx.execute_batch(&format!("CREATE INDEX {kept}_by_src ON {kept}(src)"))?;
    }
    rebuild_edges_view(tx)
}

/// The generations whose edges are kept (`gen_edges_N` tables), in order.
pub fn kept_edge_generations(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<i64>> {
    let mut st = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'gen_edges_[0-9]*'",
    )?;
    let names = st.query_map([], |r| r.get::<_, String>(0))?;
    let mut kept: Vec<i64> = names
        .filter_map(|n| n.ok()?.strip_prefix("gen_edges_")?.parse().ok())
        .collect();
    kept.sort_unstable();
    Ok(kept)
}

/// Make the `gen_edges` view name every kept generation's edges table again: after one is
/// added (a refresh) or dropped (`trawl prune`, which drops `gen_edges_N` then calls this).
pub fn rebuild_edges_view(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let kept = kept_edge_generations(conn)?;
    let body = if kept.is_empty() {
        format!("SELECT 0 AS generation, {EDGE_COLUMNS} FROM edges WHERE 0")
    } else {
        kept.iter()
            .map(|g| format!("SELECT {g} AS generation, {EDGE_COLUMNS} FROM gen_edges_{g}"))
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    };
    conn.execute_batch(&format!(
        "DROP VIEW IF EXISTS gen_edges; CREATE VIEW gen_edges AS {body};"
    ))
}

/// A page answered 304 to the previous generation's validators: its edges are the
/// previous generation's, copied into `edges` before its row is written; the rowid of the
/// first copy and how many. Found by the range the previous row recorded, else (a row
/// from before ranges were recorded) by `src`.
pub(super) fn carry_edges(tx: &Transaction<'_>, id: i64) -> rusqlite::Result<(Option<i64>, i64)> {
    let previous: i64 = tx
        .prepare_cached(&format!("SELECT {PREVIOUS}"))?
        .query_row([], |r| r.get(0))?;
    let range: Option<(Option<i64>, Option<i64>)> = tx
        .prepare_cached(
            "SELECT edges_from, outlinks FROM gen_urls WHERE generation = ?1 AND id = ?2",
        )?
        .query_row([previous, id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let copied = match range {
        Some((_, Some(0))) => 0,
        Some((Some(from), Some(n))) => tx
            .prepare_cached(&format!(
                "INSERT INTO edges ({EDGE_COLUMNS}) SELECT {EDGE_COLUMNS} FROM gen_edges_{previous}
                 WHERE rowid >= ?1 AND rowid < ?1 + ?2 AND src = ?3 ORDER BY rowid"
            ))?
            .execute([from, n, id])?,
        _ => tx
            .prepare_cached(&format!(
                "INSERT INTO edges ({EDGE_COLUMNS}) SELECT {EDGE_COLUMNS} FROM gen_edges_{previous}
                 WHERE src = ?1 ORDER BY rowid"
            ))?
            .execute([id])?,
    };
    let n = copied as i64;
    Ok(match n {
        0 => (None, 0),
        _ => (Some(tx.last_insert_rowid() - n + 1), n),
    })
}

/// A 304 page's row takes the previous generation's record (its fetch time and attempts
/// stay this one's). Run by the writer after the page's own update.
pub(super) fn carry_record(tx: &Transaction<'_>, id: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "UPDATE urls SET ({CARRIED}) = (SELECT {CARRIED} FROM gen_urls
             WHERE generation = {PREVIOUS} AND id = ?1)
         WHERE id = ?1"
    ))?
    .execute([id])?;
    Ok(())
}
