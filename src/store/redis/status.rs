//! Where a Redis crawl stands: for `trawl status --store URL --crawl-id ID`, from any
//! machine, while processes crawl or after. One pipeline per host and shard; the failed seeds come
//! from the results file, when it is on this machine.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::queue::shards_of;
use super::results::ResultsFile;
use super::{parse_target, DistError, HEARTBEAT};
use crate::result::{now_ms, FailedSeed};
use crate::store::{CrawlWide, OpenMode, SqliteStore};

/// Counts over every host of a crawl.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// URLs known (admitted, fetched or not).
    pub known: u64,
    /// Pages stored (fetched, or skipped for robots.txt after being queued), collected into
    /// the results file or on their way.
    pub stored: u64,
    /// URLs never to be fetched (out of scope, limits).
    pub skipped: u64,
    /// Waiting in the queues.
    pub queued: u64,
    /// Leased by a process now.
    pub leased: u64,
    /// Waiting to be tried again.
    pub retrying: u64,
    /// Hosts.
    pub hosts: u64,
}

/// A process taking part in the crawl.
#[derive(Debug, Clone, Serialize)]
pub struct Process {
    /// `hostname-pid-random`.
    pub id: String,
    /// Pages it fetched so far.
    pub pages: u64,
    /// URLs its workers are fetching now.
    pub fetching: u64,
    /// URLs it has taken, waiting for a worker.
    pub waiting: u64,
    /// Milliseconds since its last heartbeat.
    pub seen_ms_ago: i64,
}

/// A snapshot of a Redis crawl.
#[derive(Debug, Clone, Serialize)]
pub struct RedisStatus {
    /// The crawl id.
    pub crawl_id: String,
    /// `running` (a process beat in the last few seconds), `finished`, or `stopped`.
    pub state: &'static str,
    /// The seeds.
    pub seeds: Vec<String>,
    /// When the crawl started (Unix ms).
    pub started_at: Option<i64>,
    /// When it drained (Unix ms).
    pub finished_at: Option<i64>,
    /// Counts over every host.
    pub counts: Counts,
    /// Live processes.
    pub processes: Vec<Process>,
    /// Seeds whose fetch got no usable response, with their errors.
    pub failed_seeds: Vec<FailedSeed>,
}

/// The seeds whose fetch failed, as the crawl's results file records them (when it is on
/// this machine: results live there, not in Redis).
async fn failed_seeds(redis: &Redis, keys: &CrawlKeys) -> Vec<FailedSeed> {
    let Ok(Some(path)) = ResultsFile::readable(redis, keys).await else {
        return Vec::new();
    };
    tokio::task::spawn_blocking(move || {
        let store = SqliteStore::open(&path, OpenMode::Read).ok()?;
        crate::status::failed_seeds(&store).ok()
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// Count over every host of the crawl.
pub async fn count(redis: &Redis, keys: &CrawlKeys) -> Result<Counts, DistError> {
    let hosts: Vec<String> = redis.cmd(redis::cmd("SMEMBERS").arg(&keys.hosts)).await?;
    let mut c = Counts {
        hosts: hosts.len() as u64,
        ..Counts::default()
    };
    for host in &hosts {
        for shard in shards_of(redis, keys, host).await? {
            let k = keys.part(host, shard);
            let mut pipe = redis::pipe();
            pipe.hlen(&k.seen)
                .hget(&k.counts, "stored")
                .hget(&k.counts, "skipped")
                .llen(&k.queue)
                .zcard(&k.leases)
                .zcard(&k.retries);
            type Row = (u64, Option<u64>, Option<u64>, u64, u64, u64);
            let (seen, stored, skipped, q, leases, retries): Row = redis.pipe(&pipe).await?;
            c.known += seen;
            c.stored += stored.unwrap_or(0);
            c.skipped += skipped.unwrap_or(0);
            c.queued += q;
            c.leased += leases;
            c.retrying += retries;
        }
    }
    Ok(c)
}

/// The processes beating now, by id.
async fn processes(redis: &Redis, keys: &CrawlKeys) -> Result<Vec<Process>, DistError> {
    let beats: HashMap<String, String> = redis
        .cmd(redis::cmd("HGETALL").arg(&keys.processes))
        .await?;
    let now = now_ms();
    let mut processes: Vec<Process> = beats
        .into_iter()
        .filter_map(|(id, beat)| {
            let v: serde_json::Value = serde_json::from_str(&beat).ok()?;
            let at = v.get("at")?.as_i64()?;
            Some(Process {
                id,
                pages: v.get("pages").and_then(|p| p.as_u64()).unwrap_or(0),
                fetching: v.get("fetching").and_then(|p| p.as_u64()).unwrap_or(0),
                waiting: v.get("waiting").and_then(|p| p.as_u64()).unwrap_or(0),
                seen_ms_ago: now - at,
            })
        })
        // A process killed without a goodbye stops beating; three missed beats and it
        // is not counted.
        .filter(|p| p.seen_ms_ago < 3 * HEARTBEAT.as_millis() as i64)
        .collect();
    processes.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(processes)
}

/// The crawl as every process sees it, for a live page: [`count`] and the processes'
/// beats (each process's figures as of its last beat).
pub(crate) async fn crawl_wide(redis: &Redis, keys: &CrawlKeys) -> Result<CrawlWide, DistError> {
    let c = count(redis, keys).await?;
    let procs = processes(redis, keys).await?;
    let sum = |f: fn(&Process) -> u64| procs.iter().map(f).sum();
    Ok(CrawlWide {
        processes: procs.len() as u64,
        pages: sum(|p| p.pages),
        fetching: sum(|p| p.fetching),
        waiting: sum(|p| p.waiting),
        known: c.known,
        stored: c.stored,
        queued: c.queued,
        leased: c.leased,
        retrying: c.retrying,
        skipped: c.skipped,
    })
}

/// Read the status of crawl `crawl_id` in the Redis at `store`.
pub async fn read(store: &str, crawl_id: &str) -> Result<RedisStatus, DistError> {
    let (url, id) = parse_target(store, Some(crawl_id))?;
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            cancel.cancel();
        })
    };
    let redis = Redis::connect(&url, cancel).await?;
    let mut keys = CrawlKeys::new(&id);
    keys.set_shards(super::join::shards(&redis, &keys).await?);
    let meta: HashMap<String, String> = redis.cmd(redis::cmd("HGETALL").arg(&keys.meta)).await?;
    if !meta.contains_key("config") {
        timer.abort();
        return Err(DistError::NoSeeds { id });
    }
    let counts = count(&redis, &keys).await?;
    let seeds: Vec<String> = meta
        .get("seeds")
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let failed_seeds = failed_seeds(&redis, &keys).await;
    let processes = processes(&redis, &keys).await?;
    timer.abort();
    let finished_at = meta.get("finished_at").and_then(|s| s.parse().ok());
    let state = if finished_at.is_some() {
        "finished"
    } else if !processes.is_empty() {
        "running"
    } else {
        "stopped"
    };
    Ok(RedisStatus {
        crawl_id: id,
        state,
        seeds,
        started_at: meta.get("started_at").and_then(|s| s.parse().ok()),
        finished_at,
        counts,
        processes,
        failed_seeds,
    })
}
