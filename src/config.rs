//! The crawl's options: one plain struct, its defaults, validation and TOML.
//!
//! Every option has one name, used as the key in `config/default.toml`, as the CLI flag
//! (`--per-host`) and as the builder method (`per_host`). This module never sees clap: the
//! binary and the library builder both produce a [`ConfigPatch`] of the options they were
//! given, and [`CrawlConfig::layered`] lays patches over the defaults (or over the
//! configuration a crawl was started with, when it resumes).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::proxy::Rotation;
use crate::url_norm::ScopeMode;

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

/// A byte count that reads as `10485760`, `"10MiB"`, `"512 KB"` or `"1g"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let split = s
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let num: f64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a size; write e.g. 10MiB or 1048576"))?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size unit {other:?}; use B, KiB, MiB or GiB"
                ))
            }
        };
        Ok(ByteSize((num * mult as f64) as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
            write!(f, "{}MiB", b >> 20)
        } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
            write!(f, "{}KiB", b >> 10)
        } else {
            write!(f, "{b}")
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
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

/// An optional path that is `""` when absent, so the key always exists in TOML (which has
/// no null) and a flag or file can turn it off again.
mod optional_path {
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(
            &v.as_deref()
                .map(|p| p.to_string_lossy())
                .unwrap_or_default(),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        let s = String::deserialize(d)?;
        Ok((!s.is_empty()).then(|| PathBuf::from(s)))
    }
}

/// A per-host request budget: `requests` per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests allowed per window; 0 means no limit.
    pub requests: u32,
    /// The window.
    pub window: Duration,
}

impl RateLimit {
    /// No limit.
    pub const NONE: RateLimit = RateLimit {
        requests: 0,
        window: Duration::from_secs(1),
    };

    /// The even spacing between requests this limit allows (zero when unlimited).
    pub fn interval(&self) -> Duration {
        if self.requests == 0 {
            Duration::ZERO
        } else {
            self.window / self.requests
        }
    }
}

impl FromStr for RateLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("{s:?} is not a rate; write requests/window, e.g. \"120/1m\" or \"5/1s\"");
        let (n, w) = s.split_once('/').ok_or_else(bad)?;
        let requests = n.trim().parse().map_err(|_| bad())?;
        let window = humantime::parse_duration(w.trim()).map_err(|_| bad())?;
        if window.is_zero() {
            return Err(bad());
        }
        Ok(RateLimit { requests, window })
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            self.requests,
            humantime::format_duration(self.window)
        )
    }
}

impl Serialize for RateLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The options of a crawl as given, in the order they apply: each config file (named by its
/// path in errors), then the options set in code or by the CLI's flags ("options"). The
/// builder and `trawl config --show` both lay them over a base with this, so a
/// configuration is settled one way everywhere.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    patches: Vec<(String, ConfigPatch)>,
}

impl Layers {
    /// Read the config `files`, then `options` over them.
    pub fn read(files: &[PathBuf], options: ConfigPatch) -> Result<Layers, ConfigError> {
        let mut patches = Vec::with_capacity(files.len() + 1);
        for path in files {
            patches.push((path.display().to_string(), CrawlConfig::read_patch(path)?));
        }
        patches.push(("options".to_string(), options));
        Ok(Layers { patches })
    }

    /// The configuration these layers give over the defaults: what was given, checked on
    /// its own (validation is per value, so what passes here passes over any base).
    pub fn given(&self) -> Result<CrawlConfig, ConfigError> {
        self.over(None)
    }

    /// The configuration these layers give over `base` (a stored configuration, or the
    /// defaults when `None`).
    pub fn over(&self, base: Option<&CrawlConfig>) -> Result<CrawlConfig, ConfigError> {
        let refs: Vec<(&str, &ConfigPatch)> =
            self.patches.iter().map(|(o, p)| (o.as_str(), p)).collect();
        CrawlConfig::layered(base, &refs)
    }
}

/// Refuse a key no option has, naming the closest known one when there is one.
fn check_keys(origin: &str, patch: &ConfigPatch) -> Result<(), ConfigError> {
    let known = CrawlConfig::keys();
    for key in patch.keys() {
        if known.contains(key) {
            continue;
        }
        let message = match did_you_mean(key, &known) {
            Some(k) => format!("unknown key `{key}`; did you mean `{k}`?"),
            None => format!("unknown key `{key}`"),
        };
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            message,
        });
    }
    Ok(())
}

/// The known key closest to `key`, when it is close enough to be a typo (`_` for `-`,
/// a letter missing, doubled or swapped) rather than a different word.
fn did_you_mean<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    let key = key.to_ascii_lowercase().replace('_', "-");
    known
        .iter()
        .map(|k| (strsim::normalized_damerau_levenshtein(&key, k), k))
        .filter(|(score, _)| *score >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.as_str())
}

/// Split `"Name: value"` into a valid header name and value.
pub fn parse_header(
    h: &str,
) -> Option<(reqwest::header::HeaderName, reqwest::header::HeaderValue)> {
    let (name, value) = h.split_once(':')?;
    let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
    let value = reqwest::header::HeaderValue::from_str(value.trim()).ok()?;
    Some((name, value))
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

    /// Check every value is in range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn range<T: PartialOrd + fmt::Display>(
            key: &'static str,
            v: T,
            lo: T,
            hi: T,
            expected: &'static str,
        ) -> Result<(), ConfigError> {
            if v < lo || v > hi {
                return Err(ConfigError::OutOfRange {
                    key,
                    value: v.to_string(),
                    expected,
                });
            }
            Ok(())
        }
        range(
            "concurrency",
            self.concurrency,
            1,
            10_000,
            "from 1 to 10000",
        )?;
        range("per-host", self.per_host, 1, 10_000, "from 1 to 10000")?;
        range(
            "max-body",
            self.max_body,
            ByteSize(1024),
            ByteSize(4 << 30),
            "from 1KiB to 4GiB",
        )?;
        range("max-redirects", self.max_redirects, 0, 100, "from 0 to 100")?;
        if self.visited_memory.0 != 0 {
            range(
                "visited-memory",
                self.visited_memory,
                ByteSize(64 << 10),
                ByteSize(1 << 40),
                "0 (no limit) or from 64KiB to 1TiB",
            )?;
        }
        for (key, d) in [
            ("connect-timeout", self.connect_timeout),
            ("read-timeout", self.read_timeout),
            ("timeout", self.timeout),
            ("lease", self.lease),
        ] {
            if d.is_zero() {
                return Err(ConfigError::OutOfRange {
                    key,
                    value: "0s".into(),
                    expected: "more than 0s, e.g. \"10s\"",
                });
            }
        }
        for p in &self.proxies {
            if reqwest::Proxy::all(p.as_str()).is_err() || url::Url::parse(p).is_err() {
                return Err(ConfigError::OutOfRange {
                    key: "proxies",
                    value: format!("{p:?}"),
                    expected:
                        "proxy URLs such as \"http://127.0.0.1:3128\" or \"socks5://10.0.0.2:1080\"",
                });
            }
        }
        if !self.metrics_addr.is_empty()
            && self.metrics_addr.parse::<std::net::SocketAddr>().is_err()
        {
            return Err(ConfigError::OutOfRange {
                key: "metrics-addr",
                value: format!("{:?}", self.metrics_addr),
                expected: "an address and port such as \"127.0.0.1:9898\", or \"\" for none",
            });
        }
        for h in &self.headers {
            if parse_header(h).is_none() {
                return Err(ConfigError::OutOfRange {
                    key: "headers",
                    value: format!("{h:?}"),
                    expected: "\"Name: value\" with a valid header name and value",
                });
            }
        }
        if self.user_agent.trim().is_empty()
            || reqwest::header::HeaderValue::from_str(&self.user_agent).is_err()
        {
            return Err(ConfigError::OutOfRange {
                key: "user-agent",
                value: format!("{:?}", self.user_agent),
                expected: "a non-empty header value of visible ASCII",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(text: &str) -> ConfigPatch {
        text.parse().unwrap()
    }

    #[test]
    fn default_toml_documents_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/default.toml");
        let p = CrawlConfig::read_patch(&path).unwrap();
        let c = CrawlConfig::layered(None, &[("default.toml", &p)]).unwrap();
        assert_eq!(c, CrawlConfig::default());
        // Every option is documented there.
        let all = CrawlConfig::default().to_table();
        for key in all.keys() {
            if !["include", "exclude", "headers", "proxies", "ca-certs"].contains(&key.as_str()) {
                assert!(p.contains_key(key), "config/default.toml lacks {key}");
            }
        }
    }

    #[test]
    fn later_patches_win() {
        let file = patch("concurrency = 4\nper-host = 2");
        let flags = patch("concurrency = 9");
        let c = CrawlConfig::layered(None, &[("file", &file), ("flags", &flags)]).unwrap();
        assert_eq!((c.concurrency, c.per_host), (9, 2));
    }

    #[test]
    fn stored_config_is_the_base_on_resume() {
        let stored = CrawlConfig {
            concurrency: 3,
            max_pages: 50,
            warc: Some(PathBuf::from("/tmp/crawl.warc.gz")),
            ..CrawlConfig::default()
        };
        let text = stored.to_toml();
        let back = CrawlConfig::from_toml(&text).unwrap();
        assert_eq!(back, stored);
        let c = CrawlConfig::layered(Some(&back), &[("flags", &patch("max-pages = 70"))]).unwrap();
        assert_eq!((c.concurrency, c.max_pages), (3, 70));
        assert_eq!(c.warc, stored.warc);
        // An empty path turns WARC output off again.
        let c = CrawlConfig::layered(Some(&back), &[("flags", &patch("warc = \"\""))]).unwrap();
        assert_eq!(c.warc, None);
    }

    #[test]
    fn unknown_key_and_bad_values_are_errors() {
        let e = CrawlConfig::layered(None, &[("x.toml", &patch("concurency = 4"))]).unwrap_err();
        assert!(e.to_string().contains("concurency"), "{e}");
        assert!(e.to_string().starts_with("x.toml"), "{e}");
        let e = CrawlConfig::layered(None, &[("f", &patch("concurrency = 0"))]).unwrap_err();
        assert!(matches!(
            e,
            ConfigError::OutOfRange {
                key: "concurrency",
                ..
            }
        ));
        let e = CrawlConfig::layered(None, &[("f", &patch("timeout = \"soon\""))]).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { .. }), "{e}");
        let e =
            CrawlConfig::layered(None, &[("f", &patch("headers = [\"no colon\"]"))]).unwrap_err();
        assert!(
            matches!(e, ConfigError::OutOfRange { key: "headers", .. }),
            "{e}"
        );
        let e = CrawlConfig::layered(None, &[("f", &patch("scope = \"planet\""))]).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { .. }), "{e}");
    }

    #[test]
    fn unknown_keys_get_a_suggestion() {
        let msg = |text: &str| {
            CrawlConfig::layered(None, &[("f.toml", &patch(text))])
                .unwrap_err()
                .to_string()
        };
        let m = msg("concurency = 4");
        assert!(
            m.contains("unknown key `concurency`; did you mean `concurrency`?"),
            "{m}"
        );
        assert!(m.starts_with("f.toml: "), "{m}");
        assert!(msg("per_host = 2").contains("did you mean `per-host`?"));
        assert!(msg("max-page = 2").contains("did you mean `max-pages`?"));
        assert!(msg("user-agnet = \"x\"").contains("did you mean `user-agent`?"));
        let m = msg("colour = true");
        assert!(
            m.contains("unknown key `colour`") && !m.contains("did you mean"),
            "{m}"
        );
        // The known keys are exactly the struct's fields.
        let keys = CrawlConfig::keys();
        assert!(keys.contains(&"concurrency".to_string()));
        assert!(keys.contains(&"proxy-cooldown".to_string()));
    }

    #[test]
    fn default_serialises_as_crawls_store_it() {
        // Crawls store this text and read it back on resume: a change in key order or
        // value format breaks stored crawls, so it is pinned here byte for byte.
        let expected = r#"concurrency = 16
per-host = 8
max-body = "10MiB"
connect-timeout = "10s"
read-timeout = "30s"
timeout = "1m"
max-redirects = 10
scope = "host"
include = []
exclude = []
max-depth = 0
max-pages = 0
user-agent = "trawl/VERSION (+https://crates.io/crates/trawl)"
grace-period = "10s"
ignore-robots = false
delay = "0s"
rate-limit = "0/1s"
max-crawl-delay = "30s"
max-retry-after = "10m"
max-attempts = 3
retry-backoff = "1s"
max-url-length = 2048
max-path-segments = 32
max-repeated-segments = 3
max-pages-per-host = 0
strip-session-ids = true
headers = []
cookies = true
sitemaps = true
proxies = []
proxy-rotation = "per-request"
proxy-max-failures = 3
proxy-cooldown = "5m"
metrics-addr = ""
ca-certs = []
lease = "30s"
warc = ""
visited-memory = "4MiB"
"#
        .replace("VERSION", env!("CARGO_PKG_VERSION"));
        assert_eq!(CrawlConfig::default().to_toml(), expected);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!("10MiB".parse::<ByteSize>().unwrap(), ByteSize(10 << 20));
        assert_eq!("512 kb".parse::<ByteSize>().unwrap(), ByteSize(512 << 10));
        assert_eq!("2048".parse::<ByteSize>().unwrap(), ByteSize(2048));
        assert!("ten".parse::<ByteSize>().is_err());
        assert!("5 parsecs".parse::<ByteSize>().is_err());
        let r: RateLimit = "120/1m".parse().unwrap();
        assert_eq!(r.interval(), Duration::from_millis(500));
        assert_eq!(r.to_string().parse::<RateLimit>().unwrap(), r);
        assert!("5".parse::<RateLimit>().is_err());
        assert!("5/0s".parse::<RateLimit>().is_err());
        assert_eq!(RateLimit::NONE.interval(), Duration::ZERO);
        let c = CrawlConfig::layered(None, &[("f", &patch("max-body = 4096"))]).unwrap();
        assert_eq!(c.max_body, ByteSize(4096));
    }
}
