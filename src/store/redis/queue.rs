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
use crate::traps::query_group;

/// What is recorded when a URL is admitted (the `seen` hash's value).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Admission {
    /// The URL to fetch, when it differs from the canonical key.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Click depth.
    #[serde(rename = "d")]
    pub depth: u32,
    /// Canonical key of the first page linking here.
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
    /// For a redirect target: the key hashes of the chain that led here, for loop
    /// detection (hexadecimal: the scripts decode this JSON, and Lua numbers are doubles).
    #[serde(
        rename = "c",
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "hex_hashes"
    )]
    pub chain: Vec<u128>,
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
    /// Canonical key.
    pub key: String,
    /// What to record.
    pub admission: Admission,
    /// Why it will not be fetched, if so (as judged where it was found now).
    pub skip: Option<&'static str>,
    /// Found by a link that is followed (not on a `nofollow` page).
    pub follow: bool,
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
    /// Canonical key.
    pub key: String,
    /// Its admission record.
    pub admission: Admission,
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

/// One outlink as stored: target key, kind code, nofollow, anchor text.
pub type StoredEdge = (String, i64, bool, Option<String>);

/// A stored page's outlinks (one element of the `edges` list).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StoredEdges {
    /// The page's canonical key.
    #[serde(rename = "s")]
    pub src: String,
    /// (target key, kind code, nofollow, anchor text) in document order.
    #[serde(rename = "e")]
    pub edges: Vec<StoredEdge>,
}

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
        }
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
        let records: Vec<String> = urls
            .iter()
            .map(|u| serde_json::to_string(&u.admission).expect("serialising an admission"))
            .collect();
        let depths: Vec<String> = urls.iter().map(|u| u.admission.depth.to_string()).collect();
        let head = [
            self.budget.max_pages_per_host.to_string(),
            allow.to_string(),
            (if front { "front" } else { "back" }).to_string(),
            self.budget.max_depth.to_string(),
            self.budget.max_query_variants.to_string(),
        ];
        let mut args: Vec<&str> = head.iter().map(String::as_str).collect();
        for ((u, rec), depth) in urls.iter().zip(&records).zip(&depths) {
            args.extend([
                u.key.as_str(),
                rec,
                u.skip.unwrap_or(""),
                depth,
                if u.follow { "1" } else { "0" },
                query_group(&u.key).unwrap_or(""),
            ]);
        }
        let (queued, flags): (i64, Vec<i64>) = self
            .redis
            .script(
                &scripts::ADMIT,
                &[&k.seen, &k.skip, &k.queue, &k.state, &k.variants],
                &args,
            )
            .await?;
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
        while let (Some(key), Some(rec), Some(tries)) = (it.next(), it.next(), it.next()) {
            let admission = serde_json::from_str(&rec).map_err(|e| DistError::Corrupt {
                what: format!("the admission record of {key}"),
                detail: e.to_string(),
            })?;
            leases.push(Lease {
                host: host.to_owned(),
                key,
                admission,
                tries: tries.parse().unwrap_or(0),
            });
        }
        Ok(Taken {
            wait: Duration::from_millis(wait),
            reclaimed,
            leases,
        })
    }

    /// Store a page's result and outlinks and end its lease; true when this call stored
    /// it (false: another process had).
    pub async fn complete(
        &self,
        lease: &Lease,
        page: &PageResult,
        edges: Option<&StoredEdges>,
    ) -> Result<bool, DistError> {
        let k = self.keys.host(&lease.host);
        let page = serde_json::to_string(page).expect("serialising a page");
        let edges = edges
            .map(|e| serde_json::to_string(e).expect("serialising edges"))
            .unwrap_or_default();
        let stored: i64 = self
            .redis
            .script(
                &scripts::COMPLETE,
                &[&k.pages, &k.edges, &k.leases, &k.tries],
                &[&lease.key, &page, &edges],
            )
            .await?;
        Ok(stored == 1)
    }

    /// Record `lease` as not fetched, for `reason`, and end the lease.
    pub async fn skip(&self, lease: &Lease, reason: &str) -> Result<(), DistError> {
        let k = self.keys.host(&lease.host);
        let _: i64 = self
            .redis
            .script(
                &scripts::SKIP,
                &[&k.leases, &k.skip, &k.tries, &k.pages],
                &[&lease.key, reason],
            )
            .await?;
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
                &[&k.leases, &k.retries, &k.tries, &k.pages],
                &[
                    &lease.key,
                    &(delay.as_millis() as u64).to_string(),
                    &(lease.tries + 1).to_string(),
                ],
            )
            .await?;
        Ok(())
    }

    /// Give leases back unfetched.
    pub async fn release(&self, host: &str, keys: &[String]) -> Result<(), DistError> {
        if keys.is_empty() {
            return Ok(());
        }
        let k = self.keys.host(host);
        let args: Vec<&str> = keys.iter().map(String::as_str).collect();
        let _: i64 = self
            .redis
            .script(&scripts::RELEASE, &[&k.leases, &k.queue, &k.pages], &args)
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
                &[&k.state],
                &[field, &(wait.as_millis() as u64).to_string()],
            )
            .await?;
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
