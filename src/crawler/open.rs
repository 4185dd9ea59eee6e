//! Opening a crawl: check what was given, open the store (the SQLite file, or the Redis
//! crawl), decide between a new, a resumed and a finished crawl, and settle seeds and
//! configuration the same way for both.

use std::path::Path;

use tokio_util::sync::CancellationToken;
use url::Url;

use super::{Backend, Crawler, CrawlerBuilder};
use crate::config::{CrawlConfig, Layers};
use crate::fetch::Fetcher;
use crate::live::Progress;
use crate::store::local::sqlite::{OpenMode, SqliteStore};
use crate::store::redis::{self as redis_store, CrawlKeys, DistError, Redis};
use crate::store::StoredCrawl;
use crate::url_norm::{parse_seed, Scope};
use crate::warc::Warc;
use crate::Error;

/// The configuration and seeds a run uses.
struct Settled {
    config: CrawlConfig,
    /// Stored seeds first, then the new ones.
    seeds: Vec<Url>,
    /// Seeds given now that the store did not list.
    added: bool,
}

/// Lay `layers` over the stored configuration (or the defaults) and add the `given` seeds
/// to the stored ones.
fn settle(stored: Option<&StoredCrawl>, given: &[Url], layers: &Layers) -> Result<Settled, Error> {
    let base = stored
        .map(|s| CrawlConfig::from_toml(&s.config))
        .transpose()?;
    let config = layers.over(base.as_ref())?;
    let mut seeds: Vec<Url> = stored
        .map(|s| s.seeds.iter().filter_map(|u| Url::parse(u).ok()).collect())
        .unwrap_or_default();
    let mut added = false;
    for s in given {
        if !seeds.contains(s) {
            seeds.push(s.clone());
            added = true;
        }
    }
    Ok(Settled {
        config,
        seeds,
        added,
    })
}

/// What was given to the builder, checked before any store is touched, so bad input
/// leaves nothing behind.
struct Given {
    seeds: Vec<Url>,
    layers: Layers,
    /// The given options over the defaults (validation is per value, so what passes here
    /// passes over a stored configuration too).
    config: CrawlConfig,
}

impl CrawlerBuilder {
    fn check(&self, db: Option<&Path>) -> Result<Given, Error> {
        let seeds = self
            .seeds
            .iter()
            .map(|s| parse_seed(s))
            .collect::<Result<Vec<Url>, _>>()?;
        let layers = Layers::read(&self.config_files, self.options.clone())?;
        let config = layers.given()?;
        Scope::new(&seeds, config.scope, &config.include, &config.exclude)?;
        if let Some(path) = &config.warc {
            crate::warc::check_path(path, db)?;
        }
        Ok(Given {
            seeds,
            layers,
            config,
        })
    }

    /// Open the SQLite file (`db`) and settle seeds and configuration. Nothing is fetched
    /// yet.
    pub fn build(self) -> Result<Crawler, Error> {
        let db = self.db.clone().ok_or(Error::NoDb)?;
        let given = self.check(Some(&db))?;
        let no_seeds = || Error::NoSeeds {
            db: db.display().to_string(),
        };
        if given.seeds.is_empty() && !db.exists() {
            return Err(no_seeds());
        }
        let mut store = SqliteStore::open(&db, OpenMode::Crawl)?;
        let stored = store.crawl()?.map(|row| StoredCrawl {
            config: row.config,
            seeds: row.seeds,
            finished: row.finished_at.is_some(),
        });
        let (resumed, finished) = match &stored {
            None if given.seeds.is_empty() => return Err(no_seeds()),
            None => (false, false),
            Some(s) if s.finished && self.recrawl => {
                store.clear_for_recrawl()?;
                (false, false)
            }
            Some(s) => (!s.finished, s.finished),
        };
        let settled = settle(stored.as_ref(), &given.seeds, &given.layers)?;
        // Opened before the configuration is stored, so a WARC path that fails is not
        // kept for the next resume. A finished crawl leaves the file alone.
        let shown = db.display().to_string();
        let warc = match (&settled.config.warc, finished) {
            (Some(path), false) => {
                crate::warc::check_path(path, Some(&db))?;
                Some(open_warc(path, &settled.config, &shown, resumed)?)
            }
            _ => None,
        };
        if !finished {
            let seeds: Vec<String> = settled.seeds.iter().map(|u| u.to_string()).collect();
            store.write_crawl(&seeds, &settled.config.to_toml())?;
        }
        let admit = settled.seeds.clone();
        self.crawler(
            Backend::Local(store),
            settled,
            admit,
            warc,
            resumed,
            finished,
            CancellationToken::new(),
        )
    }

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
        let keys = CrawlKeys::new(&id);
        let (stored, created) = join(&redis, &keys, &given).await?;
        let mut settled = settle(Some(&stored), &given.seeds, &given.layers)?;
        settled.config.warc = given.config.warc.clone();
        settled.config.metrics_addr = given.config.metrics_addr.clone();
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

    #[allow(clippy::too_many_arguments)]
    fn crawler(
        self,
        backend: Backend,
        settled: Settled,
        admit: Vec<Url>,
        warc: Option<Warc>,
        resumed: bool,
        finished: bool,
        cancel: CancellationToken,
    ) -> Result<Crawler, Error> {
        let config = settled.config;
        let scope = Scope::new(
            &settled.seeds,
            config.scope,
            &config.include,
            &config.exclude,
        )?;
        let mut fetcher = Fetcher::new(&config)?;
        if let Some(w) = &warc {
            fetcher = fetcher.with_warc(w.sink());
        }
        Ok(Crawler {
            backend,
            config,
            seeds: settled.seeds,
            admit,
            scope,
            fetcher,
            resumed,
            finished,
            hook: self.hook,
            filter: self.filter,
            events: None,
            progress: Progress::new(),
            warc,
            cancel,
        })
    }
}

/// Read the Redis crawl, creating it from what was given when it does not exist yet;
/// whether this process created it.
async fn join(
    redis: &Redis,
    keys: &CrawlKeys,
    given: &Given,
) -> Result<(StoredCrawl, bool), Error> {
    if let Some(stored) = redis_store::read(redis, keys).await? {
        return Ok((stored, false));
    }
    if given.seeds.is_empty() {
        return Err(DistError::NoSeeds {
            id: keys.id().to_owned(),
        }
        .into());
    }
    // What every process shares: not this process's own WARC file and metrics address.
    let config = CrawlConfig {
        warc: None,
        metrics_addr: String::new(),
        ..given.layers.over(None)?
    };
    let stored = StoredCrawl {
        config: config.to_toml(),
        seeds: given.seeds.iter().map(|u| u.to_string()).collect(),
        finished: false,
    };
    if redis_store::create(redis, keys, &stored.seeds, &stored.config).await? {
        return Ok((stored, true));
    }
    // Another process created it a moment ago.
    let stored = redis_store::read(redis, keys).await?.unwrap_or(stored);
    Ok((stored, false))
}

/// Open the WARC file for this run, with its `warcinfo` record. Room for every fetch under
/// way (workers and host preparation) plus a backlog; past it fetches wait for the writer.
fn open_warc(
    path: &Path,
    config: &CrawlConfig,
    part_of: &str,
    resumed: bool,
) -> Result<Warc, Error> {
    let info = warc_info(config, part_of, resumed);
    Ok(Warc::open(path, &info, 2 * config.concurrency + 16)?)
}

/// The `warcinfo` fields of a run: what wrote the file, how, and for which crawl.
fn warc_info(config: &CrawlConfig, part_of: &str, resumed: bool) -> Vec<(&'static str, String)> {
    let robots = if config.ignore_robots {
        "ignore"
    } else {
        "obey"
    };
    let description = if resumed {
        "a resumed trawl crawl: records of this run follow"
    } else {
        "a trawl crawl: records of this run follow"
    };
    vec![
        ("software", format!("trawl/{}", env!("CARGO_PKG_VERSION"))),
        ("format", "WARC File Format 1.1".into()),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
                .into(),
        ),
        ("http-header-user-agent", config.user_agent.clone()),
        ("robots", robots.into()),
        ("isPartOf", part_of.to_owned()),
        ("description", description.into()),
    ]
}
