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
use crate::store::StoredCrawl;
use crate::url_norm::{parse_seed, read_seeds_file, Scope};
use crate::warc::Warc;
use crate::Error;

/// The configuration and seeds a run uses.
pub(super) struct Settled {
    pub(super) config: CrawlConfig,
    /// Stored seeds first, then the new ones.
    pub(super) seeds: Vec<Url>,
    /// Seeds given now that the store did not list.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(super) added: bool,
}

/// Lay `layers` over the stored configuration (or the defaults) and add the `given` seeds
/// to the stored ones.
pub(super) fn settle(
    stored: Option<&StoredCrawl>,
    given: &[Url],
    layers: &Layers,
) -> Result<Settled, Error> {
    let base = stored
        .map(|s| CrawlConfig::from_toml(&s.config))
        .transpose()?;
    let mut config = layers.over(base.as_ref())?;
    // The file was read once, by `check`: the seeds it gave are stored with the crawl, and
    // a resume must not need the file.
    config.seeds_file = None;
    let mut seeds: Vec<Url> = stored
        .map(|s| s.seeds.iter().filter_map(|u| Url::parse(u).ok()).collect())
        .unwrap_or_default();
    // A set: a seeds file may hold many thousands of sites.
    let mut known: std::collections::HashSet<Url> = seeds.iter().cloned().collect();
    let mut added = false;
    for s in given {
        if known.insert(s.clone()) {
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
pub(super) struct Given {
    pub(super) seeds: Vec<Url>,
    pub(super) layers: Layers,
    /// The given options over the defaults (validation is per value, so what passes here
    /// passes over a stored configuration too).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(super) config: CrawlConfig,
}

impl CrawlerBuilder {
    pub(super) fn check(&self, db: Option<&Path>) -> Result<Given, Error> {
        let mut seeds = self
            .seeds
            .iter()
            .map(|s| parse_seed(s))
            .collect::<Result<Vec<Url>, _>>()?;
        let layers = Layers::read(&self.config_files, self.options.clone())?;
        let config = layers.given()?;
        if let Some(path) = &config.seeds_file {
            seeds.extend(read_seeds_file(path)?);
        }
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
        let settled = settle(stored.as_ref(), &given.seeds, &given.layers)?;
        let (resumed, finished) = match &stored {
            None if given.seeds.is_empty() => return Err(no_seeds()),
            None => (false, false),
            Some(s) if s.finished && self.recrawl => {
                let keep = settled.config.check_cache_age.as_millis();
                store.clear_for_recrawl(u64::try_from(keep).unwrap_or(u64::MAX))?;
                (false, false)
            }
            Some(s) if s.finished && self.refresh => {
                let begun = store.start_generation()?;
                tracing::info!(
                    generation = begun.generation,
                    pages = begun.queued,
                    "--refresh: asking every page again, conditionally"
                );
                (true, false)
            }
            Some(s) if s.finished && self.recheck => {
                let n = store.requeue_failed()?;
                tracing::info!(urls = n, "--recheck failed: fetching again what failed");
                (true, false)
            }
            Some(s) => (!s.finished, s.finished),
        };
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
            // The token is a secret: whoever reads the file must not learn it from there.
            let stored = CrawlConfig {
                ui_token: String::new(),
                ..settled.config.clone()
            };
            store.write_crawl(&seeds, &stored.to_toml())?;
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn crawler(
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

/// Open the WARC file for this run, with its `warcinfo` record. Room for every fetch under
/// way (workers and host preparation) plus a backlog; past it fetches wait for the writer.
pub(super) fn open_warc(
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
