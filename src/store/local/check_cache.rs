//! The check cache: what a crawl's file keeps of its link checks between runs, so a daily
//! CI crawl does not ask every external host again, and `--recheck failed` asks again only
//! what failed.
//!
//! A `--recrawl` keeps each checked URL (`urls.checked = 1`) whose answer is younger than
//! `check-cache-age`, with its host and the redirect edges between kept URLs, marked
//! `checked = 2`: the new crawl finds it known and links to it without asking. Kept URLs
//! the new crawl never links to are dropped when it finishes, so the file describes the
//! site as it is now.

use rusqlite::params;

use super::columns;
use super::error::StoreError;
#[cfg(feature = "redis")]
use super::generations::{VALIDATORS, VALIDATORS_JOIN};
use super::sqlite::SqliteStore;
use crate::store::now_ms;

/// A URL of the file, as [`SqliteStore::urls_after`] reads it.
#[cfg(feature = "redis")]
#[derive(Debug, Clone)]
pub(crate) struct FileUrl {
    /// Its row id.
    pub id: i64,
    /// Its canonical key.
    pub key: String,
    /// The URL fetched, when it differs from the key.
    pub url: Option<String>,
    /// Its depth.
    pub depth: u32,
    /// Its state.
    pub state: crate::store::UrlState,
    /// Why it was skipped, for a skipped URL.
    pub skip_reason: Option<String>,
    /// In a refresh, what to ask it with.
    pub validators: Option<crate::refresh::Validators>,
}

/// Kept URLs nobody links to, dropped in rounds: each round may orphan the next hop of a
/// kept redirect chain, so a chain of `max-redirects` hops needs as many.
const DROP_ROUNDS: usize = 32;

impl SqliteStore {
    /// Forget every URL and edge but the checks made within `keep_ms` before now (none
    /// when 0): `--recrawl` starts the crawl again in the same file.
    pub fn clear_for_recrawl(&mut self, keep_ms: u64) -> Result<(), StoreError> {
        let now = now_ms();
        let since = now.saturating_sub(i64::try_from(keep_ms).unwrap_or(i64::MAX));
        let keep = "checked IS NOT NULL AND state IN (1, 2) AND fetched_at >= ?1 AND ?2";
        let cleared = (|| {
            let tx = self.conn_mut().transaction()?;
            tx.execute(
                &format!("DELETE FROM urls WHERE id NOT IN (SELECT id FROM urls WHERE {keep})"),
                params![since, keep_ms > 0],
            )?;
            tx.execute_batch(
                "DELETE FROM edges WHERE kind <> 5
                     OR src NOT IN (SELECT id FROM urls) OR dst NOT IN (SELECT id FROM urls);
                 UPDATE urls SET checked = 2, referrer = NULL;
                 DELETE FROM hosts WHERE id NOT IN (SELECT host_id FROM urls);
                 DELETE FROM spill;",
            )?;
            tx.execute(
                "UPDATE crawl SET finished_at = NULL, started_at = ?1, updated_at = ?1",
                [now],
            )?;
            tx.commit()
        })();
        cleared.map_err(|e| self.err(e))
    }

    /// The crawl drained at `at`: drop the kept checks it never linked to and mark it
    /// finished. Both stores finish a file this way (a Redis crawl's collector too).
    pub fn mark_finished(&self, at: i64) -> rusqlite::Result<()> {
        self.drop_unused_checks()?;
        self.conn()
            .execute("UPDATE crawl SET finished_at = ?1 WHERE id = 1", [at])
            .map(drop)
    }

    /// Up to `limit` URLs of the file after the id `after`, in id order: what a Redis
    /// crawl collected into this file is told it knows (read in pages, so a large file
    /// is never held in memory at once).
    #[cfg(feature = "redis")]
    pub(crate) fn urls_after(&self, after: i64, limit: usize) -> Result<Vec<FileUrl>, StoreError> {
        let read = || {
            let mut st = self.conn().prepare(&format!(
                "SELECT u.id, u.key, u.url, u.depth, u.state, u.skip_reason, {VALIDATORS}
                 FROM urls u {VALIDATORS_JOIN} WHERE u.id > ?1 ORDER BY u.id LIMIT ?2",
            ))?;
            let rows = st.query_map(params![after, limit as i64], |r| {
                Ok(FileUrl {
                    id: r.get(0)?,
                    key: r.get(1)?,
                    url: r.get(2)?,
                    depth: r.get(3)?,
                    validators: super::generations::validators_at(r, 6)?,
                    state: crate::store::UrlState::from_code(r.get(4)?)
                        .unwrap_or(crate::store::UrlState::Done),
                    skip_reason: r.get(5)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<FileUrl>>>()
        };
        read().map_err(|e| self.err(e))
    }

    /// Drop the kept checks the finished crawl never linked to.
    fn drop_unused_checks(&self) -> rusqlite::Result<()> {
        // Each round scans the edges: only when there is something to drop.
        let kept: bool = self.conn().query_row(
            "SELECT EXISTS (SELECT 1 FROM urls WHERE checked = 2)",
            [],
            |r| r.get(0),
        )?;
        if !kept {
            return Ok(());
        }
        for _ in 0..DROP_ROUNDS {
            let dropped = self.conn().execute(
                "DELETE FROM urls WHERE checked = 2
                     AND id NOT IN (SELECT dst FROM edges WHERE src <> dst)",
                [],
            )?;
            if dropped == 0 {
                break;
            }
            self.conn().execute(
                "DELETE FROM edges WHERE src NOT IN (SELECT id FROM urls)",
                [],
            )?;
        }
        Ok(())
    }

    /// `--recheck failed`: queue again every URL that failed or answered 4xx/5xx (and
    /// reopen the crawl), its old answer cleared. Returns how many.
    pub fn requeue_failed(&mut self) -> Result<usize, StoreError> {
        let requeued = (|| {
            let tx = self.conn_mut().transaction()?;
            let mut st = tx.prepare(&format!(
                "UPDATE urls SET state = 0, {} WHERE state = 2 OR (state = 1 AND status >= 400)",
                columns::assignments(1)
            ))?;
            columns::bind(&mut st, 1, None)?;
            let n = st.raw_execute()?;
            drop(st);
            tx.execute("UPDATE crawl SET finished_at = NULL", [])?;
            tx.commit().map(|()| n)
        })();
        requeued.map_err(|e| self.err(e))
    }
}
