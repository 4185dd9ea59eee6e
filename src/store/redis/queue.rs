//! The shared frontier and visited set: typed calls over the scripts in `scripts`, on a
//! host's own keys or its part in one shard.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::conn::Redis;
use super::keys::{CrawlKeys, Stream};
use super::records::{
    encode_edges, Admit, Admitted, Budget, Granted, Lease, Popped, Queued, StoredEdge, HASH_LEN,
    RESULTS_IN_TRANSIT,
};
use super::scripts;
use super::DistError;
use crate::result::PageResult;

/// See the module doc.
pub struct Queue {
    redis: Redis,
    keys: CrawlKeys,
    budget: Budget,
    /// (set, member) pairs this process has already added: hosts to `hosts` and `active`,
    /// shards to a host's `shards`.
    added: Mutex<HashSet<(String, String)>>,
    /// Streams this process wrote to, for the `unread` set.
    unread: Mutex<HashSet<Stream>>,
    /// When this process last said that a full results stream holds its workers up: once
    /// per `FULL_WARN_EVERY`, not once per waiting worker.
    warned_full: Mutex<Option<Instant>>,
}

/// How often a completing worker looks again at a full results stream.
const FULL_RETRY: Duration = Duration::from_millis(10);
/// At most one warning per this long that workers wait for the collector.
const FULL_WARN_EVERY: Duration = Duration::from_secs(60);

fn ms(d: Duration) -> String {
    (d.as_millis() as u64).to_string()
}

impl Queue {
    /// The queue of the crawl `keys`.
    pub fn new(redis: Redis, keys: CrawlKeys, budget: Budget) -> Queue {
        Queue {
            redis,
            keys,
            budget,
            added: Mutex::new(HashSet::new()),
            unread: Mutex::new(HashSet::new()),
            warned_full: Mutex::new(None),
        }
    }

    /// Note that `stream` was written to.
    fn wrote(&self, host: &str, shard: Option<usize>) {
        let stream = Stream {
            host: host.to_owned(),
            shard,
        };
        let mut u = self.unread.lock().unwrap_or_else(|p| p.into_inner());
        u.insert(stream);
    }

    /// Tell the collector which streams this process wrote to since the last call.
    pub async fn flush_unread(&self) -> Result<(), DistError> {
        let members: Vec<String> = {
            let mut u = self.unread.lock().unwrap_or_else(|p| p.into_inner());
            u.drain().map(|s| s.member()).collect()
        };
        if members.is_empty() {
            return Ok(());
        }
        let _: i64 = self
            .redis
            .cmd(redis::cmd("SADD").arg(&self.keys.unread).arg(&members))
            .await?;
        Ok(())
    }

    /// Admit URLs of one host in one shard (`front`: ahead of its queue, for redirect
    /// targets). A URL known already gets the shorter depth, and is queued after all when
    /// it was held back and no longer is, as in a local crawl.
    pub async fn admit(
        &self,
        host: &str,
        shard: usize,
        urls: &[Admit],
        front: bool,
    ) -> Result<Admitted, DistError> {
        if urls.is_empty() {
            return Ok(Admitted::default());
        }
        let fetchable = urls.iter().filter(|u| u.skip.is_none()).count() as i64;
        // Before the script: a host must never hold URLs in a shard without the sets the
        // dispatchers, the drain check and the collector walk naming it, even if this
        // process dies between.
        self.add_once(&self.keys.hosts, host).await?;
        if fetchable > 0 {
            self.add_once(&self.keys.active, host).await?;
        }
        self.add_once(&self.keys.host(host).shards, &shard.to_string())
            .await?;
        let k = self.keys.part(host, shard);
        let state = self.keys.host(host).state;
        let host_allow = self
            .reserve(
                self.budget.max_pages_per_host,
                fetchable,
                &state,
                "admitted",
            )
            .await?;
        let allow = self
            .reserve(self.budget.max_pages, fetchable, &self.keys.admitted, "")
            .await?;
        let depths: Vec<String> = urls.iter().map(|u| u.depth.to_string()).collect();
        let head = [
            host_allow.to_string(),
            allow.to_string(),
            (if front { "front" } else { "back" }).to_string(),
            self.budget.max_depth.to_string(),
            self.budget.max_query_variants.to_string(),
        ];
        let mut args: Vec<&str> = head.iter().map(String::as_str).collect();
        for (u, depth) in urls.iter().zip(&depths) {
            args.extend([
                u.hash.as_str(),
                &u.element,
                &u.row,
                u.skip.unwrap_or(""),
                depth,
                if u.follow { "1" } else { "0" },
                u.group.as_deref().unwrap_or(""),
            ]);
        }
        let (queued, host_used, flags): (i64, i64, Vec<i64>) = self
            .redis
            .script(
                &scripts::ADMIT,
                &[&k.seen, &k.queue, &k.variants, &k.out, &k.counts],
                &args,
            )
            .await?;
        self.wrote(host, Some(shard));
        self.unreserve(host_allow, host_used, fetchable, &state, "admitted")
            .await?;
        self.unreserve(allow, queued, fetchable, &self.keys.admitted, "")
            .await?;
        Ok(Admitted {
            new: flags.iter().filter(|&&f| f == 1).count(),
            requeued: flags.iter().filter(|&&f| f == 2).count(),
        })
    }

    /// Reserve budget under `limit` (0: none) for `fetchable` URLs before the admission
    /// script, which counts what it used: the counter (`key`, or a field of the hash `key`)
    /// lives in another slot, so it cannot be read inside the script. Concurrent
    /// reservations can make a URL near the limit skipped while budget remains; the limit
    /// itself is never passed. -1: no limit.
    async fn reserve(
        &self,
        limit: u64,
        fetchable: i64,
        key: &str,
        field: &str,
    ) -> Result<i64, DistError> {
        if limit == 0 || fetchable == 0 {
            return Ok(-1);
        }
        let total: i64 = self.incr(key, field, fetchable).await?;
        let before = total - fetchable;
        Ok((limit as i64 - before).clamp(0, fetchable))
    }

    /// Give back what the script did not use of a reservation.
    async fn unreserve(
        &self,
        allowed: i64,
        used: i64,
        fetchable: i64,
        key: &str,
        field: &str,
    ) -> Result<(), DistError> {
        if allowed >= 0 && used < fetchable {
            let _: i64 = self.incr(key, field, used - fetchable).await?;
        }
        Ok(())
    }

    async fn incr(&self, key: &str, field: &str, by: i64) -> Result<i64, DistError> {
        let mut cmd = redis::cmd(if field.is_empty() {
            "INCRBY"
        } else {
            "HINCRBY"
        });
        cmd.arg(key);
        if !field.is_empty() {
            cmd.arg(field);
        }
        cmd.arg(by);
        self.redis.cmd(&cmd).await
    }

    /// Mark that work changed hands: called after admissions and before completing the
    /// page that made them (see [`Queue::is_drained`]).
    pub async fn bump(&self) -> Result<(), DistError> {
        let _: i64 = self
            .redis
            .cmd(redis::cmd("INCR").arg(&self.keys.generation))
            .await?;
        Ok(())
    }

    /// `SADD set member`, once per process.
    async fn add_once(&self, set: &str, member: &str) -> Result<(), DistError> {
        let pair = (set.to_owned(), member.to_owned());
        if self.added.lock().expect("lock").contains(&pair) {
            return Ok(());
        }
        let _: i64 = self
            .redis
            .cmd(redis::cmd("SADD").arg(set).arg(member))
            .await?;
        self.added.lock().expect("lock").insert(pair);
        Ok(())
    }

    /// The hosts that ever had a URL to fetch: the ones to lease from.
    pub async fn active_hosts(&self) -> Result<Vec<String>, DistError> {
        self.redis
            .cmd(redis::cmd("SMEMBERS").arg(&self.keys.active))
            .await
    }

    /// The shards holding URLs of `host`, in order.
    pub async fn shards_of(&self, host: &str) -> Result<Vec<usize>, DistError> {
        shards_of(&self.redis, &self.keys, host).await
    }

    /// Take up to `tokens.len()` of `host`'s request slots, under the per-host limit, its
    /// spacing and pauses.
    pub async fn grant(
        &self,
        host: &str,
        per_host: usize,
        interval: Duration,
        lease: Duration,
        tokens: Vec<String>,
    ) -> Result<Granted, DistError> {
        let k = self.keys.host(host);
        let head = [per_host.to_string(), ms(interval), ms(lease)];
        let mut args: Vec<&str> = head.iter().map(String::as_str).collect();
        args.extend(tokens.iter().map(String::as_str));
        let reply: Vec<String> = self
            .redis
            .script(&scripts::GRANT, &[&k.state, &k.tokens], &args)
            .await?;
        let mut it = reply.into_iter();
        let mut number = || it.next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let wait = number();
        let room = if wait == 0 { number() as usize } else { 0 };
        Ok(Granted {
            wait: Duration::from_millis(wait),
            room,
            tokens: it.collect(),
        })
    }

    /// Give back tokens of `host` (requests done, or slots not used).
    pub async fn free(&self, host: &str, tokens: &[String]) -> Result<(), DistError> {
        if tokens.is_empty() {
            return Ok(());
        }
        let _: i64 = self
            .redis
            .cmd(
                redis::cmd("ZREM")
                    .arg(&self.keys.host(host).tokens)
                    .arg(tokens),
            )
            .await?;
        Ok(())
    }

    /// Lease up to `n` URLs of `host`'s part in `shard`.
    pub async fn pop(
        &self,
        host: &str,
        shard: usize,
        lease: Duration,
        n: usize,
    ) -> Result<Popped, DistError> {
        let k = self.keys.part(host, shard);
        let reply: Vec<String> = self
            .redis
            .script(
                &scripts::POP,
                &[&k.queue, &k.leases, &k.retries, &k.seen, &k.tries],
                &[&ms(lease), &n.to_string()],
            )
            .await?;
        let mut it = reply.into_iter();
        let reclaimed = it.next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let mut leases = Vec::new();
        while let (Some(element), Some(depth), Some(tries)) = (it.next(), it.next(), it.next()) {
            let queued = Queued::parse(&element)?;
            leases.push(Lease {
                host: host.to_owned(),
                shard,
                token: String::new(),
                hash: element.get(..HASH_LEN).unwrap_or_default().to_owned(),
                element,
                queued,
                depth: depth.parse().unwrap_or(0),
                tries: tries.parse().unwrap_or(0),
            });
        }
        Ok(Popped { reclaimed, leases })
    }

    /// Send a page's result and outlinks to the results stream, end its lease and free its
    /// token; true when this call stored it (false: another process had). While the
    /// stream is full (no collector keeps up, or none runs), waits and tries again.
    pub async fn complete(
        &self,
        lease: &Lease,
        page: &PageResult,
        edges: &[StoredEdge],
    ) -> Result<bool, DistError> {
        // The request is over, so the host's slot is free whatever happens to the result:
        // freed alongside storing it, not after, which saves a worker one round trip per
        // page (BENCHMARKS.md, 2026-12-07), and a full stream no longer holds the slot.
        let (stored, freed) = tokio::join!(
            self.store_result(lease, page, edges),
            self.free_token(lease)
        );
        freed?;
        stored
    }

    async fn store_result(
        &self,
        lease: &Lease,
        page: &PageResult,
        edges: &[StoredEdge],
    ) -> Result<bool, DistError> {
        let k = self.keys.part(&lease.host, lease.shard);
        let page = serde_json::to_string(page).expect("serialising a page");
        let edges = encode_edges(edges);
        let cap = RESULTS_IN_TRANSIT.to_string();
        loop {
            let stored: i64 = self
                .redis
                .script(
                    &scripts::COMPLETE,
                    &[&k.seen, &k.out, &k.leases, &k.tries, &k.counts],
                    &[
                        lease.hash.as_bytes(),
                        lease.element.as_bytes(),
                        lease.queued.key.as_bytes(),
                        page.as_bytes(),
                        &edges,
                        cap.as_bytes(),
                    ],
                )
                .await?;
            if stored >= 0 {
                self.wrote(&lease.host, Some(lease.shard));
                return Ok(stored == 1);
            }
            self.warn_full(&lease.host);
            tokio::select! {
                _ = tokio::time::sleep(FULL_RETRY) => {}
                _ = self.redis.cancel().cancelled() => {
                    return Err(DistError::Unreachable("stopped while waiting for the collector".into()))
                }
            }
        }
    }

    fn warn_full(&self, host: &str) {
        let mut last = self.warned_full.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|at| at.elapsed() < FULL_WARN_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        tracing::warn!(
            host,
            "{RESULTS_IN_TRANSIT} results wait in a stream of this host for the collector; \
             waiting (a process of this crawl given --db FILE collects them)"
        );
    }

    async fn free_token(&self, lease: &Lease) -> Result<(), DistError> {
        if lease.token.is_empty() {
            // Not leased (a sitemap document recorded as read).
            return Ok(());
        }
        self.free(&lease.host, std::slice::from_ref(&lease.token))
            .await
    }

    /// Record `lease` as not fetched, for `reason`, end the lease and free its token.
    pub async fn skip(&self, lease: &Lease, reason: &str) -> Result<(), DistError> {
        let k = self.keys.part(&lease.host, lease.shard);
        let _: i64 = self
            .redis
            .script(
                &scripts::SKIP,
                &[&k.seen, &k.out, &k.leases, &k.tries, &k.counts],
                &[&lease.hash, &lease.element, &lease.queued.key, reason],
            )
            .await?;
        self.wrote(&lease.host, Some(lease.shard));
        self.free_token(lease).await
    }

    /// Take a request slot of `host` under the token `slot` (see `scripts::OCCUPY`).
    pub async fn occupy(
        &self,
        host: &str,
        slot: &str,
        per_host: usize,
        lease: Duration,
    ) -> Result<bool, DistError> {
        let k = self.keys.host(host);
        let args = [slot.to_string(), per_host.to_string(), ms(lease)];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let taken: i64 = self
            .redis
            .script(&scripts::OCCUPY, &[&k.tokens], &args)
            .await?;
        Ok(taken == 1)
    }

    /// Book a request to `host` outside the queues, keeping its spacing (`interval`):
    /// how long to wait before it may start.
    pub async fn book(&self, host: &str, interval: Duration) -> Result<Duration, DistError> {
        self.spaced(&scripts::BOOK, host, interval).await
    }

    /// Run a spacing script (`BOOK`, `STARTED`) on `host`'s state: the wait it answers.
    async fn spaced(
        &self,
        script: &redis::Script,
        host: &str,
        interval: Duration,
    ) -> Result<Duration, DistError> {
        let k = self.keys.host(host);
        let wait: i64 = self
            .redis
            .script(script, &[&k.state], &[&ms(interval)])
            .await?;
        Ok(Duration::from_millis(wait.max(0) as u64))
    }

    /// Try `lease` again after `delay`, and free its token meanwhile.
    pub async fn retry(&self, lease: &Lease, delay: Duration) -> Result<(), DistError> {
        let k = self.keys.part(&lease.host, lease.shard);
        let _: i64 = self
            .redis
            .script(
                &scripts::RETRY,
                &[&k.seen, &k.leases, &k.retries, &k.tries],
                &[
                    &lease.hash,
                    &lease.element,
                    &ms(delay),
                    &(lease.tries + 1).to_string(),
                ],
            )
            .await?;
        self.free_token(lease).await
    }

    /// Give leases of `host`'s part in `shard` back unfetched (by their queue elements).
    pub async fn release(
        &self,
        host: &str,
        shard: usize,
        elements: &[String],
    ) -> Result<(), DistError> {
        if elements.is_empty() {
            return Ok(());
        }
        let k = self.keys.part(host, shard);
        let args: Vec<&str> = elements.iter().map(String::as_str).collect();
        let _: i64 = self
            .redis
            .script(&scripts::RELEASE, &[&k.leases, &k.queue, &k.seen], &args)
            .await?;
        Ok(())
    }

    /// Extend what we hold: leases of `host`'s part in `shard`, or with `None` the host's
    /// tokens.
    pub async fn renew(
        &self,
        host: &str,
        shard: Option<usize>,
        members: &[String],
        lease: Duration,
    ) -> Result<(), DistError> {
        let set = match shard {
            Some(i) => self.keys.part(host, i).leases,
            None => self.keys.host(host).tokens,
        };
        let ms = ms(lease);
        let mut args: Vec<&str> = vec![&ms];
        args.extend(members.iter().map(String::as_str));
        let _: i64 = self.redis.script(&scripts::RENEW, &[&set], &args).await?;
        Ok(())
    }

    /// A request to `host` is about to leave: how long it must wait to keep the host's
    /// spacing (`interval`) after the previous one, in any process (see
    /// [`scripts::STARTED`]).
    pub async fn started(&self, host: &str, interval: Duration) -> Result<Duration, DistError> {
        if interval.is_zero() {
            return Ok(Duration::ZERO);
        }
        self.spaced(&scripts::STARTED, host, interval).await
    }

    /// Claim the reading of `host`'s sitemaps for this process: true for exactly one
    /// process of the crawl.
    pub async fn claim_sitemaps(&self, host: &str) -> Result<bool, DistError> {
        let k = self.keys.host(host);
        let won: i64 = self
            .redis
            .cmd(redis::cmd("HSETNX").arg(&k.state).arg("sitemaps").arg(1))
            .await?;
        Ok(won == 1)
    }

    /// `host`'s request slots taken by every process now, and the end of its crawl-wide
    /// pause (Unix ms, Redis's clock), if paused. Read-only: safe to abandon midway.
    pub async fn host_now(&self, host: &str) -> Result<(u64, Option<i64>), DistError> {
        let k = self.keys.host(host);
        let (taken, paused): (u64, i64) = self
            .redis
            .script(&scripts::HOST_NOW, &[&k.state, &k.tokens], &[] as &[&str])
            .await?;
        Ok((taken, (paused > 0).then_some(paused)))
    }

    /// Pause `host` for every process.
    pub async fn pause(&self, host: &str, wait: Duration) -> Result<(), DistError> {
        self.not_before(host, "paused_until", wait).await
    }

    async fn not_before(&self, host: &str, field: &str, wait: Duration) -> Result<(), DistError> {
        let k = self.keys.host(host);
        let _: i64 = self
            .redis
            .script(
                &scripts::NOT_BEFORE,
                &[&k.state, &k.out],
                &[field, &ms(wait)],
            )
            .await?;
        self.wrote(host, None);
        Ok(())
    }

    /// Whether the whole crawl is out of work: no host has anything queued, leased or
    /// waiting to retry in any shard. Hosts and shards live in different slots, so there
    /// is no atomic view of all of them; instead every admission bumps a generation
    /// counter *before* the page that made it is completed. Work moves only by a leased
    /// page admitting URLs then completing, so if the counter did not move while every
    /// part was read empty, none was refilled behind the scan.
    pub async fn is_drained(&self) -> Result<bool, DistError> {
        let before: Option<i64> = self
            .redis
            .cmd(redis::cmd("GET").arg(&self.keys.generation))
            .await?;
        for host in self.active_hosts().await? {
            for shard in self.shards_of(&host).await? {
                let k = self.keys.part(&host, shard);
                let left: i64 = self
                    .redis
                    .script(
                        &scripts::LEFT,
                        &[&k.queue, &k.leases, &k.retries],
                        &[] as &[&str],
                    )
                    .await?;
                if left > 0 {
                    return Ok(false);
                }
            }
        }
        let after: Option<i64> = self
            .redis
            .cmd(redis::cmd("GET").arg(&self.keys.generation))
            .await?;
        Ok(before == after)
    }
}

/// The shards holding URLs of `host` (the host's `shards` set), in order: for the
/// dispatcher, the drain check, the collector and `trawl status` alike.
pub async fn shards_of(
    redis: &Redis,
    keys: &CrawlKeys,
    host: &str,
) -> Result<Vec<usize>, DistError> {
    let mut shards: Vec<usize> = redis
        .cmd(redis::cmd("SMEMBERS").arg(keys.host(host).shards))
        .await?;
    shards.retain(|s| *s < keys.shard_count());
    shards.sort_unstable();
    Ok(shards)
}
