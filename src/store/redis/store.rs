//! One process's part of a Redis crawl: the dispatcher's round over the hosts, the
//! leases it holds, and the `Store` seam the engine drives, over the Lua scripts of
//! `queue`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use url::Url;

use super::collect::Collecting;
use super::process::{self, Held, Process};
use super::queue::Queue;
use super::records::{Admit, Admitted, Budget, Lease, Queued, Row, StoredEdge};
use super::sent::Sent;
use super::take::Taker;
use super::{status, CrawlKeys, DistError, Redis};
use crate::admit::{Candidate, Outlinks, Rules, SkipReason};
use crate::config::CrawlConfig;
use crate::result::{ErrorKind, PageResult};
use crate::stats::Stats;
use crate::store::{CrawlWide, Finished, FrontierCounts, HostState, Job, SitemapDoc, Store, Taken};
use crate::traps::query_group;
use crate::url_norm::{host_key, key_hash};
use crate::warc::CommitBarrier;

/// How long `wait` sleeps when nothing could be taken, at most (it starts at `IDLE_MIN`
/// and doubles while nothing comes).
const IDLE_MAX: Duration = Duration::from_millis(200);
const IDLE_MIN: Duration = Duration::from_millis(5);

/// One process's part of a Redis crawl. See the module doc of [`crate::store::redis`].
pub struct RedisStore {
    redis: Redis,
    keys: CrawlKeys,
    queue: Arc<Queue>,
    rules: Arc<Rules>,
    /// What this process holds: URL leases (by queue element) with their tokens, and
    /// tokens alone. Renewed until the page is completed; given back when the process
    /// stops.
    held: Arc<DashMap<String, Held>>,
    per_host: usize,
    /// The configured spacing between requests to one host.
    interval: Duration,
    /// Hosts with a spacing of their own (robots.txt Crawl-delay, as this process read it).
    host_intervals: DashMap<String, Duration>,
    lease: Duration,
    /// The WARC records of a page are written before its result is stored.
    barrier: Option<Arc<CommitBarrier>>,
    taker: Taker,
    /// How long `wait` sleeps next.
    idle: Mutex<Duration>,
    /// This process finished a URL: a slot of its host is free.
    freed: tokio::sync::Notify,
    process: Process,
    /// This process's collector, when it was given the results file.
    collector: Mutex<Option<Collecting>>,
    /// URLs this process admitted already: a page's links found again stay here.
    sent: Sent,
}

/// A Redis job's handle: its lease.
pub type RedisTicket = Lease;

impl RedisStore {
    /// This process's part of the crawl `keys` on `redis`, judging links by `rules`, with
    /// its heartbeat and lease renewal running until [`Store::finish`]; with `collect`, it
    /// collects the crawl's results into that file too (or stands by to, see `collect`).
    pub fn start(
        redis: Redis,
        keys: CrawlKeys,
        config: &CrawlConfig,
        rules: Arc<Rules>,
        barrier: Option<CommitBarrier>,
        stats: Arc<Stats>,
        collect: Option<std::path::PathBuf>,
    ) -> RedisStore {
        let collector = collect.map(|path| Collecting::start(redis.clone(), keys.clone(), path));
        let queue = Arc::new(Queue::new(
            redis.clone(),
            keys.clone(),
            Budget {
                max_pages: config.max_pages,
                max_pages_per_host: config.max_pages_per_host,
                max_depth: config.max_depth,
                max_query_variants: config.max_query_variants,
            },
        ));
        let held = Arc::new(DashMap::new());
        let id = process::new_id();
        let taker = Taker::new(queue.clone(), config.per_host, config.lease, id.clone());
        let process = Process::start(&redis, &keys, &queue, &held, config.lease, stats, id);
        RedisStore {
            redis,
            keys,
            queue,
            rules,
            held,
            per_host: config.per_host,
            interval: config.host_interval(),
            host_intervals: DashMap::new(),
            lease: config.lease,
            barrier: barrier.map(Arc::new),
            taker,
            idle: Mutex::new(IDLE_MIN),
            freed: tokio::sync::Notify::new(),
            process,
            collector: Mutex::new(collector),
            sent: Sent::default(),
        }
    }

    /// This process is done with a URL of `host` (stored, retried, skipped, given back):
    /// the host may have room again, so the dispatcher need not wait out its idle time.
    fn finished_one(&self, host: &str, member: &str) {
        self.held.remove(member);
        self.taker.ended(host);
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = IDLE_MIN;
        self.freed.notify_one();
    }

    /// The token of this process's slot for requests outside the queues on `host`.
    fn slot_key(&self, host: &str) -> String {
        format!("~{}/{host}", self.process.id())
    }

    fn interval_of(&self, host: &str) -> Duration {
        self.host_intervals
            .get(host)
            .map_or(Duration::ZERO, |d| *d)
            .max(self.interval)
    }

    /// The candidates grouped by host and shard for the admission script, and the page's
    /// edges. With `sent`, a candidate this process's memory of admitted URLs covers is
    /// left out of the groups (its edge is kept), and the others are pushed to `sent` as
    /// (hash, depth, followed), for the memory once Redis has answered.
    fn plan(
        &self,
        referrer: Option<&str>,
        candidates: impl Iterator<Item = Candidate>,
        mut sent: Option<&mut Vec<(u128, u32, bool)>>,
    ) -> (Groups, Vec<StoredEdge>) {
        let mut groups = Groups::new();
        let mut edges = Vec::with_capacity(candidates.size_hint().0);
        let mut held = sent.is_some().then(|| self.sent.hold());
        for c in candidates {
            let mut key = String::new();
            self.rules.key_of(&c.url, &mut key);
            // The URL's hash names it; its path's (the same without a query) picks its
            // shard and counts its query variants: each hashed once.
            let own = key_hash(&key);
            if let (Some(sent), Some(held)) = (sent.as_deref_mut(), held.as_mut()) {
                if held.covers(own, c.depth, c.follow) {
                    if let Some(spec) = c.edge {
                        edges.push(StoredEdge {
                            key,
                            hash: own,
                            spec,
                        });
                    }
                    continue;
                }
                sent.push((own, c.depth, c.follow));
            }
            let skip = self.rules.judge(&c, &key);
            if let Some(spec) = c.edge {
                edges.push(StoredEdge {
                    key: key.clone(),
                    hash: own,
                    spec,
                });
            }
            let group = query_group(&key).map(key_hash);
            let shard = self.keys.shard_of(group.unwrap_or(own));
            let hash = format!("{own:032x}");
            let url = (c.url.as_str() != key).then(|| c.url.to_string());
            let queued = Queued {
                key,
                url,
                chain: c.chain,
                validators: None,
            };
            let row = Row {
                key: queued.key.clone(),
                url: queued.url.clone(),
                referrer: referrer.map(str::to_owned),
            };
            groups
                .entry((host_key(&c.url), shard))
                .or_default()
                .push(Admit {
                    element: queued.element(&hash),
                    row: serde_json::to_string(&row).expect("serialising a row"),
                    group: group.map(|g| format!("{g:032x}")),
                    hash,
                    depth: c.depth,
                    skip: skip.map(SkipReason::as_str),
                    follow: c.follow,
                });
        }
        (groups, edges)
    }

    /// Admit each group (one script per host and shard, sent together); bump the
    /// generation when work changed hands, before the page that made it is completed.
    async fn admit(&self, groups: &Groups, front: bool) -> Result<Admitted, DistError> {
        let calls = groups
            .iter()
            .map(|((host, shard), urls)| self.queue.admit(host, *shard, urls, front));
        let mut all = Admitted::default();
        for (r, (host, shard)) in futures_util::future::join_all(calls)
            .await
            .into_iter()
            .zip(groups.keys())
        {
            let a = r?;
            self.taker.admitted(host, *shard);
            all.new += a.new;
            all.requeued += a.requeued;
        }
        if all.moved() {
            self.queue.bump().await?;
        }
        Ok(all)
    }

    /// Wait until the WARC records of every fetch so far are on disk.
    async fn warc_written(&self) -> Result<(), DistError> {
        if let Some(b) = &self.barrier {
            let b = b.clone();
            tokio::task::spawn_blocking(move || b.wait())
                .await
                .map_err(|e| DistError::Internal(format!("the WARC barrier panicked: {e}")))??;
        }
        Ok(())
    }

    /// A lease whose URL no longer parses: recorded as failed at once.
    async fn bad_url(&self, lease: Lease, e: url::ParseError) -> Result<(), DistError> {
        let mut result = PageResult {
            depth: lease.depth,
            fetched_at: crate::store::now_ms(),
            attempts: lease.tries + 1,
            ..PageResult::default()
        };
        result.fail(
            ErrorKind::BadUrl,
            format!("unusable URL {}: {e}", lease.queued.key),
        );
        self.queue.complete(&lease, &result, &[]).await?;
        self.held.remove(&lease.element);
        Ok(())
    }

    /// The job of a lease; the lease back when its URL no longer parses.
    fn job(&self, lease: Lease) -> Result<Job<RedisStore>, Box<(Lease, url::ParseError)>> {
        let url = match Url::parse(lease.queued.url.as_deref().unwrap_or(&lease.queued.key)) {
            Ok(u) => u,
            Err(e) => return Err(Box::new((lease, e))),
        };
        Ok(Job {
            url,
            host: lease.host.clone(),
            depth: lease.depth,
            attempts: lease.tries,
            chain: lease.queued.chain.clone(),
            validators: lease.queued.validators.clone().map(Box::new),
            ticket: lease,
        })
    }

    /// Take from the hosts in turn, from where the last take stopped.
    async fn take_round(&self, room: usize) -> Result<Vec<Lease>, DistError> {
        let idle = *self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let leases = self
            .taker
            .round(room, idle, |host| self.interval_of(host))
            .await?;
        for lease in &leases {
            self.held.insert(
                lease.element.clone(),
                Held {
                    host: lease.host.clone(),
                    shard: Some(lease.shard),
                    token: lease.token.clone(),
                },
            );
        }
        Ok(leases)
    }
}

/// Candidates to admit, by host and shard.
type Groups = HashMap<(String, usize), Vec<Admit>>;

impl Store for RedisStore {
    type Host = String;
    type Ticket = RedisTicket;
    type Error = DistError;

    async fn admit_seeds(&self, seeds: &[Url]) -> Result<(), DistError> {
        // Every process that names a seed admits it: the first admission wins.
        let (groups, _) = self.plan(None, seeds.iter().cloned().map(Candidate::seed), None);
        self.admit(&groups, false).await?;
        Ok(())
    }

    async fn take(&self, room: usize) -> Result<Taken<Self>, DistError> {
        let leases = self.take_round(room.max(1)).await?;
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = if leases.is_empty() {
            let idle = *self.idle.lock().unwrap_or_else(|p| p.into_inner());
            (idle * 2).min(IDLE_MAX)
        } else {
            IDLE_MIN
        };
        let mut jobs = Vec::with_capacity(leases.len());
        for lease in leases {
            match self.job(lease) {
                Ok(job) => jobs.push(job),
                Err(bad) => {
                    let (lease, e) = *bad;
                    self.bad_url(lease, e).await?
                }
            }
        }
        Ok(Taken { jobs, next: None })
    }

    async fn wait(&self, until: Option<Instant>) {
        // Other processes' changes are seen by polling, this process's own at once.
        let idle = *self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = Instant::now() + idle;
        if let Some(t) = until {
            at = at.min(t);
        }
        tokio::select! {
            _ = tokio::time::sleep_until(at.into()) => {}
            _ = self.freed.notified() => {}
        }
    }

    async fn is_drained(&self) -> Result<bool, DistError> {
        Ok(self.held.is_empty() && self.queue.is_drained().await?)
    }

    fn depth_now(&self, job: &Job<Self>, _hash: u128) -> u32 {
        // The lease carries the admission record as it was when taken.
        job.depth
    }

    async fn started(&self, host: &String) -> Result<Option<Instant>, DistError> {
        let wait = self.queue.started(host, self.interval_of(host)).await?;
        Ok((!wait.is_zero()).then(|| Instant::now() + wait))
    }

    async fn pause(&self, host: &String, until: Instant) -> Result<(), DistError> {
        let wait = until.saturating_duration_since(Instant::now());
        self.queue.pause(host, wait).await
    }

    async fn retry(&self, job: Job<Self>, at: Instant) -> Result<(), DistError> {
        let delay = at.saturating_duration_since(Instant::now());
        self.queue.retry(&job.ticket, delay).await?;
        self.finished_one(&job.ticket.host, &job.ticket.element);
        Ok(())
    }

    async fn complete(
        &self,
        job: Job<Self>,
        result: PageResult,
        links: Outlinks,
    ) -> Result<(), DistError> {
        let lease = job.ticket;
        let front = matches!(links, Outlinks::Redirect(_));
        self.sent.after(self.redis.interruptions());
        let mut sent = Vec::new();
        let (groups, edges) =
            self.plan(Some(&lease.queued.key), links.candidates(), Some(&mut sent));
        self.admit(&groups, front).await?;
        self.sent.record(sent);
        self.warc_written().await?;
        self.queue.complete(&lease, &result, &edges).await?;
        crate::failpoint::hit(crate::failpoint::Point::AfterCommit);
        self.finished_one(&lease.host, &lease.element);
        Ok(())
    }

    async fn release(&self, job: Job<Self>) -> Result<(), DistError> {
        let lease = job.ticket;
        self.queue
            .release(
                &lease.host,
                lease.shard,
                std::slice::from_ref(&lease.element),
            )
            .await?;
        self.queue
            .free(&lease.host, std::slice::from_ref(&lease.token))
            .await?;
        self.finished_one(&lease.host, &lease.element);
        Ok(())
    }

    async fn skip(&self, job: Job<Self>, reason: SkipReason) -> Result<(), DistError> {
        self.queue.skip(&job.ticket, reason.as_str()).await?;
        self.finished_one(&job.ticket.host, &job.ticket.element);
        Ok(())
    }

    fn set_interval(&self, host: &String, interval: Duration) {
        self.host_intervals.insert(host.clone(), interval);
    }

    async fn occupy(&self, host: &String) -> Result<bool, DistError> {
        let slot = self.slot_key(host);
        let taken = self
            .queue
            .occupy(host, &slot, self.per_host, self.lease)
            .await?;
        if taken {
            // Renewed with the URL leases while the read lasts.
            self.held.insert(
                slot.clone(),
                Held {
                    host: host.clone(),
                    shard: None,
                    token: slot,
                },
            );
        }
        Ok(taken)
    }

    async fn vacate(&self, host: &String) -> Result<(), DistError> {
        let slot = self.slot_key(host);
        self.queue.free(host, std::slice::from_ref(&slot)).await?;
        self.finished_one(host, &slot);
        Ok(())
    }

    async fn book(&self, host: &String) -> Result<Instant, DistError> {
        let wait = self.queue.book(host, self.interval_of(host)).await?;
        Ok(Instant::now() + wait)
    }

    async fn sitemaps_to_read(
        &self,
        host: &String,
        listed: Vec<Url>,
    ) -> Result<Vec<Url>, DistError> {
        // One process reads a host's sitemaps for the whole crawl.
        Ok(if self.queue.claim_sitemaps(host).await? {
            listed
        } else {
            Vec::new()
        })
    }

    async fn record_sitemap(&self, doc: SitemapDoc) -> Result<bool, DistError> {
        let parent_key = doc.parent.as_ref().map(|p| {
            let mut key = String::new();
            self.rules.key_of(p, &mut key);
            key
        });
        let candidate = Candidate::sitemap_doc(doc.url.clone(), parent_key.is_some());
        let (groups, _) = self.plan(parent_key.as_deref(), std::iter::once(candidate), None);
        let ((doc_host, doc_shard), mut doc_admit) =
            groups.into_iter().next().expect("one candidate");
        let doc_admit = doc_admit.pop().expect("one candidate");
        let is_new = self
            .queue
            .admit(
                &doc_host,
                doc_shard,
                std::slice::from_ref(&doc_admit),
                false,
            )
            .await?
            .new
            == 1;
        // A top-level document known already was read by an earlier run of the crawl.
        if !is_new && parent_key.is_none() {
            return Ok(false);
        }
        let entries = doc.entries.into_iter().map(|e| {
            if doc.index {
                Candidate::sitemap_doc(e, true)
            } else {
                Candidate::sitemap_entry(e)
            }
        });
        let doc_key = Queued::parse(&doc_admit.element)?.key;
        let (groups, edges) = self.plan(Some(&doc_key), entries, None);
        let admitted = self.admit(&groups, false).await?;
        if is_new && !admitted.moved() {
            self.queue.bump().await?;
        }
        let as_lease = Lease {
            host: doc_host,
            shard: doc_shard,
            token: String::new(),
            queued: Queued {
                key: doc_key,
                ..Queued::default()
            },
            element: doc_admit.element,
            hash: doc_admit.hash,
            depth: doc_admit.depth,
            tries: 0,
        };
        self.warc_written().await?;
        self.queue.complete(&as_lease, &doc.result, &edges).await?;
        Ok(true)
    }

    fn counts(&self) -> FrontierCounts {
        FrontierCounts {
            in_flight: self.held.len(),
            ..FrontierCounts::default()
        }
    }

    async fn host_states(&self, hosts: Vec<String>) -> Result<Vec<HostState>, DistError> {
        // One script per host (each on its own slot), sent together.
        let reads = hosts.iter().map(|h| self.queue.host_now(h));
        let read = futures_util::future::try_join_all(reads).await?;
        Ok(hosts
            .iter()
            .zip(read)
            .map(|(host, (in_flight, paused_until))| HostState {
                in_flight,
                delay: self.interval_of(host),
                paused_until,
            })
            .collect())
    }

    async fn crawl_wide(&self) -> Result<Option<CrawlWide>, DistError> {
        super::status::crawl_wide(&self.redis, &self.keys)
            .await
            .map(Some)
    }

    async fn finish(&self, drained: bool) -> Result<Finished, DistError> {
        self.process.stop(&self.queue, &self.held).await;
        if drained {
            let _: Result<i64, _> = self
                .redis
                .cmd_once(
                    redis::cmd("HSETNX")
                        .arg(&self.keys.meta)
                        .arg("finished_at")
                        .arg(crate::store::now_ms()),
                )
                .await;
        }
        let collector = self
            .collector
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(c) = collector {
            c.finish(drained).await?;
        }
        let counts = status::count(&self.redis, &self.keys)
            .await
            .unwrap_or_default();
        Ok(Finished {
            known_urls: counts.known,
            queued: counts.queued,
            visited: Default::default(),
        })
    }
}
