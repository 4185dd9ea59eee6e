//! The list of crawl options: the one place an option is written.
//!
//! [`crawl_options!`](crate::crawl_options) hands every option, in order, to a macro named
//! by its caller, which turns the list into code: [`CrawlConfig`](super::CrawlConfig) and
//! its `Default` here, the setters of [`CrawlerBuilder`](crate::CrawlerBuilder), the flags
//! of `trawl crawl` in the binary. Adding an option is adding an entry here, its use, and a
//! line each to `config/default.toml` (its documentation for users) and to
//! `every_option.toml` (a value for the round-trip tests); tests say when one is missing.
//!
//! An entry reads
//!
//! ```text
//! /// Doc: the field's, the setter's, and the flag's help unless `cli` gives one.
//! #[serde(...)]                   (any serde attributes of the field)
//! name: Type = default,
//!     builder: ArgType,           (optional: the setter's argument when it is not Type)
//!     cli: Flag::...;             (what `trawl crawl` makes of it, see flag.rs)
//! ```
//!
//! The key in TOML and the flag are the name in kebab-case
//! ([`option_key!`](crate::option_key)); the setter is the name. The `cli` part is a
//! [`Flag`](super::Flag), plain data that only the binary turns into a clap argument.

/// Calls `$callback! { entries }` with every crawl option; see `src/config/options.rs`.
#[doc(hidden)]
#[macro_export]
macro_rules! crawl_options {
    ($callback:ident) => {
        $callback! {
            /// Worker tasks fetching at once.
            concurrency: usize = 16,
                cli: Flag::int("N");
            /// Requests in flight to one host at once.
            per_host: usize = 8,
                cli: Flag::int("N");
            /// Bytes of (decompressed) body read per response; longer bodies are cut and the page
            /// recorded as truncated.
            max_body: ByteSize = ByteSize(10 << 20),
                builder: u64,
                cli: Flag::text("SIZE");
            /// Time to establish a connection.
            #[serde(with = "humantime_serde")]
            connect_timeout: Duration = Duration::from_secs(10),
                cli: Flag::text("DURATION");
            /// Longest wait for the next bytes of a response.
            #[serde(with = "humantime_serde")]
            read_timeout: Duration = Duration::from_secs(30),
                cli: Flag::text("DURATION");
            /// Longest time for one whole request, body included.
            #[serde(with = "humantime_serde")]
            timeout: Duration = Duration::from_secs(60),
                cli: Flag::text("DURATION");
            /// Redirect hops followed from one URL before giving up.
            max_redirects: u32 = 10,
                cli: Flag::int("N");
            /// Which URLs are in scope: `host` (the seeds' hosts), `domain` (their registrable
            /// domains), `prefix` (under the seeds' directories).
            scope: ScopeMode = ScopeMode::Host,
                cli: Flag::text("SCOPE").one_of(&["host", "domain", "prefix"]);
            /// Regexes over the canonical URL: when any is given, only matching URLs are fetched.
            include: Vec<String> = Vec::new(),
                cli: Flag::list("REGEX");
            /// Regexes over the canonical URL: matching URLs are never fetched.
            exclude: Vec<String> = Vec::new(),
                cli: Flag::list("REGEX");
            /// Deepest click depth fetched (seeds are depth 0); 0 means no limit.
            max_depth: u32 = 0,
                cli: Flag::int("N");
            /// Most URLs fetched in the whole crawl; 0 means no limit.
            max_pages: u64 = 0,
                cli: Flag::int("N");
            /// The User-Agent header.
            user_agent: String = default_user_agent(),
                cli: Flag::text("STRING");
            /// After a stop is asked for, how long in-flight fetches may take to finish.
            #[serde(with = "humantime_serde")]
            grace_period: Duration = Duration::from_secs(10),
                cli: Flag::text("DURATION");
            /// Fetch URLs that robots.txt disallows, and ignore its Crawl-delay.
            ignore_robots: bool = false,
                cli: Flag::switch(true);
            /// Least time between the starts of two requests to one host.
            #[serde(with = "humantime_serde")]
            delay: Duration = Duration::ZERO,
                cli: Flag::text("DURATION");
            /// Most requests per host in a window, as `"N/DURATION"` (e.g. `"120/1m"`); `"0/1s"`
            /// means no limit. Enforced as an even spacing of DURATION/N between requests.
            rate_limit: RateLimit = RateLimit::NONE,
                cli: Flag::text("N/DURATION");
            /// The longest robots.txt `Crawl-delay` honoured; longer ones are cut to this.
            #[serde(with = "humantime_serde")]
            max_crawl_delay: Duration = Duration::from_secs(30),
                cli: Flag::text("DURATION");
            /// The longest pause honoured from a `Retry-After` header on 429 or 503.
            #[serde(with = "humantime_serde")]
            max_retry_after: Duration = Duration::from_secs(600),
                cli: Flag::text("DURATION");
            /// Attempts per URL for transient faults (timeouts, resets, 408, 429, 5xx gateways),
            /// the first included.
            max_attempts: u32 = 3,
                cli: Flag::int("N");
            /// Base of the exponential backoff between attempts (full jitter: a random wait up to
            /// base * 2^attempt, at most 10 minutes).
            #[serde(with = "humantime_serde")]
            retry_backoff: Duration = Duration::from_secs(1),
                cli: Flag::text("DURATION");
            /// Longest URL admitted, in bytes; 0 means no limit.
            max_url_length: usize = 2048,
                cli: Flag::int("N");
            /// Most path segments in an admitted URL; 0 means no limit.
            max_path_segments: usize = 32,
                cli: Flag::int("N");
            /// Most times one path segment may occur in an admitted URL's path (`/a/b/a/b/a`
            /// has `a` three times); 0 means no limit.
            max_repeated_segments: usize = 3,
                cli: Flag::int("N");
            /// Most URLs fetched from one host; 0 means no limit.
            max_pages_per_host: u64 = 0,
                cli: Flag::int("N");
            /// Most URLs fetched per host that share a path and differ only in the query (an
            /// endless `?date=` calendar, a query that grows at every click); 0 means no
            /// limit. Raise it for a site that serves every page from one script
            /// (`index.php?id=N`).
            max_query_variants: u64 = 1000,
                cli: Flag::int("N");
            /// Remove session IDs (`;jsessionid=`, `PHPSESSID`, `sid`, ...) from canonical URLs.
            strip_session_ids: bool = true,
                cli: Flag::switch(false)
                    .named("keep-session-ids")
                    .help("Keep session IDs in canonical URLs (they are removed by default)");
            /// Check every out-of-scope http(s) link once, without crawling it: one GET when
            /// its ids may be needed for `check-fragments`, else (and for URLs named for a
            /// file that is never HTML) HEAD, then GET when HEAD is refused or unreliable (a
            /// 4xx or 5xx). Its links are not followed; robots.txt is not read for a single
            /// check. The per-host limits, pauses and retries apply.
            check_external: bool = false,
                cli: Flag::switch(true);
            /// Collect each HTML page's ids and `<a name>`s, so that `trawl report broken` finds
            /// links to a `#fragment` the target page does not have.
            check_fragments: bool = true,
                cli: Flag::switch(false)
                    .named("no-check-fragments")
                    .help("Do not collect page ids, so #fragments are not checked (they are by default)");
            /// How long a link check's answer is kept for the next `--recrawl` of the file: a
            /// checked URL answered within this long is not asked again; 0 asks every time.
            #[serde(with = "humantime_serde")]
            check_cache_age: Duration = Duration::from_secs(24 * 3600),
                cli: Flag::text("DURATION");
            /// Extra request headers, each `"Name: value"`.
            headers: Vec<String> = Vec::new(),
                cli: Flag::list("NAME: VALUE").named("header");
            /// Keep cookies the sites set, for the whole crawl (not stored in the file).
            cookies: bool = true,
                cli: Flag::switch(false)
                    .named("no-cookies")
                    .help("Do not keep cookies between requests (they are kept by default)");
            /// Read each host's sitemaps (listed in robots.txt, else `/sitemap.xml`) and crawl
            /// what they list.
            sitemaps: bool = true,
                cli: Flag::switch(false)
                    .named("no-sitemaps")
                    .help("Do not read sitemaps (robots.txt's Sitemap lines, /sitemap.xml)");
            /// Proxies requests go through (`http://`, `https://`, `socks5://` URLs); none means
            /// direct connections.
            proxies: Vec<String> = Vec::new(),
                cli: Flag::list("URL").named("proxy");
            /// `per-request` (each request takes the next proxy) or `per-host` (a host keeps one).
            proxy_rotation: Rotation = Rotation::PerRequest,
                cli: Flag::text("MODE").one_of(&["per-request", "per-host"]);
            /// Failed connections in a row that take a proxy out of rotation.
            proxy_max_failures: u32 = 3,
                cli: Flag::int("N");
            /// How long a failing proxy stays out of rotation before it is tried again.
            #[serde(with = "humantime_serde")]
            proxy_cooldown: Duration = Duration::from_secs(300),
                cli: Flag::text("DURATION");
            /// Serve Prometheus metrics on this address (e.g. `127.0.0.1:9898`) while crawling;
            /// empty for none.
            metrics_addr: String = String::new(),
                cli: Flag::text("ADDR");
            /// Serve the crawl's web page (live figures, then its reports) on this address while
            /// crawling, e.g. `127.0.0.1:9899`; empty for none. An address other than loopback
            /// needs `ui-token`.
            ui: String = String::new(),
                cli: Flag::text("ADDR");
            /// The token every request to the `ui` page must carry (`Authorization: Bearer
            /// TOKEN` or `?token=TOKEN`); empty for none. Never stored with the crawl.
            ui_token: String = String::new(),
                cli: Flag::text("TOKEN");
            /// PEM files of extra certificate authorities to trust (an internal CA), besides the
            /// built-in web roots.
            ca_certs: Vec<PathBuf> = Vec::new(),
                cli: Flag::list("FILE").named("ca-cert");
            /// Redis crawls: how long a process's claim on a URL lasts unless renewed (it is
            /// renewed while the fetch runs). A killed process's URLs return to the crawl after
            /// this long.
            #[serde(with = "humantime_serde")]
            lease: Duration = Duration::from_secs(30),
                cli: Flag::text("DURATION");
            /// Write every HTTP request and response to this WARC file (`.warc.gz`, one gzip
            /// member per record), appending when it exists; `None` (`""` in TOML) for none.
            /// A relative path is resolved against the current directory of each run. In a
            /// Redis crawl each process writes its own file (never the one the crawl stores).
            #[serde(with = "optional_path")]
            warc: Option<PathBuf> = None,
                builder: PathBuf,
                cli: Flag::path("FILE").help(concat!(
                    "Write every request and response to this WARC file, e.g. site.warc.gz ",
                    "(appended to when it exists; \"\" for none)",
                ));
            /// Memory for the visited set (every URL known, about 36 bytes each). Past it, the
            /// least recently seen URLs move to files next to the database, so memory stays flat
            /// however many URLs a crawl finds; 0 keeps every URL in memory.
            visited_memory: ByteSize = ByteSize(4 << 20),
                builder: u64,
                cli: Flag::text("SIZE");
            /// Read more seeds from this file, one URL per line (blank lines and lines starting
            /// with `#` skipped; a bad line is refused with its number); `-` reads standard
            /// input. Read once, when the crawl starts: its seeds are stored with the crawl, so
            /// a resume needs no file. `None` (`""` in TOML) for none.
            #[serde(with = "optional_path")]
            seeds_file: Option<PathBuf> = None,
                builder: PathBuf,
                cli: Flag::path("FILE").help(concat!(
                    "Read more seeds from this file, one URL per line (# comments and blank ",
                    "lines skipped; - for standard input)",
                ));
        }
    };
}

/// The key of the option named `$name`, as a `&'static str` constant: `option_key!(per_host)`
/// is `"per-host"`, as serde's kebab-case makes it. A constant because clap takes flag names
/// as `&'static str`.
#[doc(hidden)]
#[macro_export]
macro_rules! option_key {
    ($name:ident) => {{
        const BYTES: [u8; stringify!($name).len()] = $crate::config::kebab_case(stringify!($name));
        const KEY: &str = match ::core::str::from_utf8(&BYTES) {
            Ok(key) => key,
            Err(_) => panic!("an option name is ASCII"),
        };
        KEY
    }};
}

/// `name` with `_` turned to `-`, for [`option_key!`](crate::option_key); `N` is its length.
#[doc(hidden)]
pub const fn kebab_case<const N: usize>(name: &str) -> [u8; N] {
    let name = name.as_bytes();
    let mut key = [0; N];
    let mut i = 0;
    while i < N {
        key[i] = if name[i] == b'_' { b'-' } else { name[i] };
        i += 1;
    }
    key
}
