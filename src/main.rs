//! The `trawl` binary: parses the command line, runs the library, reports, exits with a
//! documented code. All crawling lives in the library.

mod cli;
mod exit_codes;
mod progress;
mod status_view;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use cli::{
    Cli, Command, CompletionsArgs, ConfigArgs, ConfigLayers, CrawlArgs, ExportArgs, LogFormat,
    ManArgs, ReportArgs, Source, StatusArgs, StatusFormat,
};
use exit_codes::{BAD_INPUT, FAILED, INTERRUPTED, SUCCESS};
use trawl::config::{ConfigError, Layers};
use trawl::store::{OpenMode, SqliteStore};
use trawl::{CrawlConfig, Crawler, CrawlerBuilder, Outcome};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { BAD_INPUT } else { SUCCESS };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Crawl(args) => crawl(*args),
        Command::Export(args) => export(args),
        Command::Report(args) => report(args),
        Command::Status(args) => status(args),
        Command::Config(args) => config(*args),
        Command::Completions(args) => completions(args),
        Command::Man(args) => man(args),
    }
}

impl ConfigLayers {
    /// Hand the layers to a crawl's builder, which lays them over its base.
    fn apply(&self, mut builder: CrawlerBuilder) -> CrawlerBuilder {
        if let Some(path) = &self.config {
            builder = builder.config_file(path);
        }
        builder.options(self.options.to_patch())
    }

    /// The configuration a crawl with these layers uses over `base` (the stored
    /// configuration when resuming, else the defaults), settled as the builder settles it.
    fn effective(&self, base: Option<&CrawlConfig>) -> Result<CrawlConfig, ConfigError> {
        let files: Vec<PathBuf> = self.config.iter().cloned().collect();
        let layers = Layers::read(&files, self.options.to_patch())?;
        layers.given()?;
        layers.over(base)
    }
}

/// Report `e` as one line on stderr (some messages, e.g. a regex error, span several
/// lines) and exit with `code`.
fn fail(code: u8, e: impl std::fmt::Display) -> ExitCode {
    let text = e.to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    eprintln!("trawl: {}", line.join(" "));
    ExitCode::from(code)
}

/// An error and its causes, each cause once: a message often already includes its
/// source's text, and `{:#}` would repeat it.
fn with_causes(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !msg.contains(&text) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&text);
        }
    }
    msg
}

fn crawl(args: CrawlArgs) -> ExitCode {
    let show_progress =
        !args.output.no_progress && !args.output.quiet && std::io::stderr().is_terminal();
    init_logging(&args, show_progress);
    // Connections, the database and the visited set's run files all take descriptors;
    // many systems start processes at a soft limit of 1024, far under the hard one.
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::debug!(limit = n, "open files"),
        Err(e) => tracing::debug!(error = %e, "cannot raise the open-file limit"),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(FAILED, format!("cannot start the runtime: {e}")),
    };
    runtime.block_on(async move {
        let crawler = match build(&args).await {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                let code = if e.is_usage() { BAD_INPUT } else { FAILED };
                return fail(code, e);
            }
            None => return ExitCode::from(INTERRUPTED),
        };
        if crawler.is_finished() {
            match crawler.crawl_id() {
                Some(id) => println!(
                    "crawl {id:?} is finished; nothing to do (trawl export --store ... --crawl-id {id} reads it)"
                ),
                None => println!(
                    "{} holds a finished crawl; nothing to do (use --recrawl to crawl it again, or trawl export to read it)",
                    args.source.shown_path()
                ),
            }
            drop(crawler);
            return finished_exit(&args).await;
        }
        match crawler.crawl_id() {
            Some(id) => tracing::info!(
                crawl_id = id,
                created = crawler.created(),
                "{} the Redis crawl",
                if crawler.created() { "starting" } else { "joining" }
            ),
            None if crawler.is_resume() => {
                tracing::info!(db = %args.source.shown_path(), "resuming the crawl stored in the file")
            }
            None => {}
        }
        let progress = crawler.progress();
        watched(&args, show_progress, progress, crawler.run(shutdown_signal())).await
    })
}

/// Build the crawl the arguments name: a SQLite file, or this process's part of a Redis
/// crawl (`None` when Ctrl-C came while waiting for Redis).
async fn build(args: &CrawlArgs) -> Option<Result<Crawler, trawl::Error>> {
    let builder = args
        .layers
        .apply(Crawler::builder().seeds(args.seeds.iter().cloned()));
    match (&args.source.store, &args.source.db) {
        (Some(store), _) => {
            let build = builder
                .store(store.clone())
                .crawl_id(args.source.crawl_id.clone().unwrap_or_default())
                .build_distributed();
            tokio::select! {
                c = build => Some(c),
                _ = shutdown_signal() => None,
            }
        }
        (None, db) => Some(
            builder
                .db(db.clone().expect("clap requires --db without --store"))
                .recrawl(args.recrawl)
                .build(),
        ),
    }
}

/// Run a crawl with its progress shown (a line on a terminal, else a log every 10 s),
/// print its summary, and give the exit code.
async fn watched(
    args: &CrawlArgs,
    show_progress: bool,
    progress: trawl::Progress,
    run: impl std::future::Future<Output = Result<trawl::Summary, trawl::Error>>,
) -> ExitCode {
    let display = show_progress.then(|| progress::Display::start(progress.clone()));
    let logger = (!show_progress && !args.output.quiet)
        .then(|| progress::log_every(progress, std::time::Duration::from_secs(10)));
    let summary = run.await;
    if let Some(d) = display {
        d.finish();
    }
    if let Some(l) = logger {
        l.abort();
    }
    match summary {
        Ok(s) => {
            print_summary(args, &s);
            match s.outcome {
                Outcome::Interrupted => ExitCode::from(INTERRUPTED),
                _ => finished_exit(args).await,
            }
        }
        Err(e) => {
            let code = if e.is_usage() { BAD_INPUT } else { FAILED };
            fail(code, e)
        }
    }
}

/// The exit code of a finished crawl: success, unless `--fail-on-errors` and some URLs
/// failed or answered 4xx/5xx (counted over the whole crawl, every run of it).
async fn finished_exit(args: &CrawlArgs) -> ExitCode {
    if !args.fail_on_errors {
        return ExitCode::from(SUCCESS);
    }
    let source = &args.source;
    let readable = match readable(source).await {
        Ok(r) => r,
        Err(e) => return fail(FAILED, with_causes(&e)),
    };
    match trawl::status::read(&readable.path) {
        Ok(s) if s.broken == 0 => ExitCode::from(SUCCESS),
        Ok(s) => {
            eprintln!(
                "trawl: {} URLs failed or answered 4xx/5xx (--fail-on-errors); `trawl report {} broken` lists them",
                s.broken,
                source.shown()
            );
            ExitCode::from(FAILED)
        }
        Err(e) => fail(FAILED, e),
    }
}

/// The SQLite file a reading command reads: the `--db` file, or a temporary copy of a
/// Redis crawl (removed when dropped).
struct Readable {
    path: PathBuf,
    _copy: Option<tempfile::TempDir>,
}

async fn readable(source: &Source) -> anyhow::Result<Readable> {
    if let Some(local) = local_file(source)? {
        return Ok(local);
    }
    let (Some(store), Some(id)) = (&source.store, &source.crawl_id) else {
        anyhow::bail!("give --db FILE, or --store URL with --crawl-id NAME");
    };
    let dir = tempfile::Builder::new().prefix("trawl-copy").tempdir()?;
    let path = dir.path().join("crawl.db");
    trawl::store::redis::copy::to_sqlite(store, id, &path).await?;
    Ok(Readable {
        path,
        _copy: Some(dir),
    })
}

/// [`readable`] from outside a runtime: a Redis crawl's copy runs on a current-thread one.
fn readable_blocking(source: &Source) -> anyhow::Result<Readable> {
    if let Some(local) = local_file(source)? {
        return Ok(local);
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(readable(source))
}

/// The `--db` file, when the source is not a Redis crawl.
fn local_file(source: &Source) -> anyhow::Result<Option<Readable>> {
    if source.store.is_some() {
        return Ok(None);
    }
    let db = source
        .db
        .clone()
        .ok_or_else(|| anyhow::anyhow!("give --db FILE, or --store URL with --crawl-id NAME"))?;
    Ok(Some(Readable {
        path: db,
        _copy: None,
    }))
}

/// Completes on the first Ctrl-C (or SIGTERM): a clean stop. A second Ctrl-C exits at once;
/// the file stays resumable because every commit is atomic.
async fn shutdown_signal() {
    wait_signal().await;
    eprintln!("trawl: stopping: finishing fetches under way (Ctrl-C again to quit now)");
    tokio::spawn(async {
        wait_signal().await;
        eprintln!("trawl: quitting now; run the same command to resume");
        std::process::exit(i32::from(INTERRUPTED));
    });
}

async fn wait_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("installing a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn print_summary(args: &CrawlArgs, s: &trawl::Summary) {
    let r = &s.run;
    let status = match s.outcome {
        Outcome::Finished => "finished",
        Outcome::Interrupted => "interrupted (run the same command to resume)",
        Outcome::AlreadyFinished => "already finished",
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "crawl {status}: {} pages in {:.1}s ({:.1} pages/s), {} URLs known, {} queued",
        r.pages,
        r.elapsed.as_secs_f64(),
        r.rate(),
        s.known_urls,
        s.queued
    );
    let classes: Vec<String> = (1..=5)
        .filter(|&c| r.by_class[c] > 0)
        .map(|c| format!("{c}xx {}", r.by_class[c]))
        .collect();
    if !classes.is_empty() {
        let _ = writeln!(out, "  status: {}", classes.join(", "));
    }
    if !r.errors.is_empty() {
        let errs: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "  errors: {}", errs.join(", "));
    }
    match (&args.source.db, &args.source.crawl_id) {
        (Some(db), _) => {
            let _ = writeln!(out, "  stored in {}", db.display());
        }
        (None, Some(id)) => {
            let _ = writeln!(
                out,
                "  stored in Redis crawl {id:?} ({})",
                args.source.store.as_deref().unwrap_or_default()
            );
        }
        (None, None) => {}
    }
}

fn init_logging(args: &CrawlArgs, progress_shown: bool) {
    let level = if args.output.quiet || progress_shown {
        "warn"
    } else if args.output.verbose {
        "debug"
    } else {
        "info"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TRAWL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("trawl={level},warn")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let _ = match args.output.log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn export(args: ExportArgs) -> ExitCode {
    exit_for(run_export(&args), |e| {
        let x = e.downcast_ref::<trawl::export::ExportError>()?;
        Some((x.is_broken_pipe(), x.is_usage()))
    })
}

/// The exit of a command that reads a crawl: a reader gone away (`| head`) is success,
/// bad input exits 2, anything else 1. `classify` knows the command's own error type:
/// (broken pipe, bad input).
fn exit_for(
    result: anyhow::Result<()>,
    classify: impl Fn(&anyhow::Error) -> Option<(bool, bool)>,
) -> ExitCode {
    let Err(e) = result else {
        return ExitCode::from(SUCCESS);
    };
    let (broken_pipe, usage) = classify(&e).unwrap_or_else(|| {
        let usage = e
            .downcast_ref::<trawl::store::StoreError>()
            .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<trawl::store::redis::DistError>()
                .is_some_and(|d| d.is_usage());
        (false, usage)
    });
    if broken_pipe {
        return ExitCode::from(SUCCESS);
    }
    fail(if usage { BAD_INPUT } else { FAILED }, with_causes(&e))
}

fn run_export(args: &ExportArgs) -> anyhow::Result<()> {
    use trawl::export::{self, Filter, Format};
    let format: Format = args.format.parse().map_err(anyhow::Error::msg)?;
    let what = match &args.what {
        Some(w) => w.parse().map_err(anyhow::Error::msg)?,
        None => format.default_what(),
    };
    let filter = Filter {
        internal_only: args.internal_only,
        collapse: args.collapse,
        status: args
            .status
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?,
    };
    if let Some(to) = &args.to {
        let (store, id) = (
            args.source.store.as_deref().unwrap_or_default(),
            args.source.crawl_id.as_deref().unwrap_or_default(),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let copied = rt.block_on(trawl::store::redis::copy::to_sqlite(store, id, to))?;
        eprintln!(
            "copied crawl {id:?}: {} URLs ({} fetched), {} edges into {}",
            copied.urls,
            copied.pages,
            copied.edges,
            to.display()
        );
        return Ok(());
    }
    // Refused combinations must not leave an empty --out file behind.
    export::check(format, what, &filter)?;
    let readable = readable_blocking(&args.source)?;
    let store = SqliteStore::open(&readable.path, OpenMode::Read)?;
    let max = args.sitemap_max_urls;
    match (&args.out, format) {
        (Some(path), Format::Sitemap) => {
            export::sitemap_xml::to_files(&store, path, max)?;
        }
        (Some(path), _) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = std::io::BufWriter::new(file);
            export::export(&store, format, what, &filter, &mut w)?;
        }
        (None, Format::Sitemap) => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            export::sitemap_xml::to_writer(&store, max, &mut w)?;
            w.flush().map_err(export::ExportError::from)?;
        }
        (None, _) => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            export::export(&store, format, what, &filter, &mut w)?;
        }
    }
    Ok(())
}

fn report(args: ReportArgs) -> ExitCode {
    exit_for(run_report(&args), |e| {
        let x = e.downcast_ref::<trawl::report::ReportError>()?;
        Some((x.is_broken_pipe(), x.is_usage()))
    })
}

fn run_report(args: &ReportArgs) -> anyhow::Result<()> {
    use trawl::report::{self, Kind, OutputFormat};
    let kind: Kind = args.kind.parse().map_err(anyhow::Error::msg)?;
    let format: OutputFormat = args.format.parse().map_err(anyhow::Error::msg)?;
    let readable = readable_blocking(&args.source)?;
    let store = SqliteStore::open(&readable.path, OpenMode::Read)?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    report::run(&store, kind, format, args.limit, &mut w)?;
    w.flush().map_err(report::ReportError::from)?;
    Ok(())
}

fn status(args: StatusArgs) -> ExitCode {
    if let (Some(store), Some(id)) = (&args.source.store, &args.source.crawl_id) {
        return redis_status(store, id, args.format);
    }
    let Some(db) = &args.source.db else {
        return fail(
            BAD_INPUT,
            "give --db FILE, or --store URL with --crawl-id NAME",
        );
    };
    let s = match trawl::status::read(db) {
        Ok(s) => s,
        Err(e) => {
            let usage = e.is_usage();
            return fail(if usage { BAD_INPUT } else { FAILED }, e);
        }
    };
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        StatusFormat::Text => status_view::text(&s, &mut out),
        StatusFormat::Json => status_view::json(&s, &mut out),
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(FAILED, e),
        _ => ExitCode::from(SUCCESS),
    }
}

fn redis_status(store: &str, id: &str, format: StatusFormat) -> ExitCode {
    let read = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| Ok(rt.block_on(trawl::store::redis::status::read(store, id))?));
    let s = match read {
        Ok(s) => s,
        Err(e) => {
            let usage = e
                .downcast_ref::<trawl::store::redis::DistError>()
                .is_some_and(|d| d.is_usage());
            return fail(if usage { BAD_INPUT } else { FAILED }, with_causes(&e));
        }
    };
    let mut out = std::io::stdout().lock();
    let written = match format {
        StatusFormat::Json => serde_json::to_writer_pretty(&mut out, &s)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out)),
        StatusFormat::Text => status_view::redis_text(&s, &mut out),
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(FAILED, e),
        _ => ExitCode::from(SUCCESS),
    }
}

fn config(args: ConfigArgs) -> ExitCode {
    match show_config(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::from(SUCCESS)
        }
        Err(e) => {
            let failed = e
                .downcast_ref::<trawl::store::StoreError>()
                .is_some_and(|s| !s.is_usage());
            fail(if failed { FAILED } else { BAD_INPUT }, with_causes(&e))
        }
    }
}

/// The effective configuration as TOML, with a comment header naming its layers. Reads
/// `--db` only when it exists, and read-only.
fn show_config(args: &ConfigArgs) -> anyhow::Result<String> {
    let mut header =
        vec!["# The configuration `trawl crawl` uses with these arguments.".to_string()];
    let mut stored = None;
    match &args.db {
        None => header.push("# base: the defaults (no --db given)".into()),
        Some(db) if !db.exists() || std::fs::metadata(db)?.len() == 0 => header.push(format!(
            "# base: the defaults ({} holds no crawl yet: a crawl would start there)",
            db.display()
        )),
        Some(db) => match trawl::status::stored_crawl(db)? {
            None => header.push(format!(
                "# base: the defaults ({} holds no crawl yet)",
                db.display()
            )),
            Some(row) => {
                let state = if row.finished_at.is_some() {
                    "a finished crawl: `trawl crawl` does nothing without --recrawl, which keeps this configuration"
                } else {
                    "an unfinished crawl: `trawl crawl` resumes it with this configuration"
                };
                header.push(format!(
                    "# base: the configuration stored in {} ({state})",
                    db.display()
                ));
                stored = Some(CrawlConfig::from_toml(&row.config)?);
            }
        },
    }
    if let Some(path) = &args.layers.config {
        header.push(format!("# then: --config {}", path.display()));
    }
    let flags = args.layers.options.to_patch();
    if !flags.is_empty() {
        let keys: Vec<&str> = flags.keys().map(String::as_str).collect();
        header.push(format!("# then: the flags setting {}", keys.join(", ")));
    }
    let config = args.layers.effective(stored.as_ref())?;
    Ok(format!("{}\n\n{}", header.join("\n"), config.to_toml()))
}

fn completions(args: CompletionsArgs) -> ExitCode {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "trawl", &mut out);
    ExitCode::from(SUCCESS)
}

fn man(args: ManArgs) -> ExitCode {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    cmd.build();
    let page = match &args.command {
        None => clap_mangen::Man::new(cmd),
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => {
                let title = format!("trawl-{}", sub.get_name());
                clap_mangen::Man::new(sub.clone()).title(title)
            }
            None => {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .map(|c| c.get_name())
                    .filter(|&n| n != "help")
                    .collect();
                return fail(
                    BAD_INPUT,
                    format!("no command `{name}`; the commands are {}", names.join(", ")),
                );
            }
        },
    };
    let page = page.source(format!("trawl {}", env!("CARGO_PKG_VERSION")));
    let mut roff = Vec::new();
    if let Err(e) = page.render(&mut roff) {
        return fail(FAILED, e);
    }
    // A man page opens with its .TH line; clap_mangen puts the definition of the
    // apostrophe string first, which may as well follow it.
    let roff = String::from_utf8_lossy(&roff);
    let mut lines: Vec<&str> = roff.lines().collect();
    if let Some(i) = lines.iter().position(|l| l.starts_with(".TH ")) {
        let th = lines.remove(i);
        lines.insert(0, th);
    }
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", lines.join("\n")).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(FAILED, e),
        _ => ExitCode::from(SUCCESS),
    }
}
