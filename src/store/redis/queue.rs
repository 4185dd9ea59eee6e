//! The shared frontier, visited set and page store: typed calls over the scripts in
//! `scripts`, one host's keys at a time.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::scripts;
use super::DistError;
use crate::result::PageResult;
use crate::url_norm::key_hash;

/// A URL in a host's queue: what a process needs to fetch it. The queue element is its key
/// hash (32 hex digits, so the scripts find its `seen` entry without parsing JSON) followed
/// by this as JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Queued {
    /// Canonical key.
    #[serde(rename = "k")]
    pub key: String,
    /// The URL to fetch, when it differs from the canonical key.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// For a redirect target: the key hashes of the chain that led here, for loop
    /// detection (hexadecimal: Lua numbers are doubles).
    #[serde(
        rename = "c",
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "hex_hashes"
    )]
    pub chain: Vec<u128>,
}

impl Queued {
    /// The queue element: `hash` then the JSON.
    pub fn element(&self, hash: &str) -> String {
        let json = serde_json::to_string(self).expect("serialising a queued URL");
        format!("{hash}{json}")
    }

    /// Read a queue element back.
    pub fn parse(element: &str) -> Result<Queued, DistError> {
        let json = element.get(HASH_LEN..).unwrap_or_default();
        serde_json::from_str(json).map_err(|e| DistError::Corrupt {
            what: format!("the queue element {element:?}"),
            detail: e.to_string(),
        })
    }
}

/// Hex digits of a key hash.
const HASH_LEN: usize = 32;

/// A key's hash as the Redis keys name it.
pub fn hash_hex(key: &str) -> String {
    format!("{:032x}", key_hash(key))
}

/// A newly known URL's row as the results stream carries it (depth and skip reason travel
/// beside it, decided by the admission script).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Row {
    /// Canonical key.
    #[serde(rename = "k")]
    pub key: String,
    /// The URL, when it differs from the key.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Canonical key of the first page linking here.
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
}

/// `Vec<u128>` as hexadecimal strings.
mod hex_hashes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u128], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|h| format!("{h:032x}")))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u128>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|h| u128::from_str_radix(h, 16).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// A URL to admit, as the admission script takes it.
#[derive(Debug, Clone)]
pub struct Admit {
    /// Its key hash (hex).
    pub hash: String,
    /// Its queue element.
    pub element: String,
    /// Its row JSON for the results stream.
    pub row: String,
    /// Click depth where it was found.
    pub depth: u32,
    /// Why it will not be fetched, if so (as judged where it was found now).
    pub skip: Option<&'static str>,
    /// Found by a link that is followed (not on a `nofollow` page).
    pub follow: bool,
    /// The hash of its query group (`traps::query_group`), if it has a query.
    pub group: Option<String>,
}

/// What admitting a batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Admitted {
    /// URLs known to nobody before.
    pub new: usize,
    /// Known URLs held back (too deep, nofollow) and now queued, found along a shorter
    /// path or by a followed link.
    pub requeued: usize,
}

impl Admitted {
    /// Whether work changed hands (see [`Queue::is_drained`]).
    pub fn moved(&self) -> bool {
        self.new + self.requeued > 0
    }
}

/// A leased URL.
#[derive(Debug, Clone)]
pub struct Lease {
    /// `host[:port]`.
    pub host: String,
    /// Its queue element, as leased (the member of the leases set).
    pub element: String,
    /// Its key hash (hex).
    pub hash: String,
    /// What to fetch.
    pub queued: Queued,
    /// Click depth now.
    pub depth: u32,
    /// Attempts made before this one.
    pub tries: u32,
}

/// What a take on one host gave.
#[derive(Debug, Default)]
pub struct Taken {
    /// Wait this long before asking the host again (paused, or inside its interval).
    pub wait: Duration,
    /// Expired leases put back in the queue.
    pub reclaimed: u64,
    /// URLs now leased to us.
    pub leases: Vec<Lease>,
}

/// One outlink as the results stream carries it: target key, kind code, nofollow, anchor
/// text.
pub type StoredEdge = (String, i64, bool, Option<String>);

/// Entries a host's results stream may hold before a completing process waits for the
/// collector: the fixed buffer of results in transit.
pub const RESULTS_IN_TRANSIT: usize = 1000;

/// Limits the admission scripts enforce.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// `max-pages`, 0 for none.
    pub max_pages: u64,
    /// `max-pages-per-host`, 0 for none.
    pub max_pages_per_host: u64,
    /// `max-depth`, 0 for none: a URL held back as too deep is queued when a shorter path
    /// brings it within.
    pub max_depth: u32,
    /// `max-query-variants`, 0 for none.
    pub max_query_variants: u64,
}

/// See the module doc.
pub struct Queue {
    redis: Redis,
    keys: CrawlKeys,
    budget: Budget,
    /// Hosts this process has already added to the `hosts` set.
    registered: Mutex<HashSet<String>>,
    /// Hosts this process has already added to the `active` set.
    activated: Mutex<HashSet<String>>,
    /// Hosts whose results stream this process wrote to, for the `unread` set.
    unread: Mutex<HashSet<String>>,
}

impl Queue {
    /// The queue of the crawl `keys`.
    pub fn new(redis: Redis, keys: CrawlKeys, budget: Budget) -> Queue {
        Queue {
            redis,
            keys,
            budget,
            registered: Mutex::new(HashSet::new()),
            activated: Mutex::new(HashSet::new()),
            unread: Mutex::new(HashSet::new()),
        }
    }

    /// Note that `host`'s results stream was written to.
    fn wrote(&self, host: &str) {
        let mut u = self.unread.lock().unwrap_or_else(|p| p.into_inner());
        if !u.contains(host) {
            u.insert(host.to_owned());
        }
    }

    /// Tell the collector which streams this process wrote to since the last call.
    pub async fn flush_unread(&self) -> Result<(), DistError> {
        let hosts: Vec<String> = {
            let mut u = self.unread.lock().unwrap_or_else(|p| p.into_inner());
            u.drain().collect()
        };
        if hosts.is_empty() {
            return Ok(());
        }
        let _: i64 = self
            .redis
            .cmd(redis::cmd("SADD").arg(&self.keys.unread).arg(&hosts))
            .await?;
        Ok(())
    }

    /// Admit URLs of one host (`front`: ahead of its queue, for redirect targets). A URL
    /// known already gets the shorter depth, and is queued after all when it was held
    /// back and no longer is, as in a local crawl.
    pub async fn admit(
        &self,
        host: &str,
        urls: &[Admit],
        front: bool,
    ) -> Result<Admitted, DistError> {
        if urls.is_empty() {
            return Ok(Admitted::default());
        }
        let fetchable = urls.iter().filter(|u| u.skip.is_none()).count() as i64;
        self.add_once(&self.registered, &self.keys.hosts, host)
            .await?;
        // Before the script: a host must never hold queued URLs without being in the set
        // the dispatchers and the drain check walk, even if this process dies between.
        if fetchable > 0 {
            self.add_once(&self.activated, &self.keys.active, host)
                .await?;
        }
        let k = self.keys.host(host);
        let allow = self.reserve(fetchable).await?;
        let depths: Vec<String> = urls.iter().map(|u| u.depth.to_string()).collect();
        let head = [
            self.budget.max_pages_per_host.to_string(),
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
        let (queued, flags): (i64, Vec<i64>) = self
            .redis
            .script(
                &scripts::ADMIT,
                &[&k.seen, &k.queue, &k.state, &k.variants, &k.out],
                &args,
            )
            .await?;
        self.wrote(host);
        if allow >= 0 && queued < fetchable {
            let unused = fetchable - queued;
            let _: i64 = self
                .redis
                .cmd(redis::cmd("DECRBY").arg(&self.keys.admitted).arg(unused))
                .await?;
        }
        Ok(Admitted {
            new: flags.iter().filter(|&&f| f == 1).count(),
            requeued: flags.iter().filter(|&&f| f == 2).count(),
        })
    }

    /// Reserve `max-pages` budget for `fetchable` URLs before the script, which gives back
    /// what it did not use: the counter lives in another slot, so it cannot be read inside
    /// the script. Concurrent reservations can make a URL near the limit skipped while
    /// budget remains; the limit itself is never passed. -1: no limit.
    async fn reserve(&self, fetchable: i64) -> Result<i64, DistError> {
        if self.budget.max_pages == 0 || fetchable == 0 {
            return Ok(-1);
        }
        let total: i64 = self
            .redis
            .cmd(redis::cmd("INCRBY").arg(&self.keys.admitted).arg(fetchable))
            .await?;
        let before = total - fetchable;
        Ok((self.budget.max_pages as i64 - before).clamp(0, fetchable))
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

    /// `SADD set host`, once per process.
    async fn add_once(
        &self,
        done: &Mutex<HashSet<String>>,
        set: &str,
        host: &str,
    ) -> Result<(), DistError> {
        if done.lock().expect("lock").contains(host) {
            return Ok(());
        }
        let _: i64 = self
            .redis
            .cmd(redis::cmd("SADD").arg(set).arg(host))
            .await?;
        done.lock().expect("lock").insert(host.to_owned());
        Ok(())
    }

    /// The hosts that ever had a URL to fetch: the ones to lease from.
    pub async fn active_hosts(&self) -> Result<Vec<String>, DistError> {
        self.redis
            .cmd(redis::cmd("SMEMBERS").arg(&self.keys.active))
            .await
    }

    /// Lease up to `n` URLs of `host`.
    pub async fn take(
        &self,
        host: &str,
        per_host: usize,
        interval: Duration,
        lease: Duration,
        n: usize,
    ) -> Result<Taken, DistError> {
        let k = self.keys.host(host);
        let args = [
            per_host.to_string(),
            (interval.as_millis() as u64).to_string(),
            (lease.as_millis() as u64).to_string(),
            n.to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply: Vec<String> = self
            .redis
            .script(
                &scripts::TAKE,
                &[&k.queue, &k.leases, &k.retries, &k.state, &k.seen, &k.tries],
                &args,
            )
            .await?;
        let mut it = reply.into_iter();
        let wait = it.next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let reclaimed = it.next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let mut leases = Vec::new();
        while let (Some(element), Some(depth), Some(tries)) = (it.next(), it.next(), it.next()) {
            let queued = Queued::parse(&element)?;
            leases.push(Lease {
                host: host.to_owned(),
                hash: element.get(..HASH_LEN).unwrap_or_default().to_owned(),
                element,
                queued,
                depth: depth.parse().unwrap_or(0),
                tries: tries.parse().unwrap_or(0),
            });
        }
        Ok(Taken {
            wait: Duration::from_millis(wait),
            reclaimed,
            leases,
        })
    }

    /// Send a page's result and outlinks to the results stream and end its lease; true
    /// when this call stored it (false: another process had). While the stream is full
    /// (no collector keeps up, or none runs), waits and tries again.
    pub async fn complete(
        &self,
        lease: &Lease,
        page: &PageResult,
        edges: &[StoredEdge],
    ) -> Result<bool, DistError> {
        let k = self.keys.host(&lease.host);
        let page = serde_json::to_string(page).expect("serialising a page");
        let edges = if edges.is_empty() {
            String::new()
        } else {
            serde_json::to_string(edges).expect("serialising edges")
        };
        let cap = RESULTS_IN_TRANSIT.to_string();
        let mut waited = false;
        loop {
            let stored: i64 = self
                .redis
                .script(
                    &scripts::COMPLETE,
                    &[&k.seen, &k.out, &k.leases, &k.tries, &k.state],
                    &[
                        &lease.hash,
                        &lease.element,
                        &lease.queued.key,
                        &page,
                        &edges,
                        &cap,
                    ],
                )
                .await?;
            if stored >= 0 {
                self.wrote(&lease.host);
                return Ok(stored == 1);
            }
            if !waited {
                tracing::warn!(
                    host = lease.host,
                    "{RESULTS_IN_TRANSIT} results of this host wait in Redis for the collector; \
                     waiting (a process of this crawl given --db FILE collects them)"
                );
                waited = true;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = self.redis.cancel().cancelled() => {
                    return Err(DistError::Unreachable("stopped while waiting for the collector".into()))
                }
            }
        }
    }

    /// Record `lease` as not fetched, for `reason`, and end the lease.
    pub async fn skip(&self, lease: &Lease, reason: &str) -> Result<(), DistError> {
        let k = self.keys.host(&lease.host);
        let _: i64 = self
            .redis
            .script(
                &scripts::SKIP,
                &[&k.seen, &k.out, &k.leases, &k.tries, &k.state],
                &[&lease.hash, &lease.element, &lease.queued.key, reason],
            )
            .await?;
        self.wrote(&lease.host);
        Ok(())
    }

    /// Take a request slot of `host` under the key `slot` (see `scripts::OCCUPY`).
    pub async fn occupy(
        &self,
        host: &str,
        slot: &str,
        per_host: usize,
        lease: Duration,
    ) -> Result<bool, DistError> {
        let k = self.keys.host(host);
        let args = [
            slot.to_string(),
            per_host.to_string(),
            (lease.as_millis() as u64).to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let taken: i64 = self
            .redis
            .script(&scripts::OCCUPY, &[&k.leases], &args)
            .await?;
        Ok(taken == 1)
    }

    /// Give back the slot `slot` of `host`.
    pub async fn vacate(&self, host: &str, slot: &str) -> Result<(), DistError> {
        let k = self.keys.host(host);
        let _: i64 = self
            .redis
            .cmd(redis::cmd("ZREM").arg(&k.leases).arg(slot))
            .await?;
        Ok(())
    }

    /// Book a request to `host` outside the queues, keeping its spacing (`interval`):
    /// how long to wait before it may start.
    pub async fn book(&self, host: &str, interval: Duration) -> Result<Duration, DistError> {
        let k = self.keys.host(host);
        let wait: i64 = self
            .redis
            .script(
                &scripts::BOOK,
                &[&k.state],
                &[&(interval.as_millis() as u64).to_string()],
            )
            .await?;
        Ok(Duration::from_millis(wait.max(0) as u64))
    }

    /// Try `lease` again after `delay`.
    pub async fn retry(&self, lease: &Lease, delay: Duration) -> Result<(), DistError> {
        let k = self.keys.host(&lease.host);
        let _: i64 = self
            .redis
            .script(
                &scripts::RETRY,
                &[&k.seen, &k.leases, &k.retries, &k.tries],
                &[
                    &lease.hash,
                    &lease.element,
                    &(delay.as_millis() as u64).to_string(),
                    &(lease.tries + 1).to_string(),
                ],
            )
            .await?;
        Ok(())
    }

    /// Give leases back unfetched (by their queue elements).
    pub async fn release(&self, host: &str, elements: &[String]) -> Result<(), DistError> {
        if elements.is_empty() {
            return Ok(());
        }
        let k = self.keys.host(host);
        let args: Vec<&str> = elements.iter().map(String::as_str).collect();
        let _: i64 = self
            .redis
            .script(&scripts::RELEASE, &[&k.leases, &k.queue, &k.seen], &args)
            .await?;
        Ok(())
    }

    /// Extend the leases we hold on `host`.
    pub async fn renew(
        &self,
        host: &str,
        keys: &[String],
        lease: Duration,
    ) -> Result<(), DistError> {
        let k = self.keys.host(host);
        let ms = (lease.as_millis() as u64).to_string();
        let mut args: Vec<&str> = vec![&ms];
        args.extend(keys.iter().map(String::as_str));
        let _: i64 = self
            .redis
            .script(&scripts::RENEW, &[&k.leases], &args)
            .await?;
        Ok(())
    }

    /// A request to `host` starts now: keep its spacing (`interval`) from this moment.
    pub async fn started(&self, host: &str, interval: Duration) -> Result<(), DistError> {
        if interval.is_zero() {
            return Ok(());
        }
        self.not_before(host, "next_at", interval).await
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
                &[field, &(wait.as_millis() as u64).to_string()],
            )
            .await?;
        self.wrote(host);
        Ok(())
    }

    /// Whether the whole crawl is out of work: no host has anything queued, leased or
    /// waiting to retry. Hosts live in different slots, so there is no atomic view of all
    /// of them; instead every admission bumps a generation counter *before* the page that
    /// made it is completed. Work moves only by a leased page admitting URLs then
    /// completing, so if the counter did not move while every host was read empty, no
    /// host was refilled behind the scan.
    pub async fn is_drained(&self) -> Result<bool, DistError> {
        let before: Option<i64> = self
            .redis
            .cmd(redis::cmd("GET").arg(&self.keys.generation))
            .await?;
        for host in self.active_hosts().await? {
            let k = self.keys.host(&host);
            let left: i64 = self
                .redis
                .script(&scripts::LEFT, &[&k.queue, &k.leases, &k.retries], &[])
                .await?;
            if left > 0 {
                return Ok(false);
            }
        }
        let after: Option<i64> = self
            .redis
            .cmd(redis::cmd("GET").arg(&self.keys.generation))
            .await?;
        Ok(before == after)
    }
}
