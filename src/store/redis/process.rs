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

/// What this process holds, by the member it holds it under: a URL's lease (its queue
/// element) with the token of its fetch, or a token alone (a sitemap read's slot).
#[derive(Debug, Clone)]
pub struct Held {
    /// The host.
    pub host: String,
    /// The URL's shard, or `None` for a token alone.
    pub shard: Option<usize>,
    /// The host's token.
    pub token: String,
}

/// What `held` holds, per host: URL leases per shard, and tokens.
#[derive(Default)]
struct PerHost {
    leases: HashMap<usize, Vec<String>>,
    tokens: Vec<String>,
}

fn per_host(held: &DashMap<String, Held>) -> HashMap<String, PerHost> {
    let mut out: HashMap<String, PerHost> = HashMap::new();
    for e in held.iter() {
        let h = e.value();
        let p = out.entry(h.host.clone()).or_default();
        if let Some(shard) = h.shard {
            p.leases.entry(shard).or_default().push(e.key().clone());
        }
        p.tokens.push(h.token.clone());
    }
    out
}

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
        held: &Arc<DashMap<String, Held>>,
        lease: Duration,
        stats: Arc<Stats>,
        id: String,
    ) -> Process {
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
    pub async fn stop(&self, queue: &Queue, held: &DashMap<String, Held>) {
        self.renewer.abort();
        self.heart.abort();
        self.marker.abort();
        if let Err(e) = queue.flush_unread().await {
            tracing::debug!("could not mark the streams written to ({e}); the collector reads every stream now and then");
        }
        // Best effort: a lease or token not given back returns when it expires.
        for (host, p) in per_host(held) {
            let mut given = Vec::new();
            for (shard, elements) in &p.leases {
                match queue.release(&host, *shard, elements).await {
                    Ok(()) => given.extend(elements.iter().cloned()),
                    Err(e) => tracing::warn!(
                        "could not give back {} leases of {host} ({e}); they return when they expire",
                        elements.len()
                    ),
                }
            }
            if queue.free(&host, &p.tokens).await.is_ok() {
                held.retain(|_, h| h.host != host);
            } else {
                for m in given {
                    held.remove(&m);
                }
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

/// Renew every lease and token held, a few times per lease period.
async fn renew(queue: Arc<Queue>, held: Arc<DashMap<String, Held>>, lease: Duration) {
    let every = (lease / 3).max(Duration::from_millis(100));
    loop {
        tokio::time::sleep(every).await;
        let held = per_host(&held);
        let mut calls = Vec::new();
        for (host, p) in &held {
            calls.push(queue.renew(host, None, &p.tokens, lease));
            for (shard, elements) in &p.leases {
                calls.push(queue.renew(host, Some(*shard), elements, lease));
            }
        }
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
    held: Arc<DashMap<String, Held>>,
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

/// A new process id: `hostname-pid-random`.
pub(super) fn new_id() -> String {
    format!(
        "{}-{}-{:08x}",
        hostname(),
        std::process::id(),
        fastrand::u32(..)
    )
}

pub(super) fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}
