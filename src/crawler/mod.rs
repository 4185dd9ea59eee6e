//! The crawl a library user holds: [`Crawler::builder`] opens the store (a SQLite file, or
//! a Redis crawl), decides between a new crawl, a resumed one and a finished one, and
//! settles the configuration (`open`); [`Crawler::run`] hands the store to the engine,
//! which runs the same for both.

mod builder;
#[cfg(feature = "redis")]
mod distributed;
mod open;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use url::Url;

pub use self::builder::CrawlerBuilder;
use crate::admit::{LinkFilter, Rules};
use crate::config::CrawlConfig;
use crate::engine::worker::PageHook;
use crate::engine::{self, Run};
pub use crate::engine::{Outcome, Summary};
use crate::events::{EventSink, Events};
use crate::fetch::Fetcher;
pub use crate::live::{HostRow, Progress, ProgressSnapshot, RecentPage, RecentPages};
use crate::page::Reader;
use crate::store::local::sqlite::SqliteStore;
use crate::store::local::LocalStore;
#[cfg(feature = "redis")]
use crate::store::redis::{CrawlKeys, Redis, RedisStore};
use crate::url_norm::Scope;
use crate::warc::Warc;
use crate::Error;

/// Where the crawl lives.
enum Backend {
    /// A SQLite file, crawled by this process alone.
    Local(SqliteStore),
    /// A Redis crawl, shared with every process given the same store and crawl id.
    #[cfg(feature = "redis")]
    Redis {
        redis: Redis,
        keys: CrawlKeys,
        /// This process created the crawl.
        created: bool,
        /// The file this process collects the crawl's results into, if given one.
        collect: Option<std::path::PathBuf>,
    },
}

/// A crawl ready to run. See [`CrawlerBuilder`].
pub struct Crawler {
    backend: Backend,
    config: CrawlConfig,
    /// Every seed of the crawl (stored ones and any added now).
    seeds: Vec<Url>,
    /// The seeds this run admits.
    admit: Vec<Url>,
    scope: Scope,
    fetcher: Fetcher,
    resumed: bool,
    finished: bool,
    hook: Option<PageHook>,
    filter: Option<LinkFilter>,
    events: Option<EventSink>,
    progress: Progress,
    warc: Option<Warc>,
    cancel: CancellationToken,
}

impl Crawler {
    /// Start building a crawler.
    pub fn builder() -> CrawlerBuilder {
        CrawlerBuilder::default()
    }

    /// The configuration this run uses.
    pub fn config(&self) -> &CrawlConfig {
        &self.config
    }

    /// The seeds of the crawl (stored ones and any added now).
    pub fn seeds(&self) -> &[Url] {
        &self.seeds
    }

    /// Whether this run continues an unfinished crawl (a Redis crawl: joins one that
    /// another process created).
    pub fn is_resume(&self) -> bool {
        self.resumed && !self.finished
    }

    /// Whether the crawl is finished (so `run` will do nothing).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The Redis crawl's id, for a Redis crawl.
    pub fn crawl_id(&self) -> Option<&str> {
        match &self.backend {
            #[cfg(feature = "redis")]
            Backend::Redis { keys, .. } => Some(keys.id()),
            Backend::Local(_) => None,
        }
    }

    /// Whether this process created the crawl (a Redis crawl that others may join).
    pub fn created(&self) -> bool {
        match &self.backend {
            #[cfg(feature = "redis")]
            Backend::Redis { created, .. } => *created,
            Backend::Local(_) => !self.resumed,
        }
    }

    /// Receive every fetched page as it finishes (see [`crate::events`]): at most
    /// `capacity` wait unread before the workers wait too; `bodies` includes each page's
    /// body. Call before [`Crawler::run`]; the events end when the run ends.
    pub fn subscribe(&mut self, capacity: usize, bodies: bool) -> Events {
        let (sink, events) = crate::events::channel(capacity, bodies);
        self.events = Some(sink);
        events
    }

    /// A live view of the counters, usable while `run` is in progress.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// Crawl until every in-scope URL is fetched or `shutdown` completes. After a
    /// shutdown, fetches under way get the configured grace period to finish; everything
    /// finished is kept, and running again resumes (a Redis crawl: what this process held
    /// goes back to the crawl for the others).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Summary, Error> {
        if self.finished {
            return self.already_finished().await;
        }
        // Serves until the run ends (the sender drops).
        let ui = self.ui_sources();
        let _ui = serve_ui(&self.config, ui).await?;
        let rules = Arc::new(Rules::new(self.scope, &self.config, self.filter));
        let barrier = self.warc.as_ref().map(Warc::barrier);
        let run = Run {
            reader: Reader::new(self.fetcher, &self.config),
            rules: rules.clone(),
            seeds: self.admit,
            hook: self.hook,
            events: self.events,
            progress: self.progress.clone(),
            warc: self.warc,
            resumed: self.resumed,
            cancel: self.cancel,
            config: self.config.clone(),
        };
        match self.backend {
            Backend::Local(store) => {
                let store = LocalStore::start(store, &self.config, rules, barrier)?;
                engine::run(Arc::new(store), run, shutdown).await
            }
            #[cfg(feature = "redis")]
            Backend::Redis {
                redis,
                keys,
                collect,
                ..
            } => {
                let stats = self.progress.stats.clone();
                let store =
                    RedisStore::start(redis, keys, &self.config, rules, barrier, stats, collect);
                engine::run(Arc::new(store), run, shutdown).await
            }
        }
    }

    /// What the crawl's page serves when `ui` is set: the live figures, and the reports
    /// of the file (a Redis crawl's: the file this process collects into, if any). Read
    /// before any await: the store is not `Sync`, so the run must not hold `&self` across one.
    fn ui_sources(&self) -> Option<crate::ui::Sources> {
        if self.config.ui.is_empty() {
            return None;
        }
        let db = match &self.backend {
            Backend::Local(store) => Some(store.path().to_owned()),
            #[cfg(feature = "redis")]
            Backend::Redis { collect, .. } => collect.clone(),
        };
        Some(crate::ui::Sources {
            db,
            progress: Some(self.progress.clone()),
        })
    }

    async fn already_finished(self) -> Result<Summary, Error> {
        // A finished Redis crawl may still have results in Redis (its collector stopped
        // before the end): a process given the file collects them.
        #[cfg(feature = "redis")]
        if let Backend::Redis {
            redis,
            keys,
            collect: Some(path),
            ..
        } = &self.backend
        {
            crate::store::redis::collect_rest(redis.clone(), keys.clone(), path.clone()).await?;
        }
        let known_urls = match &self.backend {
            Backend::Local(store) => store.count_urls()?,
            #[cfg(feature = "redis")]
            Backend::Redis { redis, keys, .. } => crate::store::redis::status::count(redis, keys)
                .await
                .map(|c| c.known)
                .unwrap_or_default(),
        };
        Ok(Summary {
            outcome: Outcome::AlreadyFinished,
            resumed: false,
            run: self.progress.stats.snapshot(Duration::ZERO),
            known_urls,
            queued: 0,
            visited: Default::default(),
        })
    }
}

/// Serve the crawl's page on `config.ui` when there are `sources`; it stops when the
/// returned sender drops.
async fn serve_ui(
    config: &CrawlConfig,
    sources: Option<crate::ui::Sources>,
) -> Result<Option<tokio::sync::oneshot::Sender<()>>, Error> {
    let Some(sources) = sources else {
        return Ok(None);
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let token = Some(config.ui_token.clone());
    let addr = crate::ui::serve(&config.ui, token, sources, async {
        let _ = stopped.await;
    })
    .await?;
    tracing::info!(%addr, "serving the crawl's page");
    Ok(Some(stop))
}
