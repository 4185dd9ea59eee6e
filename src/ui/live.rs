//! The running crawl's figures for the live section: a [`Progress`] snapshot (the same
//! counters as the progress line and the metrics endpoint, the same for a SQLite and a
//! Redis crawl), its hosts table and its last pages and errors, all from the running
//! process's memory (and, for a Redis crawl's hosts, from Redis), read when the page asks
//! and never otherwise.
//!
//! For a crawl that does not run in this process (`trawl serve`), the hosts table and the
//! last pages come from the crawl's file instead: each is one scan of `urls`, fine for a
//! finished file.

use serde_json::{json, Value};

use crate::live::{Progress, ProgressSnapshot};
use crate::store::{now_ms, SqliteStore, UrlState};

// The file's tables show as many rows as the live ones.
use crate::live::{HOSTS, RECENT};

/// `/api/live`: the snapshot with the hosts and the last pages, or `{"running": false}`
/// when no crawl runs in this process.
pub(super) async fn snapshot(progress: Option<&Progress>) -> Value {
    let Some(p) = progress else {
        return json!({ "running": false });
    };
    let mut v = figures(&p.snapshot());
    v["hosts"] = live_hosts(p).await["rows"].take();
    v["recent"] = live_recent(p);
    // A Redis crawl's figures over every process (null when this process is the crawl).
    v["crawl"] = serde_json::to_value(p.crawl_wide().await).unwrap_or(Value::Null);
    v
}

/// `/api/hosts` while a crawl runs in this process.
pub(super) async fn live_hosts(p: &Progress) -> Value {
    json!({ "rows": p.hosts().await })
}

/// `/api/recent` while a crawl runs in this process.
pub(super) fn live_recent(p: &Progress) -> Value {
    serde_json::to_value(p.recent()).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

fn figures(s: &ProgressSnapshot) -> Value {
    let r = &s.run;
    let classes: serde_json::Map<String, Value> = (1..=5)
        .map(|c| (format!("{c}xx"), r.by_class[c].into()))
        .collect();
    json!({
        "running": true,
        "elapsed_ms": r.elapsed.as_millis() as u64,
        "pages": r.pages,
        "failed": r.failed,
        "rate": r.rate(),
        "bytes": r.bytes,
        "edges": r.edges,
        "retries": r.retries,
        "pauses": r.pauses,
        "status_classes": classes,
        "errors": r.errors,
        // As the progress line counts them: in memory and elsewhere (disk, Redis).
        "queued": s.frontier.in_memory as u64 + s.frontier.spilled,
        "queued_memory": s.frontier.in_memory,
        "queued_disk": s.frontier.spilled,
        "retrying": s.frontier.retrying,
        "fetching": s.fetching,
        "waiting": s.waiting,
        "in_flight": s.frontier.in_flight,
    })
}

/// `/api/hosts` of a crawl's file: the hosts with the most URLs, with their counts and any
/// pause.
pub(super) fn hosts(store: &SqliteStore) -> rusqlite::Result<Value> {
    let (done, failed, queued) = (
        UrlState::Done as i64,
        UrlState::Failed as i64,
        UrlState::Queued as i64,
    );
    let mut st = store.conn().prepare(&format!(
        "SELECT h.name, h.paused_until, g.n, g.done, g.failed, g.queued, g.errors FROM (
             SELECT host_id, count(*) AS n, sum(state = {done}) AS done,
                    sum(state = {failed}) AS failed, sum(state = {queued}) AS queued,
                    sum(state = {failed} OR coalesce(status, 0) >= 400) AS errors
             FROM urls GROUP BY host_id) g
         JOIN hosts h ON h.id = g.host_id ORDER BY g.n DESC, h.name LIMIT ?1"
    ))?;
    let now = now_ms();
    let rows = st
        .query_map([HOSTS as i64], |r| {
            let paused: Option<i64> = r.get(1)?;
            Ok(json!({
                "host": r.get::<_, String>(0)?,
                "paused_until": paused.filter(|&t| t > now),
                "urls": r.get::<_, i64>(2)?,
                "done": r.get::<_, i64>(3)?,
                "failed": r.get::<_, i64>(4)?,
                "queued": r.get::<_, i64>(5)?,
                "errors": r.get::<_, i64>(6)?,
            }))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(json!({ "rows": rows }))
}

/// `/api/recent` of a crawl's file: the last pages fetched and the last failures.
pub(super) fn recent(store: &SqliteStore) -> rusqlite::Result<Value> {
    let (done, failed) = (UrlState::Done as i64, UrlState::Failed as i64);
    let query = |states: &str| -> rusqlite::Result<Vec<Value>> {
        let mut st = store.conn().prepare(&format!(
            "SELECT coalesce(url, key), status, error_kind, error, fetched_at, fetch_ms
             FROM urls WHERE state IN ({states}) AND fetched_at IS NOT NULL
             ORDER BY fetched_at DESC, id DESC LIMIT ?1"
        ))?;
        let rows = st.query_map([RECENT as i64], |r| {
            Ok(json!({
                "url": r.get::<_, String>(0)?,
                "status": r.get::<_, Option<i64>>(1)?,
                "error_kind": r.get::<_, Option<String>>(2)?,
                "error": r.get::<_, Option<String>>(3)?,
                "fetched_at": r.get::<_, Option<i64>>(4)?,
                "fetch_ms": r.get::<_, Option<i64>>(5)?,
            }))
        })?;
        rows.collect()
    };
    Ok(json!({
        "pages": query(&format!("{done}, {failed}"))?,
        "errors": query(&failed.to_string())?,
    }))
}
