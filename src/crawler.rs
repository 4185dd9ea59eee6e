//! The crawl loop: seeds in, a finished (or resumable) SQLite file out.
//!
//! [`Crawler::builder`] opens the store, decides between a new crawl, a resumed one and a
//! finished one, and settles the configuration; [`Crawler::run`] wires the frontier,
//! dispatcher, workers and store writer together and runs until the drain counter reaches
//! zero or the `shutdown` future completes.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::admit::{Gate, Limits, LinkFilter};
use crate::config::{ByteSize, ConfigPatch, CrawlConfig, RateLimit};
use crate::drain::Drain;
use crate::events::{EventSink, Events};
use crate::fetch::Fetcher;
use crate::frontier::dispatcher::Dispatcher;
use crate::frontier::prepare::Preparer;
use crate::frontier::{Frontier, FrontierCounts, HostPolicy};
use crate::page::Reader;
use crate::politeness::robots::product_token;
use crate::stats::{RunCounts, Stats};
use crate::store::{now_ms, OpenMode, Pending, SqliteStore, StoreWriter};
use crate::traps::Traps;
use crate::url_norm::{parse_seed, Scope, ScopeMode};
use crate::visited::{Footprint, Visited};
use crate::warc::Warc;
use crate::worker::{PageEvent, PageHook, Worker};
use crate::Error;

/// Builds a [`Crawler`]: where to store the crawl, what to crawl, and any options that
/// differ from the defaults (or, when resuming, from the stored configuration).
///
/// ```no_run
/// # async fn demo() -> Result<(), trawl::Error> {
/// let summary = trawl::Crawler::builder()
///     .db("site.db")
///     .seed("https://example.org/")
///     .concurrency(32)
///     .per_host(4)
///     .build()?
///     .run(async { tokio::signal::ctrl_c().await.ok(); })
///     .await?;
/// println!("{} pages", summary.run.pages);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct CrawlerBuilder {
    db: Option<PathBuf>,
    seeds: Vec<String>,
    config_files: Vec<PathBuf>,
    options: ConfigPatch,
    recrawl: bool,
    hook: Option<PageHook>,
    filter: Option<LinkFilter>,
    store: Option<String>,
    crawl_id: Option<String>,
}

/// A builder's fields, for the distributed build.
pub(crate) struct BuilderParts {
    pub seeds: Vec<String>,
    pub config_files: Vec<PathBuf>,
    pub options: ConfigPatch,
    pub filter: Option<LinkFilter>,
    pub store: Option<String>,
    pub crawl_id: Option<String>,
}

macro_rules! option_setters {
    ($($(#[$doc:meta])* $name:ident : $ty:ty => $key:literal, $conv:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $ty) -> Self {
                #[allow(clippy::redundant_closure_call)]
                let v: toml::Value = ($conv)(value);
                self.options.insert($key.to_string(), v);
                self
            }
        )*
    };
}

fn duration(d: Duration) -> toml::Value {
    toml::Value::String(humantime::format_duration(d).to_string())
}

fn int(n: u64) -> toml::Value {
    toml::Value::Integer(n.min(i64::MAX as u64) as i64)
}

impl CrawlerBuilder {
    /// The SQLite file holding the crawl (created if missing).
    pub fn db(mut self, path: impl Into<PathBuf>) -> Self {
        self.db = Some(path.into());
        self
    }

    /// A Redis crawl instead of a SQLite file: `redis://HOST:PORT/DB`, or
    /// `redis+cluster://HOST:PORT[,HOST:PORT...]` for a cluster. Build it with
    /// [`CrawlerBuilder::build_distributed`].
    pub fn store(mut self, url: impl Into<String>) -> Self {
        self.store = Some(url.into());
        self
    }

    /// The name of a Redis crawl: every process of the crawl uses the same.
    pub fn crawl_id(mut self, id: impl Into<String>) -> Self {
        self.crawl_id = Some(id.into());
        self
    }

    pub(crate) fn into_parts(self) -> BuilderParts {
        BuilderParts {
            seeds: self.seeds,
            config_files: self.config_files,
            options: self.options,
            filter: self.filter,
            store: self.store,
            crawl_id: self.crawl_id,
        }
    }

    /// Add a seed URL (`https://example.org/`; a bare `example.org` means https).
    pub fn seed(mut self, url: impl Into<String>) -> Self {
        self.seeds.push(url.into());
        self
    }

    /// Add several seeds.
    pub fn seeds<I: IntoIterator<Item = S>, S: Into<String>>(mut self, urls: I) -> Self {
        self.seeds.extend(urls.into_iter().map(Into::into));
        self
    }

    /// Read options from a TOML file (keys as in `config/default.toml`); options set on
    /// the builder win over it.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_files.push(path.into());
        self
    }

    /// Set options from a TOML table (as the CLI does with its flags).
    pub fn options(mut self, patch: ConfigPatch) -> Self {
        self.options.extend(patch);
        self
    }

    /// When the file holds a finished crawl, start it again from the seeds (the previous
    /// results in the file are discarded).
    pub fn recrawl(mut self, yes: bool) -> Self {
        self.recrawl = yes;
        self
    }

    /// Call `hook` for every fetched URL. A panic in the hook is caught and recorded as
    /// the page's error; it never stops the crawl.
    pub fn on_page(mut self, hook: impl Fn(&PageEvent<'_>) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Decide per discovered URL whether to fetch it (after scope and the other rules):
    /// `false` stores it as skipped with reason `filtered`. Seeds are not asked.
    ///
    /// ```no_run
    /// let builder = trawl::Crawler::builder()
    ///     .follow_if(|url| !url.path().ends_with(".pdf"));
    /// ```
    pub fn follow_if(mut self, filter: impl Fn(&Url) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    option_setters! {
        /// Worker tasks fetching at once (`concurrency`).
        concurrency: usize => "concurrency", |v: usize| int(v as u64);
        /// Requests in flight to one host (`per-host`).
        per_host: usize => "per-host", |v: usize| int(v as u64);
        /// Body bytes read per response (`max-body`).
        max_body: u64 => "max-body", |v: u64| toml::Value::String(ByteSize(v).to_string());
        /// Memory for the visited set, 0 for no limit (`visited-memory`).
        visited_memory: u64 => "visited-memory", |v: u64| toml::Value::String(ByteSize(v).to_string());
        /// Time to connect (`connect-timeout`).
        connect_timeout: Duration => "connect-timeout", duration;
        /// Longest wait for the next bytes (`read-timeout`).
        read_timeout: Duration => "read-timeout", duration;
        /// Longest time for a whole request (`timeout`).
        timeout: Duration => "timeout", duration;
        /// Redirect hops followed from one URL (`max-redirects`).
        max_redirects: u32 => "max-redirects", |v: u32| int(v.into());
        /// Which URLs are in scope (`scope`).
        scope: ScopeMode => "scope", |v: ScopeMode| toml::Value::String(v.as_str().into());
        /// Only fetch URLs matching one of these regexes (`include`).
        include: Vec<String> => "include", |v: Vec<String>| toml::Value::Array(v.into_iter().map(toml::Value::String).collect());
        /// Never fetch URLs matching one of these regexes (`exclude`).
        exclude: Vec<String> => "exclude", |v: Vec<String>| toml::Value::Array(v.into_iter().map(toml::Value::String).collect());
        /// Deepest click depth fetched, 0 for none (`max-depth`).
        max_depth: u32 => "max-depth", |v: u32| int(v.into());
        /// Most URLs fetched, 0 for none (`max-pages`).
        max_pages: u64 => "max-pages", int;
        /// The User-Agent header (`user-agent`).
        user_agent: String => "user-agent", toml::Value::String;
        /// Time in-flight fetches get after a stop is asked for (`grace-period`).
        grace_period: Duration => "grace-period", duration;
        /// Ignore robots.txt (`ignore-robots`).
        ignore_robots: bool => "ignore-robots", toml::Value::Boolean;
        /// Least time between two requests to one host (`delay`).
        delay: Duration => "delay", duration;
        /// Most requests per host per window (`rate-limit`).
        rate_limit: RateLimit => "rate-limit", |v: RateLimit| toml::Value::String(v.to_string());
        /// Longest robots.txt Crawl-delay honoured (`max-crawl-delay`).
        max_crawl_delay: Duration => "max-crawl-delay", duration;
        /// Longest pause honoured from Retry-After (`max-retry-after`).
        max_retry_after: Duration => "max-retry-after", duration;
        /// Attempts per URL for transient faults (`max-attempts`).
        max_attempts: u32 => "max-attempts", |v: u32| int(v.into());
        /// Base of the backoff between attempts (`retry-backoff`).
        retry_backoff: Duration => "retry-backoff", duration;
        /// Longest URL admitted, 0 for none (`max-url-length`).
        max_url_length: usize => "max-url-length", |v: usize| int(v as u64);
        /// Most path segments in a URL, 0 for none (`max-path-segments`).
        max_path_segments: usize => "max-path-segments", |v: usize| int(v as u64);
        /// Most repeats of one path segment, 0 for none (`max-repeated-segments`).
        max_repeated_segments: usize => "max-repeated-segments", |v: usize| int(v as u64);
        /// Most URLs fetched from one host, 0 for none (`max-pages-per-host`).
        max_pages_per_host: u64 => "max-pages-per-host", int;
        /// Remove session IDs from canonical URLs (`strip-session-ids`).
        strip_session_ids: bool => "strip-session-ids", toml::Value::Boolean;
        /// Extra request headers, each "Name: value" (`headers`).
        headers: Vec<String> => "headers", |v: Vec<String>| toml::Value::Array(v.into_iter().map(toml::Value::String).collect());
        /// Keep cookies for the crawl (`cookies`).
        cookies: bool => "cookies", toml::Value::Boolean;
        /// Read sitemaps (`sitemaps`).
        sitemaps: bool => "sitemaps", toml::Value::Boolean;
        /// Proxies requests go through (`proxies`).
        proxies: Vec<String> => "proxies", |v: Vec<String>| toml::Value::Array(v.into_iter().map(toml::Value::String).collect());
        /// How requests spread over the proxies (`proxy-rotation`).
        proxy_rotation: crate::proxy::Rotation => "proxy-rotation", |v: crate::proxy::Rotation| toml::Value::String(v.as_str().into());
        /// Failures that take a proxy out of rotation (`proxy-max-failures`).
        proxy_max_failures: u32 => "proxy-max-failures", |v: u32| int(v.into());
        /// How long a failing proxy stays out (`proxy-cooldown`).
        proxy_cooldown: Duration => "proxy-cooldown", duration;
        /// Serve Prometheus metrics here while crawling (`metrics-addr`).
        metrics_addr: String => "metrics-addr", toml::Value::String;
        /// Redis crawls: how long a claim on a URL lasts unless renewed (`lease`).
        lease: Duration => "lease", duration;
        /// Extra certificate authorities to trust, PEM files (`ca-certs`).
        ca_certs: Vec<PathBuf> => "ca-certs", |v: Vec<PathBuf>| toml::Value::Array(v.into_iter().map(|p| toml::Value::String(p.display().to_string())).collect());
        /// Write every request and response to this WARC file, appending when it exists
        /// (`warc`). A relative path is resolved against the current directory of each
        /// run, so pass an absolute one to resume from anywhere.
        warc: PathBuf => "warc", |v: PathBuf| toml::Value::String(v.to_string_lossy().into_owned());
    }

    /// Open the store and settle seeds and configuration. Nothing is fetched yet.
    pub fn build(self) -> Result<Crawler, Error> {
        let db = self.db.ok_or(Error::NoDb)?;
        let seeds = self
            .seeds
            .iter()
            .map(|s| parse_seed(s))
            .collect::<Result<Vec<Url>, _>>()?;
        let mut patches = Vec::new();
        for path in &self.config_files {
            patches.push((path.display().to_string(), CrawlConfig::read_patch(path)?));
        }
        patches.push(("options".to_string(), self.options));
        let patch_refs: Vec<(&str, &ConfigPatch)> =
            patches.iter().map(|(o, p)| (o.as_str(), p)).collect();

        // Check everything given here before the file is touched, so bad input leaves no
        // file behind. Validation is per value, so what passes over the defaults also
        // passes over a stored configuration.
        let given = CrawlConfig::layered(None, &patch_refs)?;
        Scope::new(&seeds, given.scope, &given.include, &given.exclude)?;
        if let Some(path) = &given.warc {
            crate::warc::check_path(path, &db)?;
        }
        if seeds.is_empty() && !db.exists() {
            return Err(Error::NoSeeds {
                db: db.display().to_string(),
            });
        }

        let mut store = SqliteStore::open(&db, OpenMode::Crawl)?;
        let existing = store.crawl()?;
        let (config, mut all_seeds, status) = match existing {
            None => {
                if seeds.is_empty() {
                    return Err(Error::NoSeeds {
                        db: db.display().to_string(),
                    });
                }
                let config = CrawlConfig::layered(None, &patch_refs)?;
                (config, Vec::new(), Start::New)
            }
            Some(row) => {
                let stored = CrawlConfig::from_toml(&row.config)?;
                let config = CrawlConfig::layered(Some(&stored), &patch_refs)?;
                let status = match (row.finished_at.is_some(), self.recrawl) {
                    (true, false) => Start::Finished,
                    (true, true) => {
                        store.clear_for_recrawl()?;
                        Start::New
                    }
                    (false, _) => Start::Resume,
                };
                let stored_seeds = row
                    .seeds
                    .iter()
                    .filter_map(|s| Url::parse(s).ok())
                    .collect();
                (config, stored_seeds, status)
            }
        };
        for s in seeds {
            if !all_seeds.contains(&s) {
                all_seeds.push(s);
            }
        }
        let scope = Scope::new(&all_seeds, config.scope, &config.include, &config.exclude)?;
        let mut fetcher = Fetcher::new(&config)?;
        // Opened before the configuration is stored, so a WARC path that fails is not
        // kept for the next resume. A finished crawl leaves the file alone.
        let warc = match (&config.warc, status) {
            (Some(path), Start::New | Start::Resume) => {
                crate::warc::check_path(path, &db)?;
                let info = warc_info(&config, &db, status == Start::Resume);
                // Room for every fetch under way (workers and host preparation) plus a
                // backlog; past it fetches wait for the writer.
                let warc = Warc::open(path, &info, 2 * config.concurrency + 16)?;
                fetcher = fetcher.with_warc(warc.sink());
                Some(warc)
            }
            _ => None,
        };
        // A finished crawl is reported, not touched.
        if status != Start::Finished {
            let seed_strings: Vec<String> = all_seeds.iter().map(|u| u.to_string()).collect();
            store.write_crawl(&seed_strings, &config.to_toml())?;
        }
        Ok(Crawler {
            store,
            config,
            seeds: all_seeds,
            scope,
            fetcher,
            start: status,
            hook: self.hook,
            filter: self.filter,
            events: None,
            progress: Progress::new(),
            warc,
        })
    }
}

/// The `warcinfo` fields of a run: what wrote the file, how, and for which crawl.
fn warc_info(
    config: &CrawlConfig,
    db: &std::path::Path,
    resumed: bool,
) -> Vec<(&'static str, String)> {
    vec![
        ("software", format!("trawl/{}", env!("CARGO_PKG_VERSION"))),
        ("format", "WARC File Format 1.1".into()),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
                .into(),
        ),
        ("http-header-user-agent", config.user_agent.clone()),
        (
            "robots",
            if config.ignore_robots {
                "ignore"
            } else {
                "obey"
            }
            .into(),
        ),
        ("isPartOf", db.display().to_string()),
        (
            "description",
            if resumed {
                "a resumed trawl crawl: records of this run follow"
            } else {
                "a trawl crawl: records of this run follow"
            }
            .into(),
        ),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    New,
    Resume,
    Finished,
}

/// A crawl ready to run. See [`CrawlerBuilder`].
pub struct Crawler {
    store: SqliteStore,
    config: CrawlConfig,
    seeds: Vec<Url>,
    scope: Scope,
    fetcher: Fetcher,
    start: Start,
    hook: Option<PageHook>,
    filter: Option<LinkFilter>,
    events: Option<EventSink>,
    progress: Progress,
    warc: Option<Warc>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The frontier drained: every in-scope URL was fetched. The file is marked finished.
    Finished,
    /// Stopped by the shutdown future; run again to resume.
    Interrupted,
    /// The file already held a finished crawl; nothing was fetched.
    AlreadyFinished,
}

/// What [`Crawler::run`] reports.
#[derive(Debug, Clone)]
pub struct Summary {
    /// How the run ended.
    pub outcome: Outcome,
    /// Whether this run continued an earlier one.
    pub resumed: bool,
    /// Counts for this run.
    pub run: RunCounts,
    /// URLs known to the crawl (all runs): fetched, queued and skipped.
    pub known_urls: u64,
    /// URLs still queued.
    pub queued: u64,
    /// Where the visited set was at the end of the run: bytes in memory, URLs moved to
    /// disk past `visited-memory`.
    pub visited: Footprint,
}

/// A live view of a running crawl, for progress displays. Cheap to clone.
#[derive(Clone)]
pub struct Progress {
    pub(crate) stats: Arc<Stats>,
    frontier: Arc<std::sync::OnceLock<Arc<Frontier>>>,
    /// Weak: a progress display outliving the run must not keep the visited set open.
    gate: Arc<std::sync::OnceLock<std::sync::Weak<Gate>>>,
    pub(crate) started: Instant,
}

/// One reading of [`Progress`].
#[derive(Debug, Clone, Default)]
pub struct ProgressSnapshot {
    /// This run's counts.
    pub run: RunCounts,
    /// Frontier counts.
    pub frontier: FrontierCounts,
    /// Where the visited set is: memory and disk.
    pub visited: Footprint,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        Progress {
            stats: Arc::new(Stats::default()),
            frontier: Arc::new(std::sync::OnceLock::new()),
            gate: Arc::new(std::sync::OnceLock::new()),
            started: Instant::now(),
        }
    }

    /// Read the counters now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            run: self.stats.snapshot(self.started.elapsed()),
            frontier: self.frontier.get().map(|f| f.counts()).unwrap_or_default(),
            visited: self
                .gate
                .get()
                .and_then(std::sync::Weak::upgrade)
                .map(|g| g.visited_footprint())
                .unwrap_or_default(),
        }
    }
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

    /// Whether this run continues an unfinished crawl.
    pub fn is_resume(&self) -> bool {
        self.start == Start::Resume
    }

    /// Whether the file holds a finished crawl (so `run` will do nothing).
    pub fn is_finished(&self) -> bool {
        self.start == Start::Finished
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
    /// finished is committed, and running again with the same file resumes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Summary, Error> {
        let Crawler {
            mut store,
            config,
            seeds,
            scope,
            fetcher,
            start,
            hook,
            filter,
            events,
            progress,
            warc,
        } = self;
        if start == Start::Finished {
            return Ok(Summary {
                outcome: Outcome::AlreadyFinished,
                resumed: false,
                run: progress.stats.snapshot(Duration::ZERO),
                known_urls: count(&store, "SELECT count(*) FROM urls")?,
                queued: 0,
                visited: Footprint::default(),
            });
        }
        // The metrics endpoint lives exactly as long as this run.
        let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
        if !config.metrics_addr.is_empty() {
            let addr = crate::metrics::serve(&config.metrics_addr, progress.clone(), async {
                let _ = metrics_stopped.await;
            })
            .await?;
            tracing::info!(%addr, "serving metrics");
        }
        store.mark_running(true)?;

        let wake = Arc::new(Notify::new());
        let pending = Arc::new(Pending::default());
        let policy = HostPolicy {
            per_host: config.per_host,
            interval: config.host_interval(),
            robots_agent: (!config.ignore_robots)
                .then(|| product_token(&config.user_agent).to_ascii_lowercase()),
            prepare_hosts: config.sitemaps,
            max_crawl_delay: config.max_crawl_delay,
        };
        let frontier = Arc::new(Frontier::new(policy, pending.clone(), wake.clone()));
        let _ = progress.frontier.set(frontier.clone());
        let drain = Drain::new(0, wake.clone());
        let limits = Limits {
            max_depth: config.max_depth,
            max_pages: config.max_pages,
            max_redirects: config.max_redirects,
            max_pages_per_host: config.max_pages_per_host,
        };
        let traps = Traps {
            max_url_length: config.max_url_length,
            max_path_segments: config.max_path_segments,
            max_repeated_segments: config.max_repeated_segments,
        };
        let dir = match store.path().parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let visited = Visited::with_budget(config.visited_memory.0, &dir).map_err(|source| {
            Error::VisitedDir {
                dir: dir.display().to_string(),
                source,
            }
        })?;
        let gate = Arc::new(
            Gate::new(
                scope,
                limits,
                traps,
                config.strip_session_ids,
                pending.clone(),
                frontier.clone(),
                drain.clone(),
            )
            .with_filter(filter)
            .with_visited(visited),
        );
        let _ = progress.gate.set(Arc::downgrade(&gate));

        // Rebuild the visited set and the frontier from the store.
        let resumed = store.resume(|url| gate.restore_url(url))?;
        for (id, name) in resumed.hosts {
            gate.restore_host(id, name);
        }
        for (host, until_ms) in resumed.paused {
            let left = Duration::from_millis((until_ms - now_ms()).max(0) as u64);
            frontier.pause(host, Instant::now() + left);
        }
        gate.restore_admitted(resumed.admitted, resumed.admitted_per_host);
        let mut queued_total = 0;
        for (host, n) in resumed.queued_per_host {
            queued_total += n;
            frontier.add_spilled(host, n);
        }
        // Spilled URLs keep their counts without guard objects.
        for _ in 0..queued_total {
            drain.admit().spill();
        }
        tracing::info!(
            known = gate.known(),
            queued = queued_total,
            resumed = start == Start::Resume,
            "crawl starting"
        );

        let (writer_thread, writer) = StoreWriter::spawn_with_barrier(
            store,
            pending.clone(),
            warc.as_ref().map(Warc::barrier),
        );
        for seed in &seeds {
            gate.admit_seed(seed.clone());
        }

        let cancel = CancellationToken::new();
        let (tx, rx) = async_channel::bounded(config.concurrency);
        let robots_fetcher = fetcher.clone();
        let worker = Arc::new(Worker {
            reader: Reader {
                events: events.is_some(),
                bodies: events.as_ref().is_some_and(|e| e.bodies),
                ..Reader::new(fetcher, &config)
            },
            gate: gate.clone(),
            frontier: frontier.clone(),
            writer: writer.clone(),
            stats: progress.stats.clone(),
            cancel: cancel.clone(),
            hook,
            events,
        });
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..config.concurrency {
            workers.spawn(worker.clone().run(rx.clone()));
        }
        drop(rx);
        drop(worker);
        let dispatcher = Dispatcher {
            frontier: frontier.clone(),
            drain: drain.clone(),
            writer: writer.clone(),
            wake: wake.clone(),
            cancel: cancel.clone(),
            preparer: Preparer {
                fetcher: robots_fetcher,
                frontier: frontier.clone(),
                gate: gate.clone(),
                writer: writer.clone(),
                robots: !config.ignore_robots,
                sitemaps: config.sitemaps,
            },
            pending: pending.clone(),
        };
        let mut dispatch = tokio::spawn(dispatcher.run(tx));

        tokio::pin!(shutdown);
        let mut interrupted = false;
        let dispatched = tokio::select! {
            r = &mut dispatch => r,
            _ = &mut shutdown => {
                interrupted = true;
                tracing::info!("stop requested: finishing fetches under way");
                cancel.cancel();
                dispatch.await
            }
        };
        let dispatch_error = match dispatched {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(Error::Store(e)),
            Err(join) => Some(Error::Internal(format!("dispatcher failed: {join}"))),
        };
        if dispatch_error.is_some() {
            cancel.cancel();
        }
        // The dispatcher dropped the channel's sender: workers finish what they hold.
        crate::worker::join_pool(
            &mut workers,
            &cancel,
            config.grace_period,
            "they stay queued",
        )
        .await;
        drop(writer);
        let visited = gate.visited_footprint();
        if visited.runs > 0 {
            tracing::info!(
                memory_bytes = visited.memory,
                on_disk = visited.on_disk,
                runs = visited.runs,
                "visited set past visited-memory: part of it was on disk"
            );
        }
        drop(gate);
        let store = tokio::task::spawn_blocking(move || writer_thread.join())
            .await
            .map_err(|e| Error::Internal(format!("store writer panicked: {e}")))??;
        // Records of fetches that committed nothing (robots.txt, an abandoned page) are
        // written too before the run reports.
        if let Some(w) = warc {
            if let Err(e) = tokio::task::spawn_blocking(move || w.finish())
                .await
                .map_err(|e| Error::Internal(format!("WARC writer panicked: {e}")))?
            {
                let _ = store.mark_running(false);
                return Err(e.into());
            }
        }
        if let Some(e) = dispatch_error {
            let _ = store.mark_running(false);
            return Err(e);
        }
        drop(metrics_stop);
        let finished = !cancel.is_cancelled() && drain.count() == 0;
        if finished {
            store
                .conn()
                .execute("UPDATE crawl SET finished_at = ?1 WHERE id = 1", [now_ms()])
                .map_err(|e| {
                    Error::Store(crate::store::StoreError::Sqlite {
                        path: store.path().display().to_string(),
                        source: e,
                    })
                })?;
        }
        store.mark_running(false)?;
        let queued = count(&store, "SELECT count(*) FROM urls WHERE state = 0")?;
        let known_urls = count(&store, "SELECT count(*) FROM urls")?;
        Ok(Summary {
            outcome: if finished {
                Outcome::Finished
            } else {
                let _ = interrupted;
                Outcome::Interrupted
            },
            resumed: start == Start::Resume,
            run: progress.stats.snapshot(progress.started.elapsed()),
            known_urls,
            queued,
            visited,
        })
    }
}

fn count(store: &SqliteStore, sql: &str) -> Result<u64, Error> {
    store
        .conn()
        .query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .map_err(|e| {
            Error::Store(crate::store::StoreError::Sqlite {
                path: store.path().display().to_string(),
                source: e,
            })
        })
}
