//! The builder: where a crawl is stored, what it crawls, and the options that differ from
//! the defaults (or, when it resumes, from the configuration stored with it).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::admit::LinkFilter;
use crate::config::{ConfigPatch, RateLimit};
use crate::engine::worker::PageHook;
use crate::events::Page;
use crate::proxy::Rotation;
use crate::url_norm::ScopeMode;

/// Builds a [`Crawler`](super::Crawler): where to store the crawl, what to crawl, and any options that
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
    pub(super) recheck: bool,
    pub(super) refresh: bool,
    pub(super) hook: Option<PageHook>,
    pub(super) filter: Option<LinkFilter>,
    pub(super) store: Option<String>,
    pub(super) crawl_id: Option<String>,
}

impl CrawlerBuilder {
    /// The SQLite file holding the crawl (created if missing). With [`store`](Self::store),
    /// the file this process collects the Redis crawl's results into: the crawl's one
    /// results file (the first process given one names it; see `trawl crawl --help`).
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
    /// results in the file are discarded, but the link checks younger than
    /// `check-cache-age`). A new Redis crawl given that file (`db`) takes it this way.
    pub fn recrawl(mut self, yes: bool) -> Self {
        self.recrawl = yes;
        self
    }

    /// When the file holds a finished crawl, fetch again every URL that failed or answered
    /// 4xx/5xx (`trawl crawl --recheck failed`, after an outage), and nothing else that is
    /// known; what they link to now is crawled as usual. A new Redis crawl given that file
    /// (`db`) takes it this way.
    pub fn recheck_failed(mut self, yes: bool) -> Self {
        self.recheck = yes;
        self
    }

    /// When the file holds a finished crawl, start its next generation (`trawl crawl
    /// --refresh`): the finished one is kept in the file, and every page it fetched is
    /// asked again with its `ETag` / `Last-Modified`; a 304 keeps the page's record and
    /// links without reading it again. A new Redis crawl given that file (`db`) takes it
    /// this way.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), trawl::Error> {
    /// let crawl = trawl::Crawler::builder().db("site.db").refresh(true).build()?;
    /// crawl.run(std::future::pending()).await?;
    /// # Ok(()) }
    /// ```
    pub fn refresh(mut self, yes: bool) -> Self {
        self.refresh = yes;
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

    fn set(mut self, key: &str, value: impl OptionValue) -> Self {
        self.options.insert(key.to_string(), value.into_value());
        self
    }
}

/// Turns the entries of [`crate::crawl_options!`] into setters named as the options, each
/// with its option's doc.
macro_rules! setters {
    ($($(#[doc = $doc:literal])* $(#[serde $serde:tt])*
       $name:ident: $ty:ty = $default:expr, $(builder: $arg:ty,)? cli: $cli:expr;)*) => {
        impl CrawlerBuilder {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!(
                    "Sets [`CrawlConfig::", stringify!($name), "`](crate::CrawlConfig::",
                    stringify!($name), ")."
                )]
                pub fn $name(self, value: setter_arg!($ty $(, $arg)?)) -> Self {
                    self.set(crate::option_key!($name), value)
                }
            )*
        }
    };
}

/// A setter takes the option's type unless its entry names another (`builder: u64`).
macro_rules! setter_arg {
    ($ty:ty, $arg:ty) => {
        $arg
    };
    ($ty:ty) => {
        $ty
    };
}

crate::crawl_options!(setters);

/// A setter's argument as the TOML value of its option, written as a config file would
/// write it.
trait OptionValue {
    fn into_value(self) -> toml::Value;
}

macro_rules! integer_values {
    ($($t:ty),*) => {$(
        impl OptionValue for $t {
            fn into_value(self) -> toml::Value {
                // TOML integers are i64; a larger count is out of range or as good as
                // unlimited.
                toml::Value::Integer(i64::try_from(self).unwrap_or(i64::MAX))
            }
        }
    )*};
}

integer_values!(u32, u64, usize);

impl OptionValue for bool {
    fn into_value(self) -> toml::Value {
        toml::Value::Boolean(self)
    }
}

impl OptionValue for String {
    fn into_value(self) -> toml::Value {
        toml::Value::String(self)
    }
}

impl OptionValue for PathBuf {
    fn into_value(self) -> toml::Value {
        toml::Value::String(self.to_string_lossy().into_owned())
    }
}

impl<T: OptionValue> OptionValue for Vec<T> {
    fn into_value(self) -> toml::Value {
        toml::Value::Array(self.into_iter().map(T::into_value).collect())
    }
}

impl OptionValue for Duration {
    fn into_value(self) -> toml::Value {
        toml::Value::String(humantime::format_duration(self).to_string())
    }
}

impl OptionValue for RateLimit {
    fn into_value(self) -> toml::Value {
        toml::Value::String(self.to_string())
    }
}

impl OptionValue for ScopeMode {
    fn into_value(self) -> toml::Value {
        toml::Value::String(self.as_str().into())
    }
}

impl OptionValue for Rotation {
    fn into_value(self) -> toml::Value {
        toml::Value::String(self.as_str().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ByteSize, CrawlConfig, Layers};

    /// A config field's value as its setter takes it.
    trait ToArg<A> {
        fn to_arg(self) -> A;
    }

    impl<T> ToArg<T> for T {
        fn to_arg(self) -> T {
            self
        }
    }

    impl ToArg<u64> for ByteSize {
        fn to_arg(self) -> u64 {
            self.0
        }
    }

    impl ToArg<PathBuf> for Option<PathBuf> {
        fn to_arg(self) -> PathBuf {
            self.unwrap_or_default()
        }
    }

    macro_rules! set_all {
        ($($(#[doc = $doc:literal])* $(#[serde $serde:tt])*
           $name:ident: $ty:ty = $default:expr, $(builder: $arg:ty,)? cli: $cli:expr;)*) => {
            /// Every setter called with the value `config` has.
            fn set_all(builder: CrawlerBuilder, config: CrawlConfig) -> CrawlerBuilder {
                builder $(.$name(config.$name.to_arg()))*
            }
        };
    }

    crate::crawl_options!(set_all);

    #[test]
    fn every_option_round_trips_through_its_setter() {
        let text = include_str!("../config/every_option.toml");
        let sample = CrawlConfig::from_toml(text).unwrap();
        let builder = set_all(CrawlerBuilder::default(), sample.clone());
        assert_eq!(builder.options.len(), CrawlConfig::keys().len());
        let layers = Layers::read(&[], builder.options).unwrap();
        assert_eq!(layers.given().unwrap(), sample);
    }

    #[test]
    fn setters_take_plain_values() {
        let b = CrawlerBuilder::default()
            .max_body(4096)
            .visited_memory(0)
            .max_pages(u64::MAX)
            .warc(PathBuf::from("site.warc.gz"))
            .timeout(Duration::from_millis(1500));
        let c = Layers::read(&[], b.options).unwrap().given().unwrap();
        assert_eq!(
            (c.max_body, c.visited_memory),
            (ByteSize(4096), ByteSize(0))
        );
        assert_eq!(c.max_pages, i64::MAX as u64);
        assert_eq!(c.warc, Some(PathBuf::from("site.warc.gz")));
        assert_eq!(c.timeout, Duration::from_millis(1500));
    }
}
