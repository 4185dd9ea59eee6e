//! The command line: clap definitions only. `main.rs` turns them into library calls; the
//! crawl options become a config patch keyed by the same names as `config/default.toml`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A site crawler: every page and link of a site in a resumable SQLite file.
#[derive(Debug, Parser)]
#[command(name = "trawl", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Crawl a site into a SQLite file, or resume the crawl the file holds.
    #[command(after_help = "Examples:
  trawl crawl https://example.org/ --db site.db     start a crawl
  trawl crawl --db site.db                          resume it after Ctrl-C or a crash
  trawl crawl https://example.org/ --db s.db --scope domain --max-depth 3 --exclude '/tag/'
  trawl crawl https://example.org/ --store redis://10.0.0.5:6379/0 --crawl-id ex   machine A
  trawl crawl --store redis://10.0.0.5:6379/0 --crawl-id ex                        machines B, C...

Exit codes: 0 finished (or nothing to do), 1 failed while crawling, or with --fail-on-errors
finished with URLs that failed or answered 4xx/5xx, 2 bad input, 130 interrupted (resumable).")]
    Crawl(Box<CrawlArgs>),
    /// Write the pages or the link graph of a crawl as CSV, JSON Lines, GraphML, DOT, or
    /// a sitemap.
    #[command(after_help = "Examples:
  trawl export --db site.db --format csv --what edges > edges.csv
  trawl export --db site.db --format jsonl --what pages > pages.jsonl   one line per URL with its outlinks
  trawl export --db site.db --format graphml --internal-only --collapse > site.graphml
  trawl export --db site.db --format dot | sfdp -Tsvg > site.svg
  trawl export --db site.db --format csv --what pages --status 4xx --status failed
  trawl export --db site.db --format sitemap --out public/sitemap.xml
  trawl export --store redis://10.0.0.5:6379/0 --crawl-id ex --format graphml > g.graphml
  trawl export --store redis://10.0.0.5:6379/0 --crawl-id ex --to site.db   copy into SQLite")]
    Export(ExportArgs),
    /// Print a report on a crawl: broken links, redirect chains, depths, most-linked pages,
    /// orphans, or a summary.
    #[command(after_help = "Examples:
  trawl report --db site.db summary
  trawl report --db site.db broken --format csv > broken.csv
  trawl report --db site.db top --limit 50
  trawl report --db site.db redirects --format json | jq .

Reports read the file only (a crawl may be running) and create no index.")]
    Report(ReportArgs),
    /// Show whether a crawl is running and how far it got: counts, errors, rate.
    #[command(after_help = "Examples:
  trawl status --db site.db                 while a crawl runs (from another terminal) or after
  trawl status --db site.db --format json   for scripts and monitoring
  trawl status --store redis://10.0.0.5:6379/0 --crawl-id ex   a Redis crawl, from any machine

Reads the file only; a crawl may be running.")]
    Status(StatusArgs),
    /// Print the configuration `trawl crawl` would use with the same arguments, as TOML.
    #[command(
        after_help = "Each layer overrides the one before: the defaults (or the configuration stored in
--db FILE, when it holds a crawl), then --config FILE, then the flags.

Examples:
  trawl config --show > my.toml                           every option and its default
  trawl config --show --db site.db --max-pages 500        what resuming with --max-pages would use"
    )]
    Config(Box<ConfigArgs>),
    /// Print a shell completion script.
    #[command(after_help = "Examples:
  trawl completions bash > ~/.local/share/bash-completion/completions/trawl
  trawl completions zsh > ~/.zfunc/_trawl          (with fpath+=~/.zfunc before compinit)
  trawl completions fish > ~/.config/fish/completions/trawl.fish")]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), for trawl or one of its commands.
    #[command(after_help = "Examples:
  trawl man | man -l -
  trawl man crawl > /usr/local/share/man/man1/trawl-crawl.1")]
    Man(ManArgs),
}

/// The configuration layers a crawl takes from the command line, over its base (the
/// defaults, or the configuration stored with the crawl): the file, then the flags.
#[derive(Debug, Args)]
pub struct ConfigLayers {
    /// Read options from this TOML file (see config/default.toml); flags win over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    #[command(flatten)]
    pub options: CrawlOptions,
}

/// `trawl crawl`.
#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// Seed URLs. Needed to start a crawl; when the file holds one already, any given are
    /// added to it.
    pub seeds: Vec<String>,

    #[command(flatten)]
    pub source: Source,

    /// Start a finished crawl again from its seeds, discarding its previous results
    /// (SQLite crawls; a Redis crawl starts again under a new --crawl-id).
    #[arg(long, conflicts_with = "store")]
    pub recrawl: bool,

    /// Exit 1 when the crawl finishes (or was finished) with URLs that failed or answered
    /// 4xx/5xx: for CI checks of a site's links.
    #[arg(long)]
    pub fail_on_errors: bool,

    #[command(flatten)]
    pub layers: ConfigLayers,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// The crawl options. Each is also a key of `config/default.toml` with the same name and
/// default; given here, it overrides the file and the stored configuration.
#[derive(Debug, Args, Default)]
pub struct CrawlOptions {
    /// Worker tasks fetching at once [default: 16].
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u64>,
    /// Requests in flight to one host [default: 8].
    #[arg(long, value_name = "N")]
    pub per_host: Option<u64>,
    /// Body bytes read per response, e.g. 10MiB; longer bodies are cut [default: 10MiB].
    #[arg(long, value_name = "SIZE")]
    pub max_body: Option<String>,
    /// Time to connect, e.g. 10s [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub connect_timeout: Option<String>,
    /// Longest wait for the next bytes of a response [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub read_timeout: Option<String>,
    /// Longest time for one whole request [default: 1m].
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Redirect hops followed from one URL [default: 10].
    #[arg(long, value_name = "N")]
    pub max_redirects: Option<u64>,
    /// Which URLs are fetched: the seeds' hosts, their registrable domains, or URLs under
    /// the seeds' directories [default: host].
    #[arg(long, value_name = "SCOPE", value_parser = ["host", "domain", "prefix"])]
    pub scope: Option<String>,
    /// Only fetch URLs matching this regex (repeatable).
    #[arg(long, value_name = "REGEX")]
    pub include: Vec<String>,
    /// Never fetch URLs matching this regex (repeatable).
    #[arg(long, value_name = "REGEX")]
    pub exclude: Vec<String>,
    /// Deepest click depth fetched, 0 for no limit [default: 0].
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u64>,
    /// Most URLs fetched in the whole crawl, 0 for no limit [default: 0].
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// The User-Agent header [default: trawl/VERSION (+https://crates.io/crates/trawl)].
    #[arg(long, value_name = "STRING")]
    pub user_agent: Option<String>,
    /// After Ctrl-C, how long fetches under way may take to finish [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub grace_period: Option<String>,
    /// Fetch what robots.txt disallows and ignore its Crawl-delay.
    #[arg(long)]
    pub ignore_robots: bool,
    /// Least time between two requests to one host, e.g. 500ms [default: 0s].
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Most requests per host per window, e.g. 120/1m [default: 0/1s, no limit].
    #[arg(long, value_name = "N/DURATION")]
    pub rate_limit: Option<String>,
    /// Longest robots.txt Crawl-delay honoured [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub max_crawl_delay: Option<String>,
    /// Longest pause honoured from Retry-After on 429/503 [default: 10m].
    #[arg(long, value_name = "DURATION")]
    pub max_retry_after: Option<String>,
    /// Attempts per URL for transient faults, the first included [default: 3].
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u64>,
    /// Base of the exponential backoff between attempts [default: 1s].
    #[arg(long, value_name = "DURATION")]
    pub retry_backoff: Option<String>,
    /// Longest URL admitted in bytes, 0 for no limit [default: 2048].
    #[arg(long, value_name = "N")]
    pub max_url_length: Option<u64>,
    /// Most path segments in a URL, 0 for no limit [default: 32].
    #[arg(long, value_name = "N")]
    pub max_path_segments: Option<u64>,
    /// Most times one path segment may occur in a URL, 0 for no limit [default: 3].
    #[arg(long, value_name = "N")]
    pub max_repeated_segments: Option<u64>,
    /// Most URLs fetched from one host, 0 for no limit [default: 0].
    #[arg(long, value_name = "N")]
    pub max_pages_per_host: Option<u64>,
    /// Keep session IDs in canonical URLs (they are removed by default).
    #[arg(long)]
    pub keep_session_ids: bool,
    /// An extra request header, "Name: value" (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Do not keep cookies between requests (they are kept by default).
    #[arg(long)]
    pub no_cookies: bool,
    /// Do not read sitemaps (robots.txt's Sitemap lines, /sitemap.xml).
    #[arg(long)]
    pub no_sitemaps: bool,
    /// A proxy to send requests through: http://, https:// or socks5:// (repeatable).
    #[arg(long = "proxy", value_name = "URL")]
    pub proxies: Vec<String>,
    /// per-request (each request the next proxy) or per-host [default: per-request].
    #[arg(long, value_name = "MODE", value_parser = ["per-request", "per-host"])]
    pub proxy_rotation: Option<String>,
    /// Failed connections that take a proxy out of rotation [default: 3].
    #[arg(long, value_name = "N")]
    pub proxy_max_failures: Option<u64>,
    /// How long a failing proxy stays out of rotation [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub proxy_cooldown: Option<String>,
    /// Serve Prometheus metrics on this address while crawling, e.g. 127.0.0.1:9898.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,
    /// A PEM file of extra certificate authorities to trust (repeatable).
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<String>,
    /// Redis crawls: how long a claim on a URL lasts unless renewed; a killed process's
    /// URLs go back to the crawl after this [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub lease: Option<String>,
    /// Write every request and response to this WARC file, e.g. site.warc.gz (appended to
    /// when it exists; "" for none).
    #[arg(long, value_name = "FILE")]
    pub warc: Option<PathBuf>,
    /// Memory for the visited set, e.g. 64MiB; past it, URLs move to files next to the
    /// database; 0 for no limit [default: 4MiB].
    #[arg(long, value_name = "SIZE")]
    pub visited_memory: Option<String>,
}

/// How a crawl reports.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Log format when stderr is not a terminal (or with --no-progress).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// No progress line, even on a terminal.
    #[arg(long)]
    pub no_progress: bool,
    /// Only warnings and errors.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Debug logs.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Log line format.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Which crawl a reading command reads: a SQLite file, or a Redis crawl.
#[derive(Debug, Args)]
pub struct Source {
    /// The crawl's SQLite file (read only; a crawl may be running).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "store",
        conflicts_with = "store"
    )]
    pub db: Option<PathBuf>,
    /// A Redis crawl instead (finished or running): redis://HOST:PORT/DB or
    /// redis+cluster://HOST:PORT[,...]. It is read into a temporary SQLite copy first.
    #[arg(long, value_name = "URL", requires = "crawl_id")]
    pub store: Option<String>,
    /// The Redis crawl's name.
    #[arg(long, value_name = "NAME", requires = "store")]
    pub crawl_id: Option<String>,
}

impl Source {
    /// The source as flags, for messages (`--db site.db`).
    pub fn shown(&self) -> String {
        match (&self.store, &self.crawl_id, &self.db) {
            (Some(s), Some(id), _) => format!("--store {s} --crawl-id {id}"),
            (_, _, Some(db)) => format!("--db {}", db.display()),
            _ => String::new(),
        }
    }

    /// The `--db` path as given, for messages.
    pub fn shown_path(&self) -> String {
        self.db
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    }
}

/// `trawl export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub source: Source,
    /// Output format.
    #[arg(long, value_parser = ["csv", "jsonl", "graphml", "dot", "sitemap"], default_value = "csv")]
    pub format: String,
    /// Pages (one record per URL; in JSON Lines with its outlinks), edges, or the graph
    /// (nodes and edges; graphml and dot) [default: edges for csv/jsonl, graph for
    /// graphml/dot, pages for sitemap].
    #[arg(long, value_parser = ["pages", "edges", "graph"])]
    pub what: Option<String>,
    /// Leave out URLs skipped as out of scope and the edges pointing at them.
    #[arg(long)]
    pub internal_only: bool,
    /// One edge per (from, to, kind), with a count of its occurrences.
    #[arg(long)]
    pub collapse: bool,
    /// Keep only pages of this class, and edges whose two ends are kept (repeatable).
    #[arg(long, value_name = "CLASS", value_parser = ["2xx", "3xx", "4xx", "5xx", "failed"])]
    pub status: Vec<String>,
    /// Most URLs per sitemap file; a larger sitemap is split (needs --out).
    #[arg(long, value_name = "N", default_value_t = 50_000,
          value_parser = clap::value_parser!(u64).range(1..=50_000))]
    pub sitemap_max_urls: u64,
    /// Write here instead of standard output (for a split sitemap: the index, with the
    /// parts beside it).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Copy the Redis crawl (--store) into this new SQLite file, instead of exporting a
    /// format: the file then works with every command, like a local crawl's.
    #[arg(long, value_name = "FILE", requires = "store", conflicts_with = "out")]
    pub to: Option<PathBuf>,
}

/// `trawl status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub source: Source,
    /// Lines for people, or one JSON object for programs.
    #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
    pub format: StatusFormat,
}

/// How `trawl status` prints.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StatusFormat {
    /// Lines for people.
    Text,
    /// One JSON object.
    Json,
}

/// `trawl config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print the effective configuration as TOML (what this command does; may be left out).
    #[arg(long)]
    pub show: bool,
    /// A crawl's SQLite file: when it holds a crawl, its stored configuration is the base
    /// (as when the crawl resumes). Read only; a missing file is not created.
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub layers: ConfigLayers,
}

/// `trawl completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `trawl man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A command's page (trawl-crawl(1), ...) instead of trawl(1).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// `trawl report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub source: Source,
    /// broken: failed or 4xx/5xx URLs and the pages linking to them; redirects: redirect
    /// chains; depth: pages per depth, recorded and shortest; top: most-linked pages and
    /// PageRank; orphans: URLs only a sitemap links to; summary: counts and timing.
    #[arg(value_parser = ["broken", "redirects", "depth", "top", "orphans", "summary"])]
    pub kind: String,
    /// Aligned columns for people, or CSV / a JSON array for programs.
    #[arg(long, value_parser = ["table", "csv", "json"], default_value = "table")]
    pub format: String,
    /// At most N rows (N entries per section for summary) [default: all; 20 for top, 10
    /// per section for summary].
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

impl CrawlOptions {
    /// The options given, as a config patch keyed like `config/default.toml`.
    pub fn to_patch(&self) -> toml::Table {
        let mut t = toml::Table::new();
        let mut int = |k: &str, v: Option<u64>| {
            if let Some(v) = v {
                t.insert(
                    k.into(),
                    toml::Value::Integer(v.min(i64::MAX as u64) as i64),
                );
            }
        };
        int("concurrency", self.concurrency);
        int("per-host", self.per_host);
        int("max-redirects", self.max_redirects);
        int("max-depth", self.max_depth);
        int("max-pages", self.max_pages);
        int("max-attempts", self.max_attempts);
        int("max-url-length", self.max_url_length);
        int("max-path-segments", self.max_path_segments);
        int("max-repeated-segments", self.max_repeated_segments);
        int("max-pages-per-host", self.max_pages_per_host);
        int("proxy-max-failures", self.proxy_max_failures);
        if self.keep_session_ids {
            t.insert("strip-session-ids".into(), toml::Value::Boolean(false));
        }
        if self.ignore_robots {
            t.insert("ignore-robots".into(), toml::Value::Boolean(true));
        }
        for (k, v) in [
            ("max-body", &self.max_body),
            ("visited-memory", &self.visited_memory),
            ("connect-timeout", &self.connect_timeout),
            ("read-timeout", &self.read_timeout),
            ("timeout", &self.timeout),
            ("scope", &self.scope),
            ("user-agent", &self.user_agent),
            ("grace-period", &self.grace_period),
            ("lease", &self.lease),
            ("delay", &self.delay),
            ("rate-limit", &self.rate_limit),
            ("max-crawl-delay", &self.max_crawl_delay),
            ("max-retry-after", &self.max_retry_after),
            ("retry-backoff", &self.retry_backoff),
            ("proxy-rotation", &self.proxy_rotation),
            ("proxy-cooldown", &self.proxy_cooldown),
            ("metrics-addr", &self.metrics_addr),
        ] {
            if let Some(v) = v {
                t.insert(k.into(), toml::Value::String(v.clone()));
            }
        }
        if let Some(path) = &self.warc {
            // Stored absolute, so resuming from another directory appends to the same file.
            let path = if path.as_os_str().is_empty() {
                PathBuf::new()
            } else {
                std::path::absolute(path).unwrap_or_else(|_| path.clone())
            };
            t.insert(
                "warc".into(),
                toml::Value::String(path.to_string_lossy().into_owned()),
            );
        }
        if self.no_cookies {
            t.insert("cookies".into(), toml::Value::Boolean(false));
        }
        if self.no_sitemaps {
            t.insert("sitemaps".into(), toml::Value::Boolean(false));
        }
        for (k, v) in [
            ("include", &self.include),
            ("exclude", &self.exclude),
            ("headers", &self.headers),
            ("proxies", &self.proxies),
            ("ca-certs", &self.ca_certs),
        ] {
            if !v.is_empty() {
                t.insert(
                    k.into(),
                    toml::Value::Array(v.iter().cloned().map(toml::Value::String).collect()),
                );
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_option_is_a_config_key() {
        // Each flag of CrawlOptions must be a key CrawlConfig accepts, so the CLI and the
        // file never disagree on a name.
        let opts = CrawlOptions {
            concurrency: Some(2),
            per_host: Some(1),
            max_body: Some("1MiB".into()),
            connect_timeout: Some("1s".into()),
            read_timeout: Some("2s".into()),
            timeout: Some("3s".into()),
            max_redirects: Some(4),
            scope: Some("domain".into()),
            include: vec!["a".into()],
            exclude: vec!["b".into()],
            max_depth: Some(5),
            max_pages: Some(6),
            user_agent: Some("x".into()),
            grace_period: Some("7s".into()),
            lease: Some("9s".into()),
            visited_memory: Some("1MiB".into()),
            ignore_robots: true,
            delay: Some("1ms".into()),
            rate_limit: Some("5/1s".into()),
            max_crawl_delay: Some("2s".into()),
            max_retry_after: Some("3s".into()),
            max_attempts: Some(2),
            retry_backoff: Some("10ms".into()),
            max_url_length: Some(100),
            max_path_segments: Some(5),
            max_repeated_segments: Some(2),
            max_pages_per_host: Some(9),
            keep_session_ids: true,
            headers: vec!["X-A: b".into()],
            no_cookies: true,
            no_sitemaps: true,
            proxies: vec!["http://127.0.0.1:1".into()],
            proxy_rotation: Some("per-host".into()),
            proxy_max_failures: Some(2),
            proxy_cooldown: Some("1m".into()),
            metrics_addr: Some("127.0.0.1:9898".into()),
            ca_certs: vec!["ca.pem".into()],
            warc: Some("site.warc.gz".into()),
        };
        let patch = opts.to_patch();
        let config = trawl::CrawlConfig::layered(None, &[("flags", &patch)]).unwrap();
        assert_eq!(config.max_pages, 6);
        assert_eq!(config.scope, trawl::ScopeMode::Domain);
        let warc = config.warc.expect("--warc is the warc key");
        assert!(
            warc.is_absolute() && warc.ends_with("site.warc.gz"),
            "{warc:?}"
        );
        let all = toml::Value::try_from(trawl::CrawlConfig::default()).unwrap();
        assert_eq!(
            patch.len(),
            all.as_table().unwrap().len(),
            "a config key has no flag"
        );
    }
}
