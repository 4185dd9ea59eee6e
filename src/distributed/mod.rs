//! Distributed crawling: many trawl processes, on as many machines, share one crawl
//! through Redis (one server or a cluster).
//!
//! What lives in Redis, under keys prefixed by the crawl id (`keys`): the frontier (one
//! queue per host), the visited set (a per-host hash where `HSETNX` decides which process
//! owns a URL), per-host politeness (leases count against the per-host limit; the next
//! allowed time and 429/503 pauses are shared), leases with expiry, and the pages and
//! their outlinks. Each step on a host is one Lua script (`scripts`) on keys in one
//! cluster slot. A process leases URLs, renews the leases while it fetches, and completes
//! them with the page's result; when it dies, its leases expire and another process
//! takes them. Pages are stored with `HSETNX`: a page is stored once however many
//! processes fetched it.
//!
//! The page reading (fetch, charset, streaming extraction, robots meta) is the local
//! crawl's (`page`), and so are the admission rules (`admit::Rules`); what differs is
//! where URLs are queued and results go. `copy` turns a Redis crawl into a SQLite file,
//! which is how `trawl export` and `trawl report` read one.

mod conn;
pub mod copy;
mod keys;
mod queue;
mod run;
mod scripts;
mod sitemaps;
pub mod status;
mod worker;

use std::time::Duration;

use url::Url;

pub use conn::StoreUrl;
pub use keys::check_crawl_id;
pub use run::RedisCrawl;

use crate::config::{ConfigPatch, CrawlConfig};
use crate::crawler::CrawlerBuilder;
use crate::url_norm::{parse_seed, Scope};
use crate::Error;

/// What can go wrong with a Redis crawl. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The `--store` value is not a Redis URL.
    #[error("--store {store:?} is not usable: {why}")]
    BadStore {
        /// As given.
        store: String,
        /// What is wrong.
        why: String,
    },
    /// The crawl id is unusable.
    #[error("--crawl-id {id:?}: {why}")]
    BadCrawlId {
        /// As given.
        id: String,
        /// What is wrong.
        why: String,
    },
    /// A crawl id is needed with --store.
    #[error("a Redis crawl needs a name: add --crawl-id NAME (every process of the crawl uses the same)")]
    NoCrawlId,
    /// No seeds and no crawl of that id yet.
    #[error("Redis holds no crawl {id:?} yet; give at least one seed URL to start it")]
    NoSeeds {
        /// The crawl id.
        id: String,
    },
    /// Redis refused a call for a reason waiting will not fix.
    #[error("Redis error: {0}")]
    Redis(#[source] redis::RedisError),
    /// Redis stayed unreachable until the crawl was stopped.
    #[error("Redis was unreachable ({0}); the crawl stopped with nothing lost: run the same command when Redis is back")]
    Unreachable(String),
    /// Data under the crawl's keys is not what trawl wrote.
    #[error("Redis holds unreadable data for crawl ({what}: {detail}); was the key space written by another program? Use another --crawl-id")]
    Corrupt {
        /// Which value.
        what: String,
        /// The parse error.
        detail: String,
    },
    /// Writing the SQLite copy failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The copy's target exists.
    #[error("{0} already exists; give a new file to copy the crawl into (or remove it)")]
    TargetExists(String),
}

impl DistError {
    /// Whether the user's input is at fault (the CLI exits 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            DistError::BadStore { .. }
                | DistError::BadCrawlId { .. }
                | DistError::NoCrawlId
                | DistError::NoSeeds { .. }
                | DistError::TargetExists(_)
        )
    }
}

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

impl CrawlerBuilder {
    /// Build a crawl that lives in Redis (`store` and `crawl_id` must be set): the first
    /// process creates it from its seeds and options; later ones join it, taking the
    /// stored configuration with their own options over it, as a resumed crawl does.
    /// Waits while Redis is unreachable, until `shutdown`-less callers give up by
    /// dropping the future.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), trawl::Error> {
    /// let crawl = trawl::Crawler::builder()
    ///     .store("redis://127.0.0.1:6379/0")
    ///     .crawl_id("example")
    ///     .seed("https://example.org/")
    ///     .build_distributed()
    ///     .await?;
    /// let summary = crawl.run(async { tokio::signal::ctrl_c().await.ok(); }).await?;
    /// println!("{} pages by this process", summary.run.pages);
    /// # Ok(()) }
    /// ```
    pub async fn build_distributed(self) -> Result<RedisCrawl, Error> {
        let parts = self.into_parts();
        let store = parts.store.clone().ok_or(DistError::BadStore {
            store: String::new(),
            why: "no --store given".into(),
        })?;
        let (url, id) = parse_target(&store, parts.crawl_id.as_deref())?;
        let seeds = parts
            .seeds
            .iter()
            .map(|s| parse_seed(s))
            .collect::<Result<Vec<Url>, _>>()?;
        let mut patches: Vec<(String, ConfigPatch)> = Vec::new();
        for path in &parts.config_files {
            patches.push((path.display().to_string(), CrawlConfig::read_patch(path)?));
        }
        patches.push(("options".to_string(), parts.options.clone()));
        let refs: Vec<(&str, &ConfigPatch)> =
            patches.iter().map(|(o, p)| (o.as_str(), p)).collect();
        let given = CrawlConfig::layered(None, &refs)?;
        Scope::new(&seeds, given.scope, &given.include, &given.exclude)?;
        // The records of a page must be written before its result counts (see `warc`),
        // which only the SQLite store writer waits for.
        if given.warc.is_some() {
            return Err(crate::warc::WarcError::Distributed.into());
        }

        let cancel = tokio_util::sync::CancellationToken::new();
        let redis = conn::Redis::connect(&url, cancel.clone()).await?;
        let joined = run::join(&redis, &keys::CrawlKeys::new(&id), &seeds, &refs).await?;
        let scope = Scope::new(
            &joined.seeds,
            joined.config.scope,
            &joined.config.include,
            &joined.config.exclude,
        )?;
        let fetcher = crate::fetch::Fetcher::new(&joined.config)?;
        Ok(RedisCrawl {
            redis,
            keys: keys::CrawlKeys::new(&id),
            config: joined.config,
            seeds: joined.seeds,
            new_seeds: seeds,
            scope,
            fetcher,
            filter: parts.filter,
            finished: joined.finished,
            started: joined.started,
            progress: crate::crawler::Progress::new(),
            cancel,
        })
    }
}

/// How often a process writes its heartbeat (for `trawl status`).
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(2);
