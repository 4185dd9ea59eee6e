//! The Redis store: many trawl processes, on as many machines, share one crawl through
//! Redis (one server or a cluster).
//!
//! What lives in Redis, under keys prefixed by the crawl id (`keys`), is coordination
//! only: the frontier (one queue per host), the visited set (a per-host hash from each
//! URL's key hash to its depth and state, where the first write decides which process owns
//! a URL), per-host politeness (leases count against the per-host limit; the next allowed
//! time and 429/503 pauses are shared), leases with expiry, and counters. Each step on a
//! host is one Lua script (`scripts`) on keys in one cluster slot. A process leases URLs,
//! renews the leases while it fetches (`process`), and completes them with the page's
//! result; when it dies, its leases expire and another process takes them.
//!
//! Results (every URL's row, every page and its outlinks) pass through a bounded stream per
//! host to the crawl's SQLite file, written by the one process that collects (`collect`);
//! `copy` and the readers read that file. Everything above the seam is the local crawl's:
//! the worker, the dispatcher, host preparation, the admission rules.

mod collect;
mod conn;
pub mod copy;
mod entries;
mod error;
mod join;
mod keys;
mod process;
mod queue;
mod records;
mod results;
mod reuse;
mod scripts;
mod sent;
pub mod status;
mod store;
mod take;

use std::time::Duration;

pub(crate) use collect::rest as collect_rest;
pub(crate) use conn::Redis;
pub use conn::StoreUrl;
pub use error::DistError;
pub(crate) use join::{add_seeds, create, read, shards};
pub(crate) use keys::{check_crawl_id, CrawlKeys};
pub(crate) use results::ResultsFile;
pub(crate) use reuse::{earlier, prepare_file, Reuse};
pub(crate) use store::RedisStore;

/// Open the Redis store named by `store` and check `crawl_id`.
pub(crate) fn parse_target(
    store: &str,
    crawl_id: Option<&str>,
) -> Result<(StoreUrl, String), DistError> {
    let url = StoreUrl::parse(store)?;
    let id = crawl_id.ok_or(DistError::NoCrawlId)?;
    check_crawl_id(id).map_err(|why| DistError::BadCrawlId {
        id: id.to_owned(),
        why,
    })?;
    Ok((url, id.to_owned()))
}

pub(crate) use crate::url_norm::ByKeyHash;

/// How often a process writes its heartbeat (for `trawl status`).
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(2);
