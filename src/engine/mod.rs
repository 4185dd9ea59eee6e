//! The crawl engine, written once over the store seam (`store::Store`): the run loop
//! (this file) wires a dispatcher (`dispatch`), a pool of workers (`worker`) and host
//! preparation (`politeness::prepare`) to a store, and runs until the crawl is drained or
//! the `shutdown` future completes. A local crawl and a Redis crawl differ only in the
//! store they are given.

pub mod dispatch;
pub mod worker;

use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use url::Url;

use self::dispatch::Dispatcher;
use self::worker::{join_pool, Failure, PageHook, Worker};
use crate::admit::Rules;
use crate::config::CrawlConfig;
use crate::events::EventSink;
use crate::live::{HostBoard, Progress};
use crate::page::Reader;
use crate::politeness::hosts::HostRules;
use crate::politeness::prepare::Preparer;
use crate::politeness::robots::product_token;
use crate::stats::RunCounts;
use crate::store::{Footprint, Store};
use crate::warc::Warc;
use crate::Error;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The frontier drained: every in-scope URL was fetched. The crawl is marked finished.
    Finished,
    /// Stopped by the shutdown future; run again to resume.
    Interrupted,
    /// The crawl was already finished; nothing was fetched.
    AlreadyFinished,
}

/// What a run reports.
#[derive(Debug, Clone)]
pub struct Summary {
    /// How the run ended.
    pub outcome: Outcome,
    /// Whether this run continued an earlier one (for a Redis crawl: joined a crawl that
    /// another process created).
    pub resumed: bool,
    /// Counts for this run (this process).
    pub run: RunCounts,
    /// URLs known to the crawl (all runs, all processes): fetched, queued and skipped.
    pub known_urls: u64,
    /// URLs still queued.
    pub queued: u64,
    /// Where the visited set was at the end of the run: bytes in memory, URLs moved to
    /// disk past `visited-memory` (local crawls; a Redis crawl keeps it in Redis).
    pub visited: Footprint,
}

/// Everything a run needs besides its store.
pub struct Run {
    /// The configuration.
    pub config: CrawlConfig,
    /// Reads pages (its fetcher writes the WARC records, when asked for).
    pub reader: Reader,
    /// Canonical keys and skip reasons.
    pub rules: Arc<Rules>,
    /// Seeds to admit.
    pub seeds: Vec<Url>,
    /// The user's page hook.
    pub hook: Option<PageHook>,
    /// Where page events go.
    pub events: Option<EventSink>,
    /// The live view.
    pub progress: Progress,
    /// The WARC file, synced before the run ends.
    pub warc: Option<Warc>,
    /// Whether this run continues an earlier one.
    pub resumed: bool,
    /// Stops the run (a Redis store's connection stops retrying with it too).
    pub cancel: CancellationToken,
}

/// Crawl `store` until it is drained or `shutdown` completes. After a shutdown, fetches
/// under way get the configured grace period to finish; everything finished is kept, and
/// running again resumes.
pub async fn run<S: Store>(
    store: Arc<S>,
    mut run: Run,
    shutdown: impl Future<Output = ()>,
) -> Result<Summary, Error>
where
    Error: From<S::Error>,
{
    // The metrics endpoint lives exactly as long as this run.
    let _metrics = serve_metrics(&run.config, &run.progress).await?;
    run.progress.watch(&store);
    store.admit_seeds(&run.seeds).await?;
    let failure = Arc::new(Failure::default());
    let (tx, rx) = async_channel::bounded(run.config.concurrency);
    let hosts = host_rules(&run.config);
    // Counted per page only when the run serves its page.
    let board = (!run.config.ui.is_empty()).then(|| run.progress.watch_hosts(&store, &hosts));
    let dispatcher = dispatcher(&store, &run, hosts, board.clone());
    let mut workers = start_workers(&store, &mut run, &failure, rx, board);
    let drained = dispatch(dispatcher, tx, &run.cancel, shutdown).await;
    // The dispatcher dropped the channel's sender: workers finish what they hold.
    join_pool(&mut workers, &run.cancel, run.config.grace_period).await;
    let (finished, at_end) = end(&*store, drained, run.warc.take(), &failure).await?;
    Ok(Summary {
        outcome: if finished {
            Outcome::Finished
        } else {
            Outcome::Interrupted
        },
        resumed: run.resumed,
        run: run.progress.stats.snapshot(run.progress.started.elapsed()),
        known_urls: at_end.known_urls,
        queued: at_end.queued,
        visited: at_end.visited,
    })
}

/// Serve the metrics endpoint when asked for; it stops when the returned sender drops.
async fn serve_metrics(
    config: &CrawlConfig,
    progress: &Progress,
) -> Result<tokio::sync::oneshot::Sender<()>, Error> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    if !config.metrics_addr.is_empty() {
        let addr = crate::metrics::serve(&config.metrics_addr, progress.clone(), async {
            let _ = stopped.await;
        })
        .await?;
        tracing::info!(%addr, "serving metrics");
    }
    Ok(stop)
}

/// The worker pool, reading `rx`; it takes the run's reader, hook and event sink.
fn start_workers<S: Store>(
    store: &Arc<S>,
    run: &mut Run,
    failure: &Arc<Failure>,
    rx: async_channel::Receiver<crate::store::Job<S>>,
    board: Option<Arc<HostBoard<S::Host>>>,
) -> tokio::task::JoinSet<()>
where
    Error: From<S::Error>,
{
    let (hook, events) = (run.hook.take(), run.events.take());
    let reader = Reader {
        events: hook.is_some() || events.is_some(),
        bodies: events.as_ref().is_some_and(|e| e.bodies),
        ..run.reader.clone()
    };
    let worker = Arc::new(Worker {
        reader,
        store: store.clone(),
        rules: run.rules.clone(),
        stats: run.progress.stats.clone(),
        cancel: run.cancel.clone(),
        hook,
        events,
        failure: failure.clone(),
        board,
    });
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..run.config.concurrency {
        workers.spawn(worker.clone().run(rx.clone()));
    }
    workers
}

/// What this process learns of each host: robots.txt unless ignored, and whether sitemaps
/// are read.
fn host_rules<H: std::hash::Hash + Eq + Clone>(config: &CrawlConfig) -> Arc<HostRules<H>> {
    Arc::new(HostRules::new(
        (!config.ignore_robots).then(|| product_token(&config.user_agent).to_ascii_lowercase()),
        config.sitemaps,
    ))
}

/// The dispatcher, with the host preparation it starts.
fn dispatcher<S: Store>(
    store: &Arc<S>,
    run: &Run,
    hosts: Arc<HostRules<S::Host>>,
    board: Option<Arc<HostBoard<S::Host>>>,
) -> Dispatcher<S> {
    let config = &run.config;
    Dispatcher {
        store: store.clone(),
        hosts: hosts.clone(),
        preparer: Arc::new(Preparer {
            store: store.clone(),
            fetcher: run.reader.fetcher.clone(),
            hosts,
            sitemaps: config.sitemaps,
            max_crawl_delay: config.max_crawl_delay,
        }),
        cancel: run.cancel.clone(),
        stats: run.progress.stats.clone(),
        rules: run.rules.clone(),
        board,
    }
}

/// Run the dispatcher until it ends or `shutdown` completes (then it sees the stop at its
/// next step); whether the crawl drained.
async fn dispatch<S: Store>(
    dispatcher: Dispatcher<S>,
    tx: async_channel::Sender<crate::store::Job<S>>,
    cancel: &CancellationToken,
    shutdown: impl Future<Output = ()>,
) -> Result<bool, Error>
where
    Error: From<S::Error>,
{
    // A task of its own, on the runtime's worker threads: the caller's future may be run
    // by `block_on` on a thread of its own, and a dispatcher there would be woken across
    // threads at every freed host slot (three times the context switches, measured).
    let mut run = tokio::spawn(dispatcher.run(tx));
    tokio::pin!(shutdown);
    let joined = tokio::select! {
        r = &mut run => r,
        _ = &mut shutdown => {
            tracing::info!("stop requested: finishing fetches under way");
            cancel.cancel();
            run.await
        }
    };
    let result =
        joined.unwrap_or_else(|e| Err(Error::Internal(format!("the dispatcher failed: {e}"))));
    match result {
        // The store was away when the stop came: nothing more to take anyway.
        Err(e) if e.is_unreachable() && cancel.is_cancelled() => Ok(false),
        Err(e) => {
            cancel.cancel();
            Err(e)
        }
        ok => ok,
    }
}

/// End the run: sync the WARC file, then let the store commit and (when drained and
/// every record is written) mark the crawl finished. The first error wins: the store's,
/// the WARC file's, the dispatcher's, a worker's.
async fn end<S: Store>(
    store: &S,
    drained: Result<bool, Error>,
    warc: Option<Warc>,
    failure: &Failure,
) -> Result<(bool, crate::store::Finished), Error>
where
    Error: From<S::Error>,
{
    // Records of fetches that committed nothing (robots.txt, an abandoned page) are
    // written too before the run reports.
    let warc_done = match warc {
        Some(w) => tokio::task::spawn_blocking(move || w.finish())
            .await
            .map_err(|e| Error::Internal(format!("WARC writer panicked: {e}")))
            .and_then(|r| r.map_err(Error::Warc)),
        None => Ok(()),
    };
    let failed = failure.take();
    let ok = matches!(drained, Ok(true)) && warc_done.is_ok() && failed.is_none();
    let finished = store.finish(ok).await?;
    warc_done?;
    drained?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok((ok, finished))
}
