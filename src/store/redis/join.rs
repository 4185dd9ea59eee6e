//! Joining a Redis crawl: the first process creates it from its seeds and configuration;
//! later ones read both (and lay their own options over the configuration, as a resumed
//! local crawl does, in `crawler`).

use std::collections::HashMap;

use super::conn::Redis;
use super::keys::CrawlKeys;
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
    let _: () = redis
        .cmd(
            redis::cmd("HSET")
                .arg(&keys.meta)
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
