//! The store writer: one thread owns the connection and commits batched transactions.
//!
//! SQLite is fast when given big transactions and prepared statements, and slow when
//! given one transaction per row; so the writer takes every message already waiting (up
//! to a bound) into one transaction. A page's result and its edges are one message, hence
//! always in one transaction; the URL rows they mention come from [`Pending`], drained
//! before each message (see the module doc of `store`).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{params, Statement, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::columns;
use super::error::StoreError;
use super::generations::{self, EDGE_COLUMNS, VALIDATORS, VALIDATORS_JOIN};
use super::pending::{HostId, NewUrl, PageRecord, Pending, PendingRows, Refilled, UrlId};
use super::sqlite::{classify, SqliteStore};
use crate::result::Unchanged;
use crate::store::{now_ms, UrlState};
use crate::warc::CommitBarrier;

/// Messages sent per transaction at most, and the longest a transaction stays open while
/// more keep arriving: bounds both the loss window of a power cut and commit latency.
const MAX_BATCH: usize = 4096;
const MAX_BATCH_TIME: Duration = Duration::from_millis(200);

/// Depth of the message queue: enough to absorb bursts, small enough that a stalled disk
/// soon holds the workers back.
const QUEUE: usize = 1024;

enum WriteOp {
    Page(Box<PageRecord>),
    Refill {
        host: HostId,
        limit: usize,
        reply: oneshot::Sender<Vec<Refilled>>,
    },
    Flush(oneshot::Sender<()>),
    /// Commit everything and stop, although handles remain.
    Close,
}

/// Sends work to the writer thread. Cheap to clone; the writer ends when every handle is
/// dropped.
#[derive(Clone)]
pub struct WriterHandle {
    tx: mpsc::Sender<WriteOp>,
}

/// The writer thread; [`StoreWriter::join`] returns the store once every handle is gone.
pub struct StoreWriter {
    thread: JoinHandle<Result<SqliteStore, StoreError>>,
}

impl StoreWriter {
    /// Start the writer thread on `store`.
    pub fn spawn(store: SqliteStore, pending: Arc<Pending>) -> (StoreWriter, WriterHandle) {
        StoreWriter::spawn_with_barrier(store, pending, None)
    }

    /// Start the writer thread on `store`; before each commit it waits on `barrier` (the
    /// WARC records of the pages it commits are written first).
    pub fn spawn_with_barrier(
        store: SqliteStore,
        pending: Arc<Pending>,
        barrier: Option<CommitBarrier>,
    ) -> (StoreWriter, WriterHandle) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("trawl-store".into())
            .spawn(move || run(store, rx, &pending, barrier.as_ref()))
            .expect("spawning the store thread");
        (StoreWriter { thread }, WriterHandle { tx })
    }

    /// Wait for the writer to commit everything sent and stop. Every [`WriterHandle`] must
    /// have been dropped, or this waits for ever.
    pub fn join(self) -> Result<SqliteStore, StoreError> {
        self.thread.join().unwrap_or(Err(StoreError::WriterGone))
    }

    /// Whether the writer has stopped (on an error, or because every handle is gone).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

impl WriterHandle {
    /// Queue a fetched page's result and edges.
    pub async fn page(&self, record: PageRecord) -> Result<(), StoreError> {
        self.tx
            .send(WriteOp::Page(Box::new(record)))
            .await
            .map_err(|_| StoreError::WriterGone)
    }

    /// Take up to `limit` of `host`'s queued URLs off disk, oldest first.
    pub async fn refill(&self, host: HostId, limit: usize) -> Result<Vec<Refilled>, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(WriteOp::Refill { host, limit, reply })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        rx.await.map_err(|_| StoreError::WriterGone)
    }

    /// Commit everything sent and pending so far and stop the writer; later messages
    /// fail with [`StoreError::WriterGone`]. [`StoreWriter::join`] then returns the store.
    pub async fn close(&self) {
        // A writer that already stopped (on an error) has nothing left to close.
        let _ = self.tx.send(WriteOp::Close).await;
    }

    /// Wait until everything sent and pending so far is committed.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(WriteOp::Flush(reply))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        rx.await.map_err(|_| StoreError::WriterGone)
    }
}

fn run(
    mut store: SqliteStore,
    mut rx: mpsc::Receiver<WriteOp>,
    pending: &Pending,
    barrier: Option<&CommitBarrier>,
) -> Result<SqliteStore, StoreError> {
    let path = store.path.display().to_string();
    let err = |e| classify(&path, e);
    // Every statement the writer runs stays prepared (about 17 of them, more than the
    // default 16: an evicted statement is parsed again for every page).
    store.conn.set_prepared_statement_cache_capacity(32);
    loop {
        let first = rx.blocking_recv();
        let mut closing = matches!(first, None | Some(WriteOp::Close));
        let tx = store.conn.transaction().map_err(err)?;
        let mut acks = Vec::new();
        if let Some(first) = first.filter(|_| !closing) {
            apply(&tx, first, pending, &mut acks).map_err(err)?;
            let start = Instant::now();
            let mut n = 1;
            while n < MAX_BATCH && start.elapsed() < MAX_BATCH_TIME {
                match rx.try_recv() {
                    Ok(WriteOp::Close) => {
                        closing = true;
                        break;
                    }
                    Ok(op) => apply(&tx, op, pending, &mut acks).map_err(err)?,
                    Err(_) => break,
                }
                n += 1;
            }
        }
        write_pending(&tx, pending).map_err(err)?;
        tx.execute("UPDATE crawl SET updated_at = ?1 WHERE id = 1", [now_ms()])
            .map_err(err)?;
        // Every page in this transaction sent its WARC records before its message, so
        // they are on disk before the page counts as done.
        if let Some(b) = barrier {
            b.wait()?;
        }
        tx.commit().map_err(err)?;
        crate::failpoint::hit(crate::failpoint::Point::AfterCommit);
        for ack in acks {
            let _ = ack.send(());
        }
        if closing {
            return Ok(store);
        }
    }
}

fn apply(
    tx: &Transaction<'_>,
    op: WriteOp,
    pending: &Pending,
    acks: &mut Vec<oneshot::Sender<()>>,
) -> rusqlite::Result<()> {
    // Every row this message can mention was pushed to `pending` before the message was
    // sent; write those first.
    write_pending(tx, pending)?;
    match op {
        WriteOp::Page(rec) => write_page(tx, &rec),
        WriteOp::Refill { host, limit, reply } => {
            let rows = take_spilled(tx, host, limit)?;
            let _ = reply.send(rows);
            Ok(())
        }
        WriteOp::Flush(ack) => {
            acks.push(ack);
            Ok(())
        }
        WriteOp::Close => Ok(()),
    }
}

fn write_pending(tx: &Transaction<'_>, pending: &Pending) -> rusqlite::Result<()> {
    match pending.take() {
        Some(rows) => write_rows(tx, &rows),
        None => Ok(()),
    }
}

/// Write admitted rows: new hosts and URLs, then what changed about known ones. Also how a
/// Redis crawl's collector writes what its results streams carry (`store::redis::collect`).
pub(crate) fn write_rows(tx: &Transaction<'_>, rows: &PendingRows) -> rusqlite::Result<()> {
    let PendingRows {
        hosts,
        urls,
        spills,
        depths,
        requeues,
        pauses,
        skips,
    } = rows;
    execute_each(
        tx,
        "INSERT INTO hosts (id, name) VALUES (?1, ?2)",
        hosts,
        |st, h| st.execute(params![h.id, h.name]),
    )?;
    insert_urls(tx, urls)?;
    insert_spills(tx, spills)?;
    // After the inserts: these rows may have been pushed in the same take.
    execute_each(
        tx,
        "UPDATE urls SET depth = ?2 WHERE id = ?1 AND depth > ?2",
        depths,
        |st, (id, depth)| st.execute(params![*id as i64, depth]),
    )?;
    execute_each(
        tx,
        "UPDATE urls SET state = 0, skip_reason = NULL, depth = ?2 WHERE id = ?1 AND state = 3",
        requeues,
        |st, (id, depth)| st.execute(params![*id as i64, depth]),
    )?;
    execute_each(
        tx,
        "UPDATE hosts SET paused_until = max(coalesce(paused_until, 0), ?2) WHERE id = ?1",
        pauses,
        |st, (host, until)| st.execute(params![host, until]),
    )?;
    execute_each(
        tx,
        "UPDATE urls SET state = 3, skip_reason = ?2 WHERE id = ?1 AND state = 0",
        skips,
        |st, (id, reason)| st.execute(params![*id as i64, reason.as_str()]),
    )
}

/// Run the one-row statement `sql` for each of `rows`; it is prepared (from the cache) only
/// when there are rows.
fn execute_each<T>(
    tx: &Transaction<'_>,
    sql: &str,
    rows: &[T],
    mut run: impl FnMut(&mut Statement<'_>, &T) -> rusqlite::Result<usize>,
) -> rusqlite::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut st = tx.prepare_cached(sql)?;
    for row in rows {
        run(&mut st, row)?;
    }
    Ok(())
}

fn insert_urls(tx: &Transaction<'_>, urls: &[NewUrl]) -> rusqlite::Result<()> {
    insert_rows(
        tx,
        "INSERT INTO urls (id, key, url, host_id, depth, state, skip_reason, referrer) VALUES ",
        None,
        8,
        urls,
        |st, i, u| {
            let state = if u.skip.is_some() {
                UrlState::Skipped
            } else {
                UrlState::Queued
            };
            st.raw_bind_parameter(i, u.id as i64)?;
            st.raw_bind_parameter(i + 1, &u.key)?;
            st.raw_bind_parameter(i + 2, &u.url)?;
            st.raw_bind_parameter(i + 3, u.host)?;
            st.raw_bind_parameter(i + 4, u.depth)?;
            st.raw_bind_parameter(i + 5, state as i64)?;
            st.raw_bind_parameter(i + 6, u.skip.map(|s| s.as_str()))?;
            st.raw_bind_parameter(i + 7, u.referrer.map(|r| r as i64))
        },
    )
}

fn insert_spills(tx: &Transaction<'_>, spills: &[(HostId, UrlId)]) -> rusqlite::Result<()> {
    insert_rows(
        tx,
        "INSERT INTO spill (host_id, url_id) VALUES ",
        None,
        2,
        spills,
        |st, i, (h, u)| {
            st.raw_bind_parameter(i, h)?;
            st.raw_bind_parameter(i + 1, *u as i64)
        },
    )
}

/// Write a fetched page's result and edges (its row exists already).
pub(crate) fn write_page(tx: &Transaction<'_>, page: &PageRecord) -> rusqlite::Result<()> {
    let rec = &page.result;
    let state = if rec.failed {
        UrlState::Failed
    } else {
        UrlState::Done
    };
    let carried = rec.unchanged == Some(Unchanged::NotModified);
    // The edges first, so the page's row records where they are (their rowids are
    // consecutive: one writer, rows appended in one go).
    let (edges_from, outlinks) = match carried {
        true => generations::carry_edges(tx, page.id as i64)?,
        false => insert_edges(tx, page)?,
    };
    let mut st = tx.prepare_cached(&columns::UPDATE_PAGE)?;
    st.raw_bind_parameter(1, page.id as i64)?;
    st.raw_bind_parameter(2, state as i64)?;
    st.raw_bind_parameter(3, rec.depth)?;
    columns::bind(&mut st, 4, Some(rec))?;
    st.raw_bind_parameter(4 + columns::COLUMNS.len(), edges_from)?;
    st.raw_bind_parameter(5 + columns::COLUMNS.len(), outlinks)?;
    let changed = st.raw_execute()?;
    debug_assert_eq!(changed, 1, "page {} has no row", page.id);
    match carried {
        true => generations::carry_record(tx, page.id as i64),
        false => Ok(()),
    }
}

/// Insert a page's edges; the rowid of the first and how many.
fn insert_edges(tx: &Transaction<'_>, page: &PageRecord) -> rusqlite::Result<(Option<i64>, i64)> {
    if page.edges.is_empty() {
        return Ok((None, 0));
    }
    // `src` is the page for every row: bound once per statement as ?1.
    insert_rows(
        tx,
        &format!("INSERT INTO edges ({EDGE_COLUMNS}) VALUES "),
        Some(page.id as i64),
        7,
        &page.edges,
        |st, i, e| {
            let s = &e.spec;
            st.raw_bind_parameter(i, e.dst as i64)?;
            st.raw_bind_parameter(i + 1, s.kind.code())?;
            st.raw_bind_parameter(i + 2, s.nofollow)?;
            st.raw_bind_parameter(i + 3, &s.anchor)?;
            st.raw_bind_parameter(i + 4, &s.fragment)?;
            st.raw_bind_parameter(i + 5, s.at.map(|p| p.line))?;
            st.raw_bind_parameter(i + 6, s.at.map(|p| p.col))
        },
    )?;
    let n = page.edges.len() as i64;
    Ok((Some(tx.last_insert_rowid() - n + 1), n))
}

/// Rows per INSERT statement, largest first. Running one statement costs far more than
/// adding a row to it (measured: `benches/hot_path.rs`, group `store`), so rows go in
/// 32 at a time, the remainder 8 and then 1 at a time: three cached statements per table.
const ROWS_PER_INSERT: [usize; 3] = [32, 8, 1];

/// `INSERT ... VALUES (?, ...), (?, ...), ...` for `rows`, `width` columns each;
/// `bind(statement, first parameter index, row)` binds one row's values. With `first`, every
/// row starts with one more column, the same value in all rows, bound once as `?1`.
fn insert_rows<T>(
    tx: &Transaction<'_>,
    head: &str,
    first: Option<i64>,
    width: usize,
    rows: &[T],
    mut bind: impl FnMut(&mut Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    // SQLite numbers a bare `?` one past the largest number so far, so after `?1` the
    // rows' own parameters run from 2.
    let (lead, start) = match first {
        Some(_) => ("?1,", 2),
        None => ("", 1),
    };
    let mut rest = rows;
    for size in ROWS_PER_INSERT {
        if rest.len() < size {
            continue;
        }
        let mut sql = String::with_capacity(head.len() + size * (width * 2 + lead.len() + 3));
        sql.push_str(head);
        for r in 0..size {
            sql.push_str(if r == 0 { "(" } else { ",(" });
            sql.push_str(lead);
            for c in 0..width {
                sql.push_str(if c == 0 { "?" } else { ",?" });
            }
            sql.push(')');
        }
        let mut st = tx.prepare_cached(&sql)?;
        if let Some(v) = first {
            st.raw_bind_parameter(1, v)?;
        }
        while rest.len() >= size {
            let (chunk, after) = rest.split_at(size);
            for (r, row) in chunk.iter().enumerate() {
                bind(&mut st, start + r * width, row)?;
            }
            st.raw_execute()?;
            rest = after;
        }
    }
    Ok(())
}

fn take_spilled(
    tx: &Transaction<'_>,
    host: HostId,
    limit: usize,
) -> rusqlite::Result<Vec<Refilled>> {
    let mut st = tx.prepare_cached(&format!(
        "SELECT s.seq, u.id, coalesce(u.url, u.key), u.depth, {VALIDATORS}
         FROM spill s JOIN urls u ON u.id = s.url_id {VALIDATORS_JOIN}
         WHERE s.host_id = ?1 ORDER BY s.seq LIMIT ?2",
    ))?;
    let mut out = Vec::new();
    let mut last_seq = None;
    let mut rows = st.query(params![host, limit as i64])?;
    while let Some(r) = rows.next()? {
        // Every spilled URL is queued: it cannot be dispatched before it is read back.
        last_seq = Some(r.get::<_, i64>(0)?);
        out.push(Refilled {
            id: r.get::<_, i64>(1)? as u64,
            url: r.get(2)?,
            depth: r.get(3)?,
            // A refresh asks a page the previous generation fetched conditionally.
            validators: generations::validators_at(r, 4)?.map(Box::new),
        });
    }
    drop(rows);
    if let Some(seq) = last_seq {
        tx.prepare_cached("DELETE FROM spill WHERE host_id = ?1 AND seq <= ?2")?
            .execute(params![host, seq])?;
    }
    Ok(out)
}
