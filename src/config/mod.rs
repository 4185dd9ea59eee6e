//! The crawl's options: one plain struct, its defaults, validation and TOML.
//!
//! Every option has one name, used as the key in `config/default.toml`, as the CLI flag
//! (`--per-host`) and as the builder method (`per_host`). This module never sees clap: the
//! binary and the library builder both produce a [`ConfigPatch`] of the options they were
//! given, and [`CrawlConfig::layered`] lays patches over the defaults (or over the
//! configuration a crawl was started with, when it resumes).

//!
//! - `values`: the value types of options that are not plain Rust types ([`ByteSize`],
//!   [`RateLimit`]) and how an optional path is written.
//! - `layers`: [`Layers`], the files and flags a crawl was given, and unknown keys.
//! - `validate`: the range of every value.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::proxy::Rotation;
use crate::url_norm::ScopeMode;

mod layers;
#[cfg(test)]
mod tests;
mod validate;
mod values;

use layers::check_keys;
pub use layers::Layers;
pub use validate::parse_header;
pub use values::{ByteSize, RateLimit};

use values::optional_path;

/// Options given explicitly, as TOML values keyed by option name. Later patches win.
pub type ConfigPatch = toml::Table;

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}; check the path given to --config")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The config file is not valid TOML.
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A key is unknown or a value has the wrong type.
    #[error("{origin}: {message}; see config/default.toml for every key and its type")]
    Invalid {
        /// Where the bad value came from.
        origin: String,
        /// What is wrong with it.
        message: String,
    },
    /// A value is out of its allowed range.
    #[error("{key} = {value} is out of range: {expected}")]
    OutOfRange {
        /// The option.
        key: &'static str,
        /// The value given.
        value: String,
        /// The allowed range.
        expected: &'static str,
    },
}

/// Everything that shapes a crawl. Field names are the option names (kebab-case in TOML
/// and on the command line). Defaults match `config/default.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct CrawlConfig {
    /// Worker tasks fetching at once.
    pub concurrency: usize,
    /// Requests in flight to one host at once.
    pub per_host: usize,
    /// Bytes of (decompressed) body read per response; longer bodies are cut and the page
    /// recorded as truncated.
    pub max_body: ByteSize,
    /// Time to establish a connection.
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a response.
    #[serde(with = "humantime_serde")]
    pub read_timeout: Duration,
    /// Longest time for one whole request, body included.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Redirect hops followed from one URL before giving up.
    pub max_redirects: u32,
    /// Which URLs are in scope: `host` (the seeds' hosts), `domain` (their registrable
    /// domains), `prefix` (under the seeds' directories).
    pub scope: ScopeMode,
    /// Regexes over the canonical URL: when any is given, only matching URLs are fetched.
    pub include: Vec<String>,
    /// Regexes over the canonical URL: matching URLs are never fetched.
    pub exclude: Vec<String>,
    /// Deepest click depth fetched (seeds are depth 0); 0 means no limit.
    pub max_depth: u32,
    /// Most URLs fetched in the whole crawl; 0 means no limit.
    pub max_pages: u64,
    /// The User-Agent header.
    pub user_agent: String,
    /// After a stop is asked for, how long in-flight fetches may take to finish.
    #[serde(with = "humantime_serde")]
    pub grace_period: Duration,
    /// Fetch URLs that robots.txt disallows, and ignore its Crawl-delay.
    pub ignore_robots: bool,
    /// Least time between the starts of two requests to one host.
    #[serde(with = "humantime_serde")]
    pub delay: Duration,
    /// Most requests per host in a window, as `"N/DURATION"` (e.g. `"120/1m"`); `"0/1s"`
    /// means no limit. Enforced as an even spacing of DURATION/N between requests.
    pub rate_limit: RateLimit,
    /// The longest robots.txt `Crawl-delay` honoured; longer ones are cut to this.
    #[serde(with = "humantime_serde")]
    pub max_crawl_delay: Duration,
    /// The longest pause honoured from a `Retry-After` header on 429 or 503.
    #[serde(with = "humantime_serde")]
    pub max_retry_after: Duration,
    /// Attempts per URL for transient faults (timeouts, resets, 408, 429, 5xx gateways),
    /// the first included.
    pub max_attempts: u32,
    /// Base of the exponential backoff between attempts (full jitter: a random wait up to
    /// base * 2^attempt, at most 10 minutes).
    #[serde(with = "humantime_serde")]
    pub retry_backoff: Duration,
    /// Longest URL admitted, in bytes; 0 means no limit.
    pub max_url_length: usize,
    /// Most path segments in an admitted URL; 0 means no limit.
    pub max_path_segments: usize,
    /// Most times one path segment may occur in an admitted URL's path (`/a/b/a/b/a`
    /// has `a` three times); 0 means no limit.
    pub max_repeated_segments: usize,
    /// Most URLs fetched from one host; 0 means no limit.
    pub max_pages_per_host: u64,
    /// Remove session IDs (`;jsessionid=`, `PHPSESSID`, `sid`, ...) from canonical URLs.
    pub strip_session_ids: bool,
    /// Extra request headers, each `"Name: value"`.
    pub headers: Vec<String>,
    /// Keep cookies the sites set, for the whole crawl (not stored in the file).
    pub cookies: bool,
    /// Read each host's sitemaps (listed in robots.txt, else `/sitemap.xml`) and crawl
    /// what they list.
    pub sitemaps: bool,
    /// Proxies requests go through (`http://`, `https://`, `socks5://` URLs); none means
    /// direct connections.
    pub proxies: Vec<String>,
    /// `per-request` (each request takes the next proxy) or `per-host` (a host keeps one).
    pub proxy_rotation: Rotation,
    /// Failed connections in a row that take a proxy out of rotation.
    pub proxy_max_failures: u32,
    /// How long a failing proxy stays out of rotation before it is tried again.
    #[serde(with = "humantime_serde")]
    pub proxy_cooldown: Duration,
    /// Serve Prometheus metrics on this address (e.g. `127.0.0.1:9898`) while crawling;
    /// empty for none.
    pub metrics_addr: String,
    /// PEM files of extra certificate authorities to trust (an internal CA), besides the
    /// built-in web roots.
    pub ca_certs: Vec<std::path::PathBuf>,
    /// Redis crawls: how long a process's claim on a URL lasts unless renewed (it is
    /// renewed while the fetch runs). A killed process's URLs return to the crawl after
    /// this long.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// Write every HTTP request and response to this WARC file (`.warc.gz`, one gzip
    /// member per record), appending when it exists; `None` (`""` in TOML) for none.
    #[serde(with = "optional_path")]
    pub warc: Option<PathBuf>,
    /// Memory for the visited set (every URL known, about 36 bytes each). Past it, the
    /// least recently seen URLs move to files next to the database, so memory stays flat
    /// however many URLs a crawl finds; 0 keeps every URL in memory.
    pub visited_memory: ByteSize,
}

/// The default User-Agent: names trawl and its version.
pub fn default_user_agent() -> String {
    format!(
        "trawl/{} (+https://crates.io/crates/trawl)",
        env!("CARGO_PKG_VERSION")
    )
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            concurrency: 16,
            per_host: 8,
            max_body: ByteSize(10 << 20),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(60),
            max_redirects: 10,
            scope: ScopeMode::Host,
            include: Vec::new(),
            exclude: Vec::new(),
            max_depth: 0,
            max_pages: 0,
            user_agent: default_user_agent(),
            grace_period: Duration::from_secs(10),
            ignore_robots: false,
            delay: Duration::ZERO,
            rate_limit: RateLimit::NONE,
            max_crawl_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(600),
            max_attempts: 3,
            retry_backoff: Duration::from_secs(1),
            max_url_length: 2048,
            max_path_segments: 32,
            max_repeated_segments: 3,
            max_pages_per_host: 0,
            strip_session_ids: true,
            headers: Vec::new(),
            cookies: true,
            sitemaps: true,
            proxies: Vec::new(),
            proxy_rotation: Rotation::PerRequest,
            proxy_max_failures: 3,
            proxy_cooldown: Duration::from_secs(300),
            metrics_addr: String::new(),
            ca_certs: Vec::new(),
            lease: Duration::from_secs(30),
            warc: None,
            visited_memory: ByteSize(4 << 20),
        }
    }
}

impl CrawlConfig {
    /// Lay `patches` in order over `base` (a stored configuration, or the defaults when
    /// `None`), then validate. `origins` names each patch for error messages.
    pub fn layered(
        base: Option<&CrawlConfig>,
        patches: &[(&str, &ConfigPatch)],
    ) -> Result<CrawlConfig, ConfigError> {
        let mut table = match base {
            Some(c) => c.to_table(),
            None => ConfigPatch::new(),
        };
        for (origin, patch) in patches {
            // Check each patch alone first so an error names where the bad key came from.
            check_keys(origin, patch)?;
            toml::Value::Table((*patch).clone())
                .try_into::<CrawlConfig>()
                .map_err(|e| ConfigError::Invalid {
                    origin: origin.to_string(),
                    message: e.message().to_string(),
                })?;
            for (k, v) in patch.iter() {
                table.insert(k.clone(), v.clone());
            }
        }
        let config: CrawlConfig =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Invalid {
                    origin: "configuration".into(),
                    message: e.message().to_string(),
                })?;
        config.validate()?;
        Ok(config)
    }

    /// Read a TOML file as a patch (keys are checked when it is layered).
    pub fn read_patch(path: &Path) -> Result<ConfigPatch, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        text.parse::<ConfigPatch>()
            .map_err(|e| ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string().trim().replace('\n', " "),
            })
    }

    /// This configuration as TOML text (what `trawl` stores with a crawl).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("CrawlConfig always serialises")
    }

    /// Parse what [`CrawlConfig::to_toml`] wrote.
    pub fn from_toml(text: &str) -> Result<CrawlConfig, ConfigError> {
        let config: CrawlConfig = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            origin: "stored configuration".into(),
            message: e.message().to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Every option name, as written in TOML and on the command line (after `--`).
    /// Derived from the defaults, so it cannot drift from the struct.
    pub fn keys() -> Vec<String> {
        CrawlConfig::default().to_table().keys().cloned().collect()
    }

    fn to_table(&self) -> ConfigPatch {
        match toml::Value::try_from(self).expect("CrawlConfig always serialises") {
            toml::Value::Table(t) => t,
            _ => unreachable!("a struct serialises to a table"),
        }
    }

    /// The least spacing between requests to one host from `delay` and `rate-limit`
    /// (robots.txt may ask for more).
    pub fn host_interval(&self) -> Duration {
        self.delay.max(self.rate_limit.interval())
    }
}
