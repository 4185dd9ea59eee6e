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
    let e = CrawlConfig::layered(None, &[("f", &patch("headers = [\"no colon\"]"))]).unwrap_err();
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
max-query-variants = 1000
strip-session-ids = true
check-external = false
check-fragments = true
check-cache-age = "1day"
headers = []
cookies = true
sitemaps = true
proxies = []
proxy-rotation = "per-request"
proxy-max-failures = 3
proxy-cooldown = "5m"
metrics-addr = ""
ui = ""
ui-token = ""
ca-certs = []
lease = "30s"
warc = ""
visited-memory = "4MiB"
seeds-file = ""
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

#[test]
fn every_option_toml_sets_every_option_to_another_value() {
    // The builder's and the CLI's round-trip tests read this file; an option it left at
    // its default would pass them without going through its setter or flag.
    let sample: ConfigPatch = include_str!("every_option.toml").parse().unwrap();
    let given = CrawlConfig::layered(None, &[("every_option.toml", &sample)])
        .unwrap()
        .to_table();
    for (key, default) in CrawlConfig::default().to_table() {
        assert!(sample.contains_key(&key), "every_option.toml lacks {key}");
        assert_ne!(
            given[&key], default,
            "every_option.toml sets {key} to its default"
        );
    }
}

macro_rules! option_keys {
    ($($(#[doc = $doc:literal])* $(#[serde $serde:tt])*
       $name:ident: $ty:ty = $default:expr, $(builder: $arg:ty,)? cli: $cli:expr;)*) => {
        /// The key of every option as the builder and the CLI write it.
        const OPTION_KEYS: &[&str] = &[$(crate::option_key!($name)),*];
    };
}

crate::crawl_options!(option_keys);

#[test]
fn option_keys_are_the_serialised_keys() {
    let mut keys = OPTION_KEYS.to_vec();
    keys.sort_unstable();
    assert_eq!(keys, CrawlConfig::keys());
}
