//! The dispatcher's round over the hosts: ask each ready host for request slots (tokens, in
//! the host's own slot), fill them from the host's shards in turn (a pop in each shard's
//! slot), and give back the slots left unfilled.
//!
//! Why two steps: the per-host limit, spacing and pauses must hold crawl-wide, so they live
//! in one place, the host's own slot, while the host's URLs are spread over the shards'
//! slots. So a take is not one atomic script, and does not need to be: a URL is fetched
//! only under a token, so a host's fetches in flight never pass its limit whatever
//! happens between the steps; the spacing is booked with the tokens; and a process that
//! dies between the steps leaves tokens and leases that expire after `--lease`, when the
//! slots and the URLs come back to the crawl.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::queue::Queue;
use super::records::Lease;
use super::DistError;

/// How often the host list and the hosts' shards are read again.
const HOSTS_EVERY: Duration = Duration::from_millis(500);

/// See the module doc.
pub struct Taker {
    queue: Arc<Queue>,
    per_host: usize,
    lease: Duration,
    /// This process's id, the prefix of its tokens.
    process: String,
    tokens: AtomicU64,
    dispatch: tokio::sync::Mutex<Dispatch>,
    /// Hosts not to ask before then: paused, inside their spacing, or empty or at their
    /// limit when last asked (until this process frees one of their slots).
    not_before: DashMap<String, Instant>,
    /// Requests this process ended: a round that saw one end while it asked a host does
    /// not mark the host full or empty on what it heard before.
    ended: AtomicU64,
    /// Parts of hosts not to pop from before then: empty when last asked.
    empty_until: DashMap<(String, usize), Instant>,
    /// The shards holding each host's URLs, as last read (and as this process admitted).
    parts: DashMap<String, BTreeSet<usize>>,
}

/// Which hosts to ask, and where the last round started.
struct Dispatch {
    hosts: Vec<String>,
    read: Option<Instant>,
    start: usize,
}

impl Taker {
    /// Rounds for the process `process` over `queue`'s hosts.
    pub fn new(queue: Arc<Queue>, per_host: usize, lease: Duration, process: String) -> Taker {
        Taker {
            queue,
            per_host,
            lease,
            process,
            tokens: AtomicU64::new(0),
            dispatch: tokio::sync::Mutex::new(Dispatch {
                hosts: Vec::new(),
                read: None,
                start: 0,
            }),
            not_before: DashMap::new(),
            ended: AtomicU64::new(0),
            empty_until: DashMap::new(),
            parts: DashMap::new(),
        }
    }

    /// A token id no other process or request uses.
    pub fn token(&self) -> String {
        format!(
            "{}:{}",
            self.process,
            self.tokens.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// This process ended a request to `host`: the host may have a free slot.
    pub fn ended(&self, host: &str) {
        self.ended.fetch_add(1, Ordering::SeqCst);
        self.not_before.remove(host);
    }

    /// This process queued URLs of `host` in `shard`: pop there on the next round.
    pub fn admitted(&self, host: &str, shard: usize) {
        self.empty_until.remove(&(host.to_owned(), shard));
        if !self.parts.get(host).is_some_and(|p| p.contains(&shard)) {
            self.parts.entry(host.to_owned()).or_default().insert(shard);
        }
    }

    async fn refresh(&self, d: &mut Dispatch) -> Result<(), DistError> {
        if d.read.is_some_and(|t| t.elapsed() < HOSTS_EVERY) {
            return Ok(());
        }
        d.hosts = self.queue.active_hosts().await?;
        let calls = d.hosts.iter().map(|h| self.queue.shards_of(h));
        let shards = futures_util::future::join_all(calls).await;
        for (host, shards) in d.hosts.iter().zip(shards) {
            self.parts.entry(host.clone()).or_default().extend(shards?);
        }
        d.read = Some(Instant::now());
        Ok(())
    }

    /// Take up to `room` URLs from the hosts in turn, from where the last round started.
    /// `interval` gives each host's spacing; a host or part found empty is asked again
    /// after `idle`.
    pub async fn round(
        &self,
        room: usize,
        idle: Duration,
        interval: impl Fn(&str) -> Duration,
    ) -> Result<Vec<Lease>, DistError> {
        let mut d = self.dispatch.lock().await;
        self.refresh(&mut d).await?;
        let now = Instant::now();
        let n = d.hosts.len();
        let mut leases = Vec::new();
        for i in 0..n {
            if leases.len() >= room {
                break;
            }
            let host = d.hosts[(d.start + i) % n].clone();
            if self.not_before.get(&host).is_some_and(|t| *t > now) {
                continue;
            }
            let want = (room - leases.len()).min(self.per_host);
            let ended = self.ended.load(Ordering::SeqCst);
            let (took, full) = self
                .host(&host, want, interval(&host), idle, d.start)
                .await?;
            if (took.is_empty() || full) && self.ended.load(Ordering::SeqCst) == ended {
                // Empty, or at its limit: ask again after the idle wait (or once this
                // process ends one of the host's requests) rather than on every pass.
                self.not_before
                    .entry(host)
                    .and_modify(|t| *t = (*t).max(now + idle))
                    .or_insert(now + idle);
            }
            leases.extend(took);
        }
        d.start = d.start.wrapping_add(1);
        Ok(leases)
    }

    /// Up to `want` URLs of `host`: its tokens first, then its shards from `start` on; and
    /// whether every slot of the host is now taken.
    async fn host(
        &self,
        host: &str,
        want: usize,
        interval: Duration,
        idle: Duration,
        start: usize,
    ) -> Result<(Vec<Lease>, bool), DistError> {
        let tokens = (0..want).map(|_| self.token()).collect();
        let granted = self
            .queue
            .grant(host, self.per_host, interval, self.lease, tokens)
            .await?;
        let now = Instant::now();
        if !granted.wait.is_zero() {
            self.not_before.insert(host.to_owned(), now + granted.wait);
            return Ok((Vec::new(), false));
        }
        let mut tokens = granted.tokens;
        let shards: Vec<usize> = self
            .parts
            .get(host)
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default();
        let mut leases = Vec::new();
        let mut reclaimed = 0;
        for j in 0..shards.len() {
            if tokens.is_empty() {
                break;
            }
            let shard = shards[(start + j) % shards.len()];
            let part = (host.to_owned(), shard);
            if self.empty_until.get(&part).is_some_and(|t| *t > now) {
                continue;
            }
            let popped = self
                .queue
                .pop(host, shard, self.lease, tokens.len())
                .await?;
            reclaimed += popped.reclaimed;
            if popped.leases.is_empty() {
                self.empty_until.insert(part, now + idle);
            }
            for mut lease in popped.leases {
                lease.token = tokens.pop().expect("one token per lease");
                leases.push(lease);
            }
        }
        if reclaimed > 0 {
            tracing::info!(
                host,
                n = reclaimed,
                "took back expired leases of a process that stopped"
            );
        }
        let full = granted.room == 0 && tokens.is_empty();
        self.queue.free(host, &tokens).await?;
        Ok((leases, full))
    }
}
