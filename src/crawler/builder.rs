//! The builder: where a crawl is stored, what it crawls, and the options that differ from
//! the defaults (or, when it resumes, from the configuration stored with it).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::admit::LinkFilter;
use crate::config::{ByteSize, ConfigPatch, RateLimit};
use crate::engine::worker::PageHook;
use crate::events::Page;
use crate::url_norm::ScopeMode;

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
    pub(super) db: Option<PathBuf>,
    pub(super) seeds: Vec<String>,
    pub(super) config_files: Vec<PathBuf>,
    pub(super) options: ConfigPatch,
    pub(super) recrawl: bool,
    pub(super) hook: Option<PageHook>,
    pub(super) filter: Option<LinkFilter>,
    pub(super) store: Option<String>,
    pub(super) crawl_id: Option<String>,
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
    /// [`CrawlerBuilder::build_distributed`]: the crawl runs the same, every process of it
    /// given the same `store` and `crawl_id`.
    pub fn store(mut self, url: impl Into<String>) -> Self {
        self.store = Some(url.into());
        self
    }

    /// The name of a Redis crawl: every process of the crawl uses the same.
    pub fn crawl_id(mut self, id: impl Into<String>) -> Self {
        self.crawl_id = Some(id.into());
        self
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

    /// Call `hook` for every fetched URL, with what came of it (the same [`Page`] that
    /// page events carry, without the body). A panic in the hook is caught and recorded
    /// as the page's error; it never stops the crawl.
    ///
    /// ```no_run
    /// let builder = trawl::Crawler::builder()
    ///     .on_page(|page| println!("{} {:?}", page.url, page.result.status));
    /// ```
    pub fn on_page(mut self, hook: impl Fn(&Page) + Send + Sync + 'static) -> Self {
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
}
