//! Joining a Redis crawl: the same checks and settling as a local crawl's, over the crawl's
//! record in Redis instead of the file's.

use tokio_util::sync::CancellationToken;

use super::open::{open_warc, settle, Given};
use super::{Backend, Crawler, CrawlerBuilder};
use crate::config::CrawlConfig;
use crate::store::redis::{self as redis_store, CrawlKeys, DistError, Redis, Reuse};
use crate::store::StoredCrawl;
use crate::Error;

impl CrawlerBuilder {
    /// Join (or start) the Redis crawl `crawl_id` in `store`: the first process creates it
    /// from its seeds and options; later ones take the stored configuration with their
    /// own options over it, as a resumed crawl does. `warc` and `metrics-addr` are this
    /// process's own: never taken from the stored configuration. Waits while Redis is
    /// unreachable, until the caller gives up by dropping the future.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), trawl::Error> {
    /// let crawl = trawl::Crawler::builder()
    ///     .store("redis://127.0.0.1:6379/0")
    ///     .crawl_id("example")
    ///     .db("example.db") // this process collects the results into example.db
    ///     .seed("https://example.org/")
    ///     .build_distributed()
    ///     .await?;
    /// let summary = crawl.run(async { tokio::signal::ctrl_c().await.ok(); }).await?;
    /// println!("{} pages by this process", summary.run.pages);
    /// # Ok(()) }
    /// ```
    pub async fn build_distributed(self) -> Result<Crawler, Error> {
        let store = self.store.clone().ok_or(DistError::BadStore {
            store: String::new(),
            why: "no --store given".into(),
        })?;
        let (url, id) = redis_store::parse_target(&store, self.crawl_id.as_deref())?;
        let given = self.check(None)?;
        let cancel = CancellationToken::new();
        let redis = Redis::connect(&url, cancel.clone()).await?;
        let mut keys = CrawlKeys::new(&id);
        let reuse = match (self.recrawl, self.recheck, self.refresh) {
            (true, _, _) => Reuse::Recrawl,
            (_, true, _) => Reuse::RecheckFailed,
            (_, _, true) => Reuse::Refresh,
            _ => Reuse::No,
        };
        let earlier = match &self.db {
            Some(path) => redis_store::earlier(&redis, &keys, path, reuse).await?,
            None => None,
        };
        let (stored, created) = join(&redis, &keys, &given, earlier.as_ref()).await?;
        keys.set_shards(redis_store::shards(&redis, &keys).await?);
        let mut settled = settle(Some(&stored), &given.seeds, &given.layers)?;
        match &self.db {
            Some(path) => {
                let keep = settled.config.check_cache_age;
                if earlier.is_some() && !created {
                    // Another process created the crawl a moment ago, not from the file.
                    return Err(DistError::ReuseStarted {
                        id,
                        path: path.display().to_string(),
                    }
                    .into());
                }
                let earlier = earlier.is_some();
                redis_store::prepare_file(&redis, &keys, path, earlier, reuse, keep).await?;
            }
            None => {
                if redis_store::ResultsFile::of(&redis, &keys).await?.is_none() {
                    tracing::warn!(
                        crawl_id = id,
                        "no process collects this crawl's results yet: they wait in Redis \
                         (a bounded buffer per host) until a process of the crawl runs with --db FILE"
                    );
                }
            }
        }
        settled.config.warc = given.config.warc.clone();
        settled.config.metrics_addr = given.config.metrics_addr.clone();
        settled.config.ui = given.config.ui.clone();
        settled.config.ui_token = given.config.ui_token.clone();
        if settled.added && !created {
            let seeds: Vec<String> = settled.seeds.iter().map(|u| u.to_string()).collect();
            redis_store::add_seeds(&redis, &keys, &seeds).await?;
        }
        let warc = match (&settled.config.warc, stored.finished) {
            (Some(path), false) => Some(open_warc(
                path,
                &settled.config,
                &format!("Redis crawl {id}"),
                !created,
            )?),
            _ => None,
        };
        let admit = given.seeds.clone();
        let backend = Backend::Redis {
            redis,
            keys,
            created,
            collect: self.db.clone(),
        };
        self.crawler(
            backend,
            settled,
            admit,
            warc,
            !created,
            stored.finished,
            cancel,
        )
    }
}

/// Read the Redis crawl, creating it when it does not exist yet from what was given (over
/// the `earlier` crawl of the file it takes, as a local recrawl keeps its file's seeds and
/// configuration); whether this process created it.
async fn join(
    redis: &Redis,
    keys: &CrawlKeys,
    given: &Given,
    earlier: Option<&StoredCrawl>,
) -> Result<(StoredCrawl, bool), Error> {
    if let Some(stored) = redis_store::read(redis, keys).await? {
        return Ok((stored, false));
    }
    let base = settle(earlier, &given.seeds, &given.layers)?;
    if base.seeds.is_empty() {
        return Err(DistError::NoSeeds {
            id: keys.id().to_owned(),
        }
        .into());
    }
    // What every process shares: not this process's own WARC file, metrics address and
    // page (nor its token, a secret).
    let config = CrawlConfig {
        warc: None,
        metrics_addr: String::new(),
        ui: String::new(),
        ui_token: String::new(),
        ..base.config
    };
    let stored = StoredCrawl {
        config: config.to_toml(),
        seeds: base.seeds.iter().map(|u| u.to_string()).collect(),
        finished: false,
    };
    if redis_store::create(redis, keys, &stored.seeds, &stored.config).await? {
        return Ok((stored, true));
    }
    // Another process created it a moment ago.
    let stored = redis_store::read(redis, keys).await?.unwrap_or(stored);
    Ok((stored, false))
}
