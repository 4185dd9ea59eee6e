//! Joining a Redis crawl: the first process creates it from its seeds and configuration;
//! later ones read both (and lay their own options over the configuration, as a resumed
//! local crawl does, in `crawler`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::conn::Redis;
use super::keys::{shard_tag, CrawlKeys};
use super::DistError;
use crate::result::now_ms;
use crate::store::StoredCrawl;

/// The crawl's seeds, configuration and state, if the crawl exists.
pub async fn read(redis: &Redis, keys: &CrawlKeys) -> Result<Option<StoredCrawl>, DistError> {
    let meta: HashMap<String, String> = redis.cmd(redis::cmd("HGETALL").arg(&keys.meta)).await?;
    let Some(config) = meta.get("config") else {
        return Ok(None);
    };
    let seeds = match meta.get("seeds") {
        Some(s) => serde_json::from_str(s).map_err(|e| DistError::Corrupt {
            what: "the seeds".into(),
            detail: e.to_string(),
        })?,
        // Another process is creating the crawl this very moment.
        None => Vec::new(),
    };
    Ok(Some(StoredCrawl {
        config: config.clone(),
        seeds,
        finished: meta.contains_key("finished_at"),
    }))
}

/// Create the crawl with `seeds` and `config` (TOML) unless it exists: true when this call
/// created it, false when another process did first.
pub async fn create(
    redis: &Redis,
    keys: &CrawlKeys,
    seeds: &[String],
    config: &str,
) -> Result<bool, DistError> {
    let created: i64 = redis
        .cmd(
            redis::cmd("HSETNX")
                .arg(&keys.meta)
                .arg("config")
                .arg(config),
        )
        .await?;
    if created == 0 {
        return Ok(false);
    }
    let shards = choose_shards(redis, keys.id()).await?;
    let _: () = redis
        .cmd(
            redis::cmd("HSET")
                .arg(&keys.meta)
                .arg("shards")
                .arg(serde_json::to_string(&shards).expect("shards"))
                .arg("seeds")
                .arg(serde_json::to_string(seeds).expect("seeds"))
                .arg("started_at")
                .arg(now_ms())
                .arg("trawl_version")
                .arg(env!("CARGO_PKG_VERSION")),
        )
        .await?;
    Ok(true)
}

/// Add seeds given by a joining process, so the crawl lists every seed it was given.
pub async fn add_seeds(redis: &Redis, keys: &CrawlKeys, seeds: &[String]) -> Result<(), DistError> {
    let _: () = redis
        .cmd(
            redis::cmd("HSET")
                .arg(&keys.meta)
                .arg("seeds")
                .arg(serde_json::to_string(seeds).expect("seeds")),
        )
        .await?;
    Ok(())
}

/// Shards per cluster master. The spread over the masters is by construction (each serves
/// as many shards), and the hash of a site's many paths splits it evenly over the shards,
/// so one per master would do; two leave a shard to move to a master added later. More
/// would only multiply the admission scripts a page's links cost (measured: 8 per master
/// on 3 masters, about 20 per page of 50 links).
const SHARDS_PER_MASTER: usize = 2;

/// The shards of a new crawl: one on a single server (one slot is all there is); on a
/// cluster, `SHARDS_PER_MASTER` per master, each tag searched for until its slot is one
/// that master serves, so a single-site crawl spreads evenly over the masters as the
/// cluster stands when the crawl starts.
async fn choose_shards(redis: &Redis, id: &str) -> Result<Vec<String>, DistError> {
    if !redis.is_cluster() {
        return Ok(vec![shard_tag(id, 0)]);
    }
    let ranges = slot_owners(redis).await?;
    let mut masters: Vec<&str> = ranges.iter().map(|(_, _, m)| m.as_str()).collect();
    masters.sort_unstable();
    masters.dedup();
    let mut per: HashMap<&str, usize> = HashMap::new();
    let mut tags = Vec::new();
    let want = SHARDS_PER_MASTER * masters.len();
    for i in 0..want * 64 {
        if tags.len() == want {
            break;
        }
        let tag = shard_tag(id, i);
        let slot: i64 = redis
            .cmd(
                redis::cmd("CLUSTER")
                    .arg("KEYSLOT")
                    .arg(format!("{{{tag}}}")),
            )
            .await?;
        let Some((_, _, master)) = ranges.iter().find(|(a, b, _)| (*a..=*b).contains(&slot)) else {
            continue;
        };
        let n = per.entry(master.as_str()).or_default();
        if *n < SHARDS_PER_MASTER {
            *n += 1;
            tags.push(tag);
        }
    }
    if tags.is_empty() {
        tags.push(shard_tag(id, 0));
    }
    Ok(tags)
}

/// The cluster's slot ranges and the master serving each (`CLUSTER SLOTS`).
async fn slot_owners(redis: &Redis) -> Result<Vec<(i64, i64, String)>, DistError> {
    let reply: Vec<redis::Value> = redis.cmd(redis::cmd("CLUSTER").arg("SLOTS")).await?;
    let corrupt = |detail: &str| DistError::Corrupt {
        what: "the reply to CLUSTER SLOTS".into(),
        detail: detail.to_owned(),
    };
    let mut out = Vec::new();
    for range in reply {
        let redis::Value::Array(f) = range else {
            return Err(corrupt("a range is not an array"));
        };
        let (Some(a), Some(b), Some(node)) = (f.first(), f.get(1), f.get(2)) else {
            return Err(corrupt("a range has fewer than three fields"));
        };
        let int = |v: &redis::Value| match v {
            redis::Value::Int(n) => Ok(*n),
            _ => Err(corrupt("a slot is not a number")),
        };
        let master = match node {
            redis::Value::Array(n) => format!("{:?}:{:?}", n.first(), n.get(1)),
            _ => return Err(corrupt("a node is not an array")),
        };
        out.push((int(a)?, int(b)?, master));
    }
    Ok(out)
}

/// The crawl's shard tags, from its record (waiting a moment while the process creating
/// the crawl writes them).
pub async fn shards(redis: &Redis, keys: &CrawlKeys) -> Result<Vec<String>, DistError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text: Option<String> = redis
            .cmd(redis::cmd("HGET").arg(&keys.meta).arg("shards"))
            .await?;
        if let Some(t) = text {
            return serde_json::from_str(&t).map_err(|e| DistError::Corrupt {
                what: "the shards".into(),
                detail: e.to_string(),
            });
        }
        let exists: i64 = redis.cmd(redis::cmd("EXISTS").arg(&keys.meta)).await?;
        if exists == 0 || Instant::now() > deadline {
            // No crawl (a reader asking), or one made before shards: one shard.
            return Ok(vec![shard_tag(keys.id(), 0)]);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
