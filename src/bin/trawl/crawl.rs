//! `trawl crawl`: build the crawl (a SQLite file, or this process's part of a Redis crawl),
//! show its progress, print its summary, and exit with its code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::cli::{ConfigLayers, CrawlArgs, LogFormat, Recheck};
use crate::exit::{fail, with_causes, BAD_INPUT, FAILED, INTERRUPTED, SUCCESS};
use crate::{progress, source};
use trawl::report::LinkClasses;
use trawl::{Crawler, CrawlerBuilder, Outcome};

impl ConfigLayers {
    /// Hand the layers to a crawl's builder, which lays them over its base.
    fn apply(&self, mut builder: CrawlerBuilder) -> CrawlerBuilder {
        if let Some(path) = &self.config {
            builder = builder.config_file(path);
        }
        builder.options(self.options.to_patch())
    }
}

pub(crate) fn crawl(args: CrawlArgs) -> ExitCode {
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
            if let (Some(id), Some(db)) = (crawler.crawl_id(), &args.source.db) {
                // Results its collector had not written yet are collected now.
                let id = id.to_owned();
                if let Err(e) = crawler.run(std::future::pending()).await {
                    return fail(FAILED, e);
                }
                println!(
                    "crawl {id:?} is finished; its results are all in {} (trawl export --db reads it)",
                    db.display()
                );
                return finished_exit(&args).await;
            }
            match crawler.crawl_id() {
                Some(id) => println!(
                    "crawl {id:?} is finished; nothing to do (trawl export --store ... --crawl-id {id} reads it)"
                ),
                None => println!(
                    "{} holds a finished crawl; nothing to do (use --refresh to ask its pages again, --recrawl to crawl it again, or trawl export to read it)",
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
        if !crawler.config().ui.is_empty() {
            eprintln!("trawl: the crawl's page: http://{}/", crawler.config().ui);
        }
        let progress = crawler.progress();
        watched(&args, show_progress, progress, crawler.run(shutdown_signal())).await
    })
}

/// Build the crawl the arguments name: a SQLite file, or this process's part of a Redis
/// crawl (`None` when Ctrl-C came while waiting for Redis).
pub(crate) async fn build(args: &CrawlArgs) -> Option<Result<Crawler, trawl::Error>> {
    let builder = args
        .layers
        .apply(Crawler::builder().seeds(args.seeds.iter().cloned()))
        .recrawl(args.recrawl)
        .recheck_failed(args.recheck == Some(Recheck::Failed))
        .refresh(args.refresh);
    match (&args.source.store, &args.source.db) {
        (Some(store), db) => {
            let builder = match db {
                Some(db) => builder.db(db.clone()),
                None => builder,
            };
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
                .build(),
        ),
    }
}

/// Run a crawl with its progress shown (a line on a terminal, else a log every 10 s),
/// print its summary, and give the exit code.
pub(crate) async fn watched(
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
                _ if s.run.no_seed_fetched() => fail(
                    FAILED,
                    "no seed could be fetched (errors above): check each URL, the network and DNS, or --proxy; `trawl report broken` lists them",
                ),
                _ => finished_exit(args).await,
            }
        }
        Err(e) => {
            let code = if e.is_usage() { BAD_INPUT } else { FAILED };
            fail(code, e)
        }
    }
}

/// The exit code of a finished crawl: success, unless `--fail-on` (or `--fail-on-errors`)
/// and the crawl has links of those classes (counted over the whole crawl, every run of it,
/// as `trawl report broken --class` lists them).
pub(crate) async fn finished_exit(args: &CrawlArgs) -> ExitCode {
    let (classes, flag) = match (args.fail_on, args.fail_on_errors) {
        (Some(classes), _) => (classes, format!("--fail-on {classes}")),
        (None, true) => (LinkClasses::ERRORS, "--fail-on-errors".to_string()),
        (None, false) => return ExitCode::from(SUCCESS),
    };
    let source = &args.source;
    let readable = match source::readable(source).await {
        Ok(r) => r,
        Err(e) => return fail(FAILED, with_causes(&e)),
    };
    match trawl::status::link_counts(&readable.path, classes) {
        Ok(counts) if counts.total() == 0 => ExitCode::from(SUCCESS),
        Ok(counts) => {
            let n = counts.total();
            eprintln!(
                "trawl: {n} {} to fix ({}; {flag}); `trawl report {} broken --class {classes}` lists them",
                if n == 1 { "link" } else { "links" },
                counts.describe(classes),
                source.shown()
            );
            ExitCode::from(FAILED)
        }
        Err(e) => fail(FAILED, e),
    }
}

/// Completes on the first Ctrl-C (or SIGTERM): a clean stop. A second Ctrl-C exits at once;
/// the file stays resumable because every commit is atomic.
pub(crate) async fn shutdown_signal() {
    wait_signal().await;
    eprintln!("trawl: stopping: finishing fetches under way (Ctrl-C again to quit now)");
    tokio::spawn(async {
        wait_signal().await;
        eprintln!("trawl: quitting now; run the same command to resume");
        std::process::exit(i32::from(INTERRUPTED));
    });
}

pub(crate) async fn wait_signal() {
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

pub(crate) fn print_summary(args: &CrawlArgs, s: &trawl::Summary) {
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
    if r.not_modified + r.same_content > 0 {
        let _ = writeln!(
            out,
            "  refresh: {} not modified (304), {} same content, {} changed or new",
            r.not_modified,
            r.same_content,
            r.pages.saturating_sub(r.not_modified + r.same_content)
        );
    }
    if !r.errors.is_empty() {
        let errs: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "  errors: {}", errs.join(", "));
    }
    for seed in &r.failed_seeds {
        let _ = writeln!(out, "  seed failed: {seed}");
    }
    match (&args.source.db, &args.source.crawl_id) {
        (Some(db), None) => {
            let _ = writeln!(out, "  stored in {}", db.display());
        }
        (db, Some(id)) => {
            let _ = writeln!(
                out,
                "  stored in Redis crawl {id:?} ({})",
                args.source.store.as_deref().unwrap_or_default()
            );
            if let Some(db) = db {
                let _ = writeln!(out, "  results collected into {}", db.display());
            }
        }
        (None, None) => {}
    }
}

pub(crate) fn init_logging(args: &CrawlArgs, progress_shown: bool) {
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
