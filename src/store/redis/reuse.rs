//! A results file that already holds a crawl. A Redis crawl collects into a file that is
//! new, empty or its own; a file holding a finished earlier crawl is taken only when asked,
//! as a local crawl's file is:
//!
//! - `--recrawl` starts it again, keeping its link checks younger than `check-cache-age`
//!   (the check cache);
//! - `--recheck failed` asks again what failed or answered 4xx/5xx, and what those link to
//!   now;
//! - `--refresh` keeps it as the previous generation and asks every page again with its
//!   validators (which travel in the queue elements).
//!
//! The new Redis crawl takes the file's seeds and configuration under the options given,
//! and is told every URL the file keeps, as the visited set of a resumed local crawl is
//! rebuilt from its file: those URLs are known (so no process asks an external host again
//! what the file already answers), the ones to ask again are queued, and the file keeps
//! their rows, so the new pages' edges to them resolve. When the crawl finishes, the
//! collector drops the kept checks nobody links to any more, as a local crawl does.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use url::Url;

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::records::Queued;
use super::results::{begun, claim, ResultsFile};
use super::scripts::{self, seen_letter};
use super::DistError;
use crate::store::local::sqlite::check_folder;
use crate::store::{FileUrl, OpenMode, SqliteStore, StoredCrawl, UrlState};
use crate::traps::query_group;
use crate::url_norm::{host_key, key_hash};

/// URLs read from the file, and made known to Redis, per round.
const BATCH: usize = 5000;

/// What is asked of a file holding a finished earlier crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reuse {
    /// Nothing: such a file is refused.
    No,
    /// `--recrawl`.
    Recrawl,
    /// `--recheck failed`.
    RecheckFailed,
    /// `--refresh`.
    Refresh,
}

/// The earlier crawl `path` holds, to be taken as `reuse` says: read before the Redis crawl
/// is created, which takes its seeds and configuration. `None` when the file is new,
/// empty, or already the crawl's (or another's: [`claim`] refuses it); an error when it
/// holds a crawl that is not to be taken.
pub(crate) async fn earlier(
    redis: &Redis,
    keys: &CrawlKeys,
    path: &Path,
    reuse: Reuse,
) -> Result<Option<StoredCrawl>, DistError> {
    if ResultsFile::of(redis, keys).await?.is_some() || !begun(path) {
        return Ok(None);
    }
    let Some(row) = SqliteStore::open(path, OpenMode::Read)?.crawl()? else {
        return Ok(None);
    };
    let finished = row.finished_at.is_some();
    if !finished || reuse == Reuse::No {
        return Err(DistError::FileHoldsCrawl {
            path: path.display().to_string(),
            finished,
        });
    }
    if super::read(redis, keys).await?.is_some() {
        // Its processes may have admitted what the file knows: it cannot be told now.
        return Err(DistError::ReuseStarted {
            id: keys.id().to_owned(),
            path: path.display().to_string(),
        });
    }
    Ok(Some(StoredCrawl {
        config: row.config,
        seeds: row.seeds,
        finished,
    }))
}

/// Make `path` the crawl's results file (see [`claim`]); when it holds an `earlier` crawl
/// (from [`earlier`]), start it again as `reuse` says and tell Redis what it keeps.
pub(crate) async fn prepare_file(
    redis: &Redis,
    keys: &CrawlKeys,
    path: &Path,
    earlier: bool,
    reuse: Reuse,
    keep: Duration,
) -> Result<(), DistError> {
    if !earlier || reuse == Reuse::No {
        // A crawl's results file is recorded once for good: refuse a path no collector
        // could make before it is recorded.
        check_folder(path)?;
        return claim(redis, keys, path).await.map(drop);
    }
    // Locked before the claim, so no collector of the crawl writes the file before it is
    // cleared.
    let mut store = SqliteStore::open(path, OpenMode::Crawl)?;
    claim(redis, keys, path).await?;
    match reuse {
        Reuse::No => unreachable!("returned above"),
        Reuse::Recrawl => {
            store.clear_for_recrawl(u64::try_from(keep.as_millis()).unwrap_or(u64::MAX))?
        }
        Reuse::RecheckFailed => {
            let n = store.requeue_failed()?;
            tracing::info!(urls = n, "--recheck failed: fetching again what failed");
        }
        Reuse::Refresh => {
            let begun = store.start_generation()?;
            tracing::info!(
                generation = begun.generation,
                pages = begun.queued,
                "--refresh: asking every page again, conditionally"
            );
        }
    }
    let mut after = 0;
    loop {
        let urls = store.urls_after(after, BATCH)?;
        let Some(last) = urls.last() else { break };
        after = last.id;
        know(redis, keys, &urls).await?;
    }
    Ok(())
}

/// Mark `urls` known to the crawl, as admission and completion write them (one script
/// per host and shard, see [`scripts::KNOW`]): the visited set, the queue for those to
/// fetch, the counts `trawl status` reads, and the host and shard lists that lead to them.
async fn know(redis: &Redis, keys: &CrawlKeys, urls: &[FileUrl]) -> Result<(), DistError> {
    let mut parts: BTreeMap<(String, usize), Vec<String>> = BTreeMap::new();
    for u in urls {
        let Ok(url) = Url::parse(u.url.as_deref().unwrap_or(&u.key)) else {
            continue;
        };
        let own = key_hash(&u.key);
        let shard = keys.shard_of(query_group(&u.key).map(key_hash).unwrap_or(own));
        let hash = format!("{own:032x}");
        let (letter, what) = match u.state {
            UrlState::Queued => {
                let queued = Queued {
                    key: u.key.clone(),
                    url: u.url.clone(),
                    chain: Vec::new(),
                    validators: u.validators.clone(),
                };
                ('q', format!("q{}", queued.element(&hash)))
            }
            UrlState::Skipped => (
                seen_letter(u.skip_reason.as_deref().unwrap_or("-")),
                "k".to_owned(),
            ),
            UrlState::Done | UrlState::Failed => ('x', "s".to_owned()),
        };
        let args = parts.entry((host_key(&url), shard)).or_default();
        args.extend([hash, format!("{}{letter}", u.depth), what]);
    }
    for ((host, shard), args) in &parts {
        let _: i64 = redis
            .cmd(redis::cmd("SADD").arg(&keys.hosts).arg(host))
            .await?;
        let _: i64 = redis
            .cmd(redis::cmd("SADD").arg(keys.host(host).shards).arg(shard))
            .await?;
        if args.iter().skip(2).step_by(3).any(|w| w.starts_with('q')) {
            let _: i64 = redis
                .cmd(redis::cmd("SADD").arg(&keys.active).arg(host))
                .await?;
        }
        let k = keys.part(host, *shard);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _: i64 = redis
            .script(&scripts::KNOW, &[&k.seen, &k.queue, &k.counts], &args)
            .await?;
    }
    Ok(())
}
