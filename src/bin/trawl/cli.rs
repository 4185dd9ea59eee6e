//! The command line: clap definitions only. `main.rs` turns them into library calls; the
//! crawl options become a config patch keyed by the same names as `config/default.toml`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{
    Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum, ValueHint,
};
use trawl::config::{Flag, FlagKind};
use trawl::report::LinkClasses;

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

Exit codes: 0 finished (or nothing to do), 1 failed while crawling, not one seed could be
fetched, or with --fail-on (--fail-on-errors) finished with links of those classes, 2 bad input,
130 interrupted (resumable).")]
    // The crawl writes where the reading commands read: the same flags, their own words.
    #[command(mut_arg("db", |a| a.help(
        "The crawl's SQLite file: created with the crawl, resumed when it holds an unfinished one. \
         With --store: the file this process collects the Redis crawl's results into (the \
         crawl's one results file; processes on its machine given the same --db take turns)"
    )))]
    #[command(mut_arg("store", |a| a.help(
        "Crawl in Redis instead, shared with every process given the same --store and \
         --crawl-id: redis://HOST:PORT/DB or redis+cluster://HOST:PORT[,...]"
    )))]
    #[command(mut_arg("crawl_id", |a| a.help(
        "The Redis crawl's name: the first process creates it, the others join it"
    )))]
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
  trawl report --db site.db broken --format sarif > links.sarif       code scanning
  trawl report --db site.db broken --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  trawl report --db site.db broken --class redirected                 links to update
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
    /// Show what changed between two generations of a crawl (`trawl crawl --refresh` makes
    /// them): pages added, removed, changed, links added and removed, links newly broken
    /// and fixed.
    #[command(after_help = "Examples:
  trawl crawl --db site.db --refresh               fetch the site again, conditionally
  trawl diff --db site.db                          the latest generation against the one before
  trawl diff --db site.db --from 1 --to 3 --format csv > changes.csv
  trawl diff --db site.db --change broken-new --format json     links broken since last time

Reads the file only; exits 2 when it keeps one generation.")]
    Diff(crate::diff::DiffArgs),
    /// Serve a crawl's web page: its summary, broken links, redirects, depths, top pages,
    /// orphans and a view of each URL, with the JSON behind them for scripts.
    #[command(after_help = "Examples:
  trawl serve --db site.db                                  http://127.0.0.1:9899/
  trawl serve --db site.db --addr 0.0.0.0:8080 --ui-token \"$(openssl rand -hex 16)\"
  curl -s 'http://127.0.0.1:9899/api/broken?q=/docs/&limit=20' | jq .

Reads the file only (a crawl may be running); Ctrl-C stops it.")]
    Serve(crate::serve::ServeArgs),
    /// Drop the oldest generations a file keeps and give their space back.
    #[command(after_help = "Examples:
  trawl prune --db site.db --keep 2     keep the latest and the one before it
  trawl prune --db site.db --keep 1     keep only the latest

Refused while a crawl runs in the file, and when it would drop the generation an unfinished
refresh still needs.")]
    Prune(crate::prune::PruneArgs),
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

/// What `trawl crawl --recheck` fetches again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Recheck {
    /// URLs that failed or answered 4xx/5xx.
    Failed,
}

/// `trawl crawl`.
#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// Seed URLs. Needed to start a crawl; when the file holds one already, any given are
    /// added to it.
    pub seeds: Vec<String>,

    #[command(flatten)]
    pub source: Source,

    /// Start a finished crawl again from its seeds, discarding its previous results but
    /// the link checks younger than --check-cache-age. With --store, a new --crawl-id
    /// takes the --db file's finished crawl this way.
    #[arg(long)]
    pub recrawl: bool,

    /// When the file holds a finished crawl, fetch again only what failed: every URL that
    /// got no answer or answered 4xx/5xx (after an outage of the site or of a linked
    /// host), and what they link to now. With --store, a new --crawl-id takes the --db
    /// file's finished crawl this way.
    #[arg(long, value_name = "WHAT", value_enum, conflicts_with = "recrawl")]
    pub recheck: Option<Recheck>,

    /// When the file holds a finished crawl, start its next generation: the finished one
    /// is kept (trawl diff compares them), and every page is asked again with its ETag /
    /// Last-Modified; a 304 keeps the page's record and links. With --store, a new
    /// --crawl-id takes the --db file's finished crawl this way.
    #[arg(long, conflicts_with_all = ["recrawl", "recheck"])]
    pub refresh: bool,

    /// Exit 1 when the crawl finishes (or was finished) with links of these classes
    /// (comma-separated: broken, fragment, blocked, transient, redirected), counted over the
    /// whole crawl as "trawl report broken --class" lists them: for CI checks of a site's
    /// links.
    #[arg(long, value_name = "CLASSES", conflicts_with = "fail_on_errors")]
    pub fail_on: Option<LinkClasses>,

    /// Exit 1 when the crawl finishes with broken links or missing fragments: --fail-on
    /// broken,fragment (blocked and transient links may well work).
    #[arg(long)]
    pub fail_on_errors: bool,

    #[command(flatten)]
    pub layers: ConfigLayers,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// The crawl options given as flags. Each flag is made from an option's entry in
/// `trawl::crawl_options!` (src/config/options.rs), so each is also a key of
/// `config/default.toml` with the same name and default; given here, it overrides the file
/// and the stored configuration.
#[derive(Debug, Clone, Default)]
pub struct CrawlOptions {
    patch: toml::Table,
}

impl CrawlOptions {
    /// The options given, as a config patch keyed like `config/default.toml`.
    pub fn to_patch(&self) -> toml::Table {
        self.patch.clone()
    }
}

impl Args for CrawlOptions {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let defaults = match toml::Value::try_from(trawl::CrawlConfig::default()) {
            Ok(toml::Value::Table(t)) => t,
            _ => unreachable!("a struct serialises to a table"),
        };
        cmd.args(FLAGS.iter().map(|flag| flag.arg(&defaults)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for CrawlOptions {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut options = CrawlOptions::default();
        options.update_from_arg_matches(matches)?;
        Ok(options)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for flag in FLAGS {
            if let Some(value) = flag.value(matches) {
                self.patch.insert(flag.key.to_string(), value);
            }
        }
        Ok(())
    }
}

/// Turns the entries of `trawl::crawl_options!` into [`FLAGS`].
macro_rules! flags {
    ($($(#[doc = $doc:literal])* $(#[serde $serde:tt])*
       $name:ident: $ty:ty = $default:expr, $(builder: $arg:ty,)? cli: $cli:expr;)*) => {
        /// The flag of every crawl option, in the order of the list.
        const FLAGS: &[OptionFlag] = &[$(OptionFlag {
            key: trawl::option_key!($name),
            doc: concat!($($doc, "\n"),*),
            flag: $cli,
        }),*];
    };
}

trawl::crawl_options!(flags);

/// An option's flag, with the option's key and doc.
#[derive(Debug)]
struct OptionFlag {
    key: &'static str,
    doc: &'static str,
    flag: Flag,
}

impl OptionFlag {
    fn long(&self) -> &'static str {
        self.flag.long.unwrap_or(self.key)
    }

    fn arg(&self, defaults: &toml::Table) -> Arg {
        let arg = Arg::new(self.key)
            .long(self.long())
            .help(self.help_text(defaults));
        if let FlagKind::Switch(_) = self.flag.kind {
            return arg.action(ArgAction::SetTrue);
        }
        let arg = arg.value_name(self.flag.value_name).action(ArgAction::Set);
        match self.flag.kind {
            FlagKind::Int => arg.value_parser(clap::value_parser!(u64)),
            // Not clap's PathBuf parser: it refuses "", which turns the file off.
            FlagKind::Path => arg
                .value_parser(clap::value_parser!(OsString))
                .value_hint(ValueHint::AnyPath),
            FlagKind::List => arg.action(ArgAction::Append),
            _ if !self.flag.values.is_empty() => {
                arg.value_parser(PossibleValuesParser::new(self.flag.values.iter().copied()))
            }
            _ => arg,
        }
    }

    /// The help line: the doc in clap's style, then the default (or that it repeats).
    fn help_text(&self, defaults: &toml::Table) -> String {
        let text = match self.flag.help {
            Some(help) => help.to_string(),
            None => prose(self.doc),
        };
        match (self.flag.kind, defaults.get(self.key)) {
            (FlagKind::List, _) => format!("{text} (repeatable)"),
            (FlagKind::Switch(_), _) | (_, None) => text,
            (_, Some(toml::Value::String(s))) if s.is_empty() => text,
            (_, Some(toml::Value::String(s))) => format!("{text} [default: {s}]"),
            (_, Some(v)) => format!("{text} [default: {v}]"),
        }
    }

    /// The option's value in `matches`, as TOML, when the flag was given.
    fn value(&self, matches: &ArgMatches) -> Option<toml::Value> {
        use toml::Value;
        let key = self.key;
        match self.flag.kind {
            FlagKind::Switch(sets) => matches.get_flag(key).then_some(Value::Boolean(sets)),
            FlagKind::Int => matches
                .get_one::<u64>(key)
                .map(|&n| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))),
            FlagKind::Text => matches.get_one::<String>(key).cloned().map(Value::String),
            FlagKind::Path => matches.get_one::<OsString>(key).map(|path| {
                // Stored absolute, so resuming from another directory appends to the same
                // file; `-` is standard input, not a file.
                let path = if path.is_empty() || path == "-" {
                    PathBuf::from(path)
                } else {
                    std::path::absolute(path).unwrap_or_else(|_| path.into())
                };
                Value::String(path.to_string_lossy().into_owned())
            }),
            FlagKind::List => matches
                .get_many::<String>(key)
                .map(|v| Value::Array(v.cloned().map(Value::String).collect())),
        }
    }
}

/// A doc comment as a line of help in clap's style (no closing period). A terminal shows
/// Markdown as it is, so code marks go: a bare word keeps quotes (`a` in `/a/b/a` would
/// read as the article), anything else (a URL, text already in quotes) stands alone.
fn prose(doc: &str) -> String {
    let text = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut help = String::with_capacity(text.len());
    for (i, part) in text.split('`').enumerate() {
        let word = !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if i % 2 == 1 && word {
            help.push_str(&format!("\"{part}\""));
        } else {
            help.push_str(part);
        }
    }
    match help.strip_suffix('.') {
        Some(h) => h.to_string(),
        None => help,
    }
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
    #[arg(long, value_name = "FILE", required_unless_present = "store")]
    pub db: Option<PathBuf>,
    /// A Redis crawl instead (finished or running): redis://HOST:PORT/DB or
    /// redis+cluster://HOST:PORT[,...]. Its results file is read, on the machine that
    /// collects it.
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
    #[command(flatten)]
    pub generation: crate::diff::GenerationArg,
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
    #[command(flatten)]
    pub generation: crate::diff::GenerationArg,
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
    #[command(flatten)]
    pub generation: crate::diff::GenerationArg,
    /// broken: links to fix, by class, with the page, line and column of each; redirects: redirect
    /// chains; depth: pages per depth, recorded and shortest; top: most-linked pages and
    /// PageRank; orphans: URLs only a sitemap links to; summary: counts and timing.
    #[arg(value_parser = ["broken", "redirects", "depth", "top", "orphans", "summary"])]
    pub kind: String,
    /// Aligned columns for people, or CSV / a JSON array for programs; for broken also
    /// CI formats: junit (test report), sarif (SARIF 2.1.0, code scanning), markdown (a
    /// job summary), github (GitHub Actions annotations).
    #[arg(long, value_parser = ["table", "csv", "json", "junit", "sarif", "markdown", "github"],
          default_value = "table")]
    pub format: String,
    /// At most N rows (N entries per section for summary) [default: all; 20 for top, 10
    /// per section for summary].
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// broken: the classes of links listed, comma-separated: broken, fragment, blocked,
    /// transient, redirected [default: broken,fragment,blocked,transient].
    #[arg(long, value_name = "CLASSES")]
    pub class: Option<LinkClasses>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The crawl options `trawl crawl ARGS` gives, as a patch.
    fn patch(args: &[&str]) -> toml::Table {
        let argv = ["trawl", "crawl", "--db", "site.db"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Crawl(args) => args.layers.options.to_patch(),
            _ => unreachable!("a crawl command line"),
        }
    }

    #[test]
    fn every_option_round_trips_through_its_flag() {
        // Every option of every_option.toml (each set to another value than its default)
        // given as its flag must give the configuration the file gives.
        let sample: toml::Table = include_str!("../../config/every_option.toml")
            .parse()
            .unwrap();
        let mut args = Vec::new();
        for flag in FLAGS {
            let long = format!("--{}", flag.long());
            match &sample[flag.key] {
                toml::Value::Boolean(_) => args.push(long),
                toml::Value::Array(values) => {
                    for v in values {
                        args.extend([long.clone(), v.as_str().unwrap().to_string()]);
                    }
                }
                toml::Value::String(s) => args.extend([long, s.clone()]),
                other => args.extend([long, other.to_string()]),
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let from_flags = trawl::CrawlConfig::layered(None, &[("flags", &patch(&args))]);
        let from_file = trawl::CrawlConfig::layered(None, &[("file", &sample)]);
        assert_eq!(from_flags.unwrap(), from_file.unwrap());
    }

    #[test]
    fn flags_keep_their_names() {
        // README, scripts and tests use these; the flag is not the key for most of them.
        let p = patch(&[
            "--header=X-A: b",
            "--header=X-B: c",
            "--proxy=http://127.0.0.1:1",
            "--ca-cert=ca.pem",
            "--no-cookies",
            "--no-sitemaps",
            "--keep-session-ids",
            "--ignore-robots",
            "--scope=prefix",
            "--proxy-rotation=per-host",
            "--max-pages=18446744073709551615",
        ]);
        let expected: toml::Table = r#"
            headers = ["X-A: b", "X-B: c"]
            proxies = ["http://127.0.0.1:1"]
            ca-certs = ["ca.pem"]
            cookies = false
            sitemaps = false
            strip-session-ids = false
            ignore-robots = true
            scope = "prefix"
            proxy-rotation = "per-host"
            max-pages = 9223372036854775807
        "#
        .parse()
        .unwrap();
        assert_eq!(p, expected);
        let parse = |flags: &[&str]| Cli::try_parse_from(["trawl", "config"].iter().chain(flags));
        assert!(parse(&["--scope", "prefix"]).is_ok());
        assert!(parse(&["--scope", "planet"]).is_err());
        assert!(parse(&["--max-pages", "ten"]).is_err());
        assert!(patch(&[]).is_empty());
    }

    #[test]
    fn warc_is_stored_absolute() {
        let p = patch(&["--warc", "site.warc.gz"]);
        let warc = std::path::Path::new(p["warc"].as_str().unwrap());
        assert!(
            warc.is_absolute() && warc.ends_with("site.warc.gz"),
            "{warc:?}"
        );
        // An empty path turns WARC output off again.
        assert_eq!(patch(&["--warc", ""])["warc"].as_str(), Some(""));
    }

    #[test]
    fn help_gives_the_default() {
        let cmd = Cli::command();
        let crawl = cmd.find_subcommand("crawl").unwrap();
        let help = |long: &str| {
            let arg = crawl.get_arguments().find(|a| a.get_long() == Some(long));
            arg.unwrap().get_help().unwrap().to_string()
        };
        assert_eq!(
            help("concurrency"),
            "Worker tasks fetching at once [default: 16]"
        );
        assert!(help("timeout").ends_with(" [default: 1m]"));
        assert!(help("scope").contains(r#""host" (the seeds' hosts)"#));
        assert!(help("rate-limit").contains(r#"as "N/DURATION" (e.g. "120/1m")"#));
        assert!(help("header").ends_with(" (repeatable)"));
        assert!(!help("metrics-addr").contains("[default"));
        assert!(help("no-cookies").starts_with("Do not keep cookies"));
    }
}
