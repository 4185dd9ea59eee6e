//! What a process does for the crawl besides fetching: it renews the leases it holds a few
//! times per lease period, so a slow fetch never loses its lease while the process lives,
//! and writes a heartbeat for `trawl status`; when it stops, it gives back the leases it
//! never started and takes its heartbeat away.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::queue::Queue;
use super::HEARTBEAT;
use crate::result::now_ms;
use crate::stats::Stats;

/// This process in the crawl: its id and its background tasks.
pub struct Process {
    redis: Redis,
    keys: CrawlKeys,
    id: String,
    renewer: tokio::task::JoinHandle<()>,
    heart: tokio::task::JoinHandle<()>,
    marker: tokio::task::JoinHandle<()>,
    stats: Arc<Stats>,
}

impl Process {
    /// This process's id (`hostname-pid-random`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Start renewing `held` and beating.
    pub fn start(
        redis: &Redis,
        keys: &CrawlKeys,
        queue: &Arc<Queue>,
        held: &Arc<DashMap<String, String>>,
        lease: Duration,
        stats: Arc<Stats>,
    ) -> Process {
        let id = format!(
            "{}-{}-{:08x}",
            hostname(),
            std::process::id(),
            fastrand::u32(..)
        );
        Process {
            renewer: tokio::spawn(renew(queue.clone(), held.clone(), lease)),
            marker: tokio::spawn(mark_unread(queue.clone())),
            heart: tokio::spawn(heartbeat(
                redis.clone(),
                keys.clone(),
                id.clone(),
                stats.clone(),
                held.clone(),
            )),
            redis: redis.clone(),
            keys: keys.clone(),
            id,
            stats,
        }
    }

    /// Stop the tasks, give back the leases still `held` (URLs never started: at once
    /// rather than at expiry) and remove the heartbeat.
    pub async fn stop(&self, queue: &Queue, held: &DashMap<String, String>) {
        self.renewer.abort();
        self.heart.abort();
        self.marker.abort();
        if let Err(e) = queue.flush_unread().await {
            tracing::debug!("could not mark the streams written to ({e}); the collector reads every stream now and then");
        }
        let mut left: HashMap<String, Vec<String>> = HashMap::new();
        for e in held.iter() {
            left.entry(e.value().clone())
                .or_default()
                .push(e.key().clone());
        }
        // Best effort: a lease not given back returns when it expires.
        for (host, keys) in left {
            match queue.release(&host, &keys).await {
                Ok(()) => {
                    for k in &keys {
                        held.remove(k);
                    }
                }
                Err(e) => tracing::warn!(
                    "could not give back {} leases of {host} ({e}); they return when they expire",
                    keys.len()
                ),
            }
        }
        let _: Result<i64, _> = self
            .redis
            .cmd_once(redis::cmd("HDEL").arg(&self.keys.processes).arg(&self.id))
            .await;
        let pages = self.stats.pages();
        let sent = self.redis.sent();
        tracing::info!(
            redis_commands = sent,
            pages,
            per_page = format!("{:.1}", sent as f64 / pages.max(1) as f64),
            "Redis commands sent by this process"
        );
    }
}

/// Renew every lease held, a few times per lease period.
async fn renew(queue: Arc<Queue>, held: Arc<DashMap<String, String>>, lease: Duration) {
    let every = (lease / 3).max(Duration::from_millis(100));
    loop {
        tokio::time::sleep(every).await;
        let mut by_host: HashMap<String, Vec<String>> = HashMap::new();
        for e in held.iter() {
            by_host
                .entry(e.value().clone())
                .or_default()
                .push(e.key().clone());
        }
        let calls = by_host
            .iter()
            .map(|(host, keys)| queue.renew(host, keys, lease));
        for r in futures_util::future::join_all(calls).await {
            if let Err(e) = r {
                tracing::warn!("renewing leases failed: {e}");
            }
        }
    }
}

/// How often the collector is told which results streams this process wrote to.
const MARK_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// Tell the collector, every few milliseconds, which results streams this process wrote
/// to (one `SADD` for many results).
async fn mark_unread(queue: Arc<Queue>) {
    loop {
        tokio::time::sleep(MARK_EVERY).await;
        if let Err(e) = queue.flush_unread().await {
            tracing::warn!("marking the results streams failed: {e}");
        }
    }
}

/// Write this process's heartbeat for `trawl status`.
async fn heartbeat(
    redis: Redis,
    keys: CrawlKeys,
    id: String,
    stats: Arc<Stats>,
    held: Arc<DashMap<String, String>>,
) {
    loop {
        let beat = serde_json::json!({
            "at": now_ms(),
            "pages": stats.pages(),
            "fetching": stats.fetching(),
            "waiting": stats.waiting(held.len()),
            "pid": std::process::id(),
        });
        let _: Result<i64, _> = redis
            .cmd_once(
                redis::cmd("HSET")
                    .arg(&keys.processes)
                    .arg(&id)
                    .arg(beat.to_string()),
            )
            .await;
        tokio::time::sleep(HEARTBEAT).await;
    }
}

pub(super) fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}
