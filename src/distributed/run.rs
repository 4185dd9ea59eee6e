//! One process's part of a Redis crawl: join (or create) the crawl, then a dispatcher
//! that leases URLs host by host into a bounded channel, workers that fetch them, a task
//! that renews the leases held, and a heartbeat. The crawl is finished when no host has
//! anything queued, leased or waiting to retry (`Queue::is_drained`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::queue::{Admission, Budget, Candidate, Lease, Queue};
use super::worker::{RobotsCache, Worker};
use super::{DistError, HEARTBEAT};
use crate::admit::{Limits, LinkFilter, Rules};
use crate::config::{ConfigPatch, CrawlConfig};
use crate::crawler::{Outcome, Progress, Summary};
use crate::fetch::Fetcher;
use crate::page::Reader;
use crate::store::now_ms;
use crate::traps::Traps;
use crate::url_norm::{host_key, Scope};
use crate::Error;

/// A Redis crawl ready to run in this process. See
/// [`CrawlerBuilder::build_distributed`](crate::CrawlerBuilder::build_distributed).
pub struct RedisCrawl {
    pub(super) redis: Redis,
    pub(super) keys: CrawlKeys,
    pub(super) config: CrawlConfig,
    pub(super) seeds: Vec<Url>,
    pub(super) new_seeds: Vec<Url>,
    pub(super) scope: Scope,
    pub(super) fetcher: Fetcher,
    pub(super) filter: Option<LinkFilter>,
    pub(super) finished: bool,
    pub(super) started: bool,
    pub(super) progress: Progress,
    pub(super) cancel: CancellationToken,
}

/// What joining gave.
pub(super) struct Joined {
    pub config: CrawlConfig,
    pub seeds: Vec<Url>,
    pub finished: bool,
    /// This process created the crawl.
    pub started: bool,
}

/// Create the crawl if it does not exist (seeds, configuration), else read it and lay
/// this process's options over the stored configuration.
pub(super) async fn join(
    redis: &Redis,
    keys: &CrawlKeys,
    seeds: &[Url],
    patches: &[(&str, &ConfigPatch)],
) -> Result<Joined, DistError> {
    let stored: Option<String> = redis
        .cmd(redis::cmd("HGET").arg(&keys.meta).arg("config"))
        .await?;
    let mut started = false;
    let stored = match stored {
        Some(s) => s,
        None => {
            if seeds.is_empty() {
                return Err(DistError::NoSeeds {
                    id: keys.id().to_owned(),
                });
            }
            let config = CrawlConfig::layered(None, patches).map_err(|e| corrupt("config", e))?;
            let text = config.to_toml();
            let seed_list: Vec<String> = seeds.iter().map(|u| u.to_string()).collect();
            let created: i64 = redis
                .cmd(
                    redis::cmd("HSETNX")
                        .arg(&keys.meta)
                        .arg("config")
                        .arg(&text),
                )
                .await?;
            if created == 1 {
                started = true;
                let _: () = redis
                    .cmd(
                        redis::cmd("HSET")
                            .arg(&keys.meta)
                            .arg("seeds")
                            .arg(serde_json::to_string(&seed_list).expect("seeds"))
                            .arg("started_at")
                            .arg(now_ms())
                            .arg("trawl_version")
                            .arg(env!("CARGO_PKG_VERSION")),
                    )
                    .await?;
                text
            } else {
                // Another process created it a moment ago.
                redis
                    .cmd::<Option<String>>(redis::cmd("HGET").arg(&keys.meta).arg("config"))
                    .await?
                    .unwrap_or(text)
            }
        }
    };
    let base = CrawlConfig::from_toml(&stored).map_err(|e| corrupt("config", e))?;
    let config = CrawlConfig::layered(Some(&base), patches).map_err(|e| corrupt("config", e))?;
    let stored_seeds: Option<String> = redis
        .cmd(redis::cmd("HGET").arg(&keys.meta).arg("seeds"))
        .await?;
    let mut all: Vec<Url> = stored_seeds
        .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|s| Url::parse(s).ok())
        .collect();
    for s in seeds {
        if !all.contains(s) {
            all.push(s.clone());
        }
    }
    let finished: Option<i64> = redis
        .cmd(redis::cmd("HGET").arg(&keys.meta).arg("finished_at"))
        .await?;
    Ok(Joined {
        config,
        seeds: all,
        finished: finished.is_some(),
        started,
    })
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> DistError {
    DistError::Corrupt {
        what: what.into(),
        detail: e.to_string(),
    }
}

/// Leases this process holds: key → host. Renewed until the page is completed.
pub(super) type Held = DashMap<String, String>;

impl RedisCrawl {
    /// The effective configuration.
    pub fn config(&self) -> &CrawlConfig {
        &self.config
    }

    /// The crawl's seeds (all processes').
    pub fn seeds(&self) -> &[Url] {
        &self.seeds
    }

    /// Whether the crawl is already finished (nothing to do).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether this process created the crawl (false: it joined one).
    pub fn created(&self) -> bool {
        self.started
    }

    /// The crawl id.
    pub fn crawl_id(&self) -> &str {
        self.keys.id()
    }

    /// A live view of this process's counters.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// Crawl with the other processes until the crawl is drained or `shutdown`
    /// completes. On shutdown, fetches under way get the grace period; what is not
    /// finished is given back to the crawl (or its lease expires) for another process.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Summary, Error> {
        let RedisCrawl {
            redis,
            keys,
            config,
            seeds: _,
            new_seeds,
            scope,
            fetcher,
            filter,
            finished,
            started: _,
            progress,
            cancel,
        } = self;
        let queue = Arc::new(Queue::new(
            redis.clone(),
            keys.clone(),
            Budget {
                max_pages: config.max_pages,
                max_pages_per_host: config.max_pages_per_host,
            },
        ));
        if finished {
            return Ok(Summary {
                outcome: Outcome::AlreadyFinished,
                resumed: true,
                run: progress.stats.snapshot(Duration::ZERO),
                known_urls: 0,
                queued: 0,
                visited: Default::default(),
            });
        }
        let rules = Arc::new(Rules {
            scope,
            filter,
            limits: Limits {
                max_depth: config.max_depth,
                max_pages: config.max_pages,
                max_redirects: config.max_redirects,
                max_pages_per_host: config.max_pages_per_host,
            },
            traps: Traps {
                max_url_length: config.max_url_length,
                max_path_segments: config.max_path_segments,
                max_repeated_segments: config.max_repeated_segments,
            },
            strip_session_ids: config.strip_session_ids,
        });
        // Seeds are admitted by every process that names them: the first admission wins.
        let mut by_host: HashMap<String, Vec<Candidate>> = HashMap::new();
        for seed in &new_seeds {
            let mut key = String::new();
            rules.key_of(seed, &mut key);
            by_host.entry(host_key(seed)).or_default().push(Candidate {
                admission: Admission {
                    url: (seed.as_str() != key).then(|| seed.to_string()),
                    ..Admission::default()
                },
                key,
                skip: None,
            });
        }
        for (host, candidates) in &by_host {
            queue.admit(host, candidates, false).await?;
        }
        if !by_host.is_empty() {
            queue.bump().await?;
        }

        let reader = Reader::new(fetcher, &config);
        let held: Arc<Held> = Arc::new(DashMap::new());
        let robots = Arc::new(RobotsCache::new(
            (!config.ignore_robots).then(|| reader.agent.clone()),
            reader.fetcher.clone(),
        ));
        let worker = Arc::new(Worker {
            reader,
            queue: queue.clone(),
            rules: rules.clone(),
            robots: robots.clone(),
            stats: progress.stats.clone(),
            held: held.clone(),
            cancel: cancel.clone(),
            sitemaps: config.sitemaps,
        });
        let (tx, rx) = async_channel::bounded::<Lease>(config.concurrency);
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..config.concurrency {
            workers.spawn(worker.clone().run(rx.clone()));
        }
        drop(worker);
        let renewer = tokio::spawn(renew(queue.clone(), held.clone(), config.lease));
        let proc_id = format!(
            "{}-{}-{:08x}",
            hostname(),
            std::process::id(),
            fastrand::u32(..)
        );
        let heart = tokio::spawn(heartbeat(
            redis.clone(),
            keys.clone(),
            proc_id.clone(),
            progress.clone(),
        ));

        let dispatcher = Dispatcher {
            queue: queue.clone(),
            robots,
            held: held.clone(),
            per_host: config.per_host,
            interval: config.host_interval(),
            max_crawl_delay: config.max_crawl_delay,
            lease: config.lease,
            cancel: cancel.clone(),
        };
        tokio::pin!(shutdown);
        let rx_probe = rx.clone();
        drop(rx);
        // The dispatcher is never dropped mid-call: a take whose script ran but whose reply
        // was not read would leave leases nobody knows to give back. It sees the stop at
        // its next step instead.
        let dispatch = dispatcher.run(tx, rx_probe);
        tokio::pin!(dispatch);
        let dispatched = tokio::select! {
            r = &mut dispatch => r,
            _ = &mut shutdown => {
                tracing::info!("stop requested: finishing fetches under way");
                cancel.cancel();
                match dispatch.await {
                    // Redis was away when the stop came: nothing more to lease anyway.
                    Err(DistError::Unreachable(_)) => Ok(false),
                    other => other.map(|_| false),
                }
            }
        };
        if dispatched.is_err() {
            cancel.cancel();
        }
        crate::worker::join_pool(
            &mut workers,
            &cancel,
            config.grace_period,
            "their leases expire and another process takes them",
        )
        .await;
        renewer.abort();
        heart.abort();
        // Leases of URLs never started go back at once rather than at expiry.
        let mut left: HashMap<String, Vec<String>> = HashMap::new();
        for e in held.iter() {
            left.entry(e.value().clone())
                .or_default()
                .push(e.key().clone());
        }
        // Best effort: a lease not given back returns when it expires.
        for (host, keys_left) in left {
            if let Err(e) = queue.release(&host, &keys_left).await {
                tracing::warn!(
                    "could not give back {} leases of {host} ({e}); they return when they expire",
                    keys_left.len()
                );
            }
        }
        let _: Result<i64, _> = redis
            .cmd_once(redis::cmd("HDEL").arg(&keys.processes).arg(&proc_id))
            .await;
        let finished = match dispatched {
            Ok(done) => done,
            Err(e) => return Err(e.into()),
        };
        if finished {
            let _: Result<i64, _> = redis
                .cmd_once(
                    redis::cmd("HSETNX")
                        .arg(&keys.meta)
                        .arg("finished_at")
                        .arg(now_ms()),
                )
                .await;
        }
        let pages = progress.stats.pages();
        tracing::info!(
            redis_commands = redis.sent(),
            pages,
            per_page = format!("{:.1}", redis.sent() as f64 / pages.max(1) as f64),
            "Redis commands sent by this process"
        );
        let counts = super::status::count(&redis, &keys)
            .await
            .unwrap_or_default();
        Ok(Summary {
            outcome: if finished {
                Outcome::Finished
            } else {
                Outcome::Interrupted
            },
            resumed: true,
            run: progress.stats.snapshot(progress.started.elapsed()),
            known_urls: counts.known,
            queued: counts.queued,
            // The visited set lives in Redis.
            visited: Default::default(),
        })
    }
}

/// Leases URLs host by host into the channel.
struct Dispatcher {
    queue: Arc<Queue>,
    robots: Arc<RobotsCache>,
    held: Arc<Held>,
    per_host: usize,
    interval: Duration,
    max_crawl_delay: Duration,
    lease: Duration,
    cancel: CancellationToken,
}

/// How long the dispatcher sleeps when nothing could be leased, at most.
const IDLE_MAX: Duration = Duration::from_millis(200);
/// How long a host whose robots.txt is being read waits before its next lease.
const PROBE_WAIT: Duration = Duration::from_millis(100);
/// How often the host list is read again.
const HOSTS_EVERY: Duration = Duration::from_millis(500);

impl Dispatcher {
    /// Returns true when the crawl drained, false when stopped.
    async fn run(
        self,
        tx: async_channel::Sender<Lease>,
        probe: async_channel::Receiver<Lease>,
    ) -> Result<bool, DistError> {
        let mut hosts: Vec<String> = Vec::new();
        let mut hosts_read = Instant::now() - HOSTS_EVERY;
        let mut not_before: HashMap<String, Instant> = HashMap::new();
        let mut idle = Duration::from_millis(5);
        let mut start = 0usize;
        loop {
            if self.cancel.is_cancelled() {
                return Ok(false);
            }
            if hosts_read.elapsed() >= HOSTS_EVERY {
                hosts = self.queue.active_hosts().await?;
                hosts_read = Instant::now();
            }
            let mut took = false;
            let now = Instant::now();
            let n = hosts.len();
            for i in 0..n {
                let host = &hosts[(start + i) % n];
                let room = tx.capacity().unwrap_or(usize::MAX) - tx.len();
                if room == 0 || self.cancel.is_cancelled() {
                    break;
                }
                if not_before.get(host).is_some_and(|t| *t > now) {
                    continue;
                }
                // Until this process has read the host's robots.txt, one lease at a time:
                // the worker holding it reads robots.txt first.
                let (interval, room) = match self.robots.known(host) {
                    Some(rules) => (
                        self.robots
                            .crawl_delay(&rules)
                            .map(|d| d.min(self.max_crawl_delay))
                            .unwrap_or_default()
                            .max(self.interval),
                        room,
                    ),
                    None => {
                        not_before.insert(host.clone(), now + PROBE_WAIT);
                        (self.interval, 1)
                    }
                };
                let taken = self
                    .queue
                    .take(host, self.per_host, interval, self.lease, room)
                    .await?;
                if taken.reclaimed > 0 {
                    tracing::info!(
                        host,
                        n = taken.reclaimed,
                        "took back expired leases of a process that stopped"
                    );
                }
                if !taken.wait.is_zero() {
                    not_before.insert(host.clone(), now + taken.wait);
                } else if taken.leases.is_empty() {
                    // Empty or at its limit: ask again after the current idle wait rather
                    // than on every pass over the other hosts.
                    not_before.insert(host.clone(), now + idle);
                }
                for lease in taken.leases {
                    took = true;
                    self.held.insert(lease.key.clone(), lease.host.clone());
                    if tx.send(lease).await.is_err() {
                        return Ok(false);
                    }
                }
            }
            start = start.wrapping_add(1);
            if took {
                idle = Duration::from_millis(5);
                continue;
            }
            if self.held.is_empty() && probe.is_empty() && self.queue.is_drained().await? {
                return Ok(true);
            }
            tokio::select! {
                _ = tokio::time::sleep(idle) => {}
                _ = self.cancel.cancelled() => return Ok(false),
            }
            idle = (idle * 2).min(IDLE_MAX);
        }
    }
}

/// Renew every lease held, a few times per lease period, so a slow fetch never loses its
/// lease while its process lives.
async fn renew(queue: Arc<Queue>, held: Arc<Held>, lease: Duration) {
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

/// Write this process's heartbeat for `trawl status`.
async fn heartbeat(redis: Redis, keys: CrawlKeys, id: String, progress: Progress) {
    loop {
        let beat = serde_json::json!({
            "at": now_ms(),
            "pages": progress.stats.pages(),
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

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}
