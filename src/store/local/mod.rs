//! The local store: a crawl in one SQLite file, crawled by one process.
//!
//! The frontier's per-host queues and the visited set live in memory, so no step of the
//! hot path leaves the process; their truth is the file, written by one writer thread in
//! batched transactions (`writer`). A URL's row is appended to the pending buffer
//! (`pending`) before the URL is visible to anyone, so every message that mentions a URL
//! finds its row written in the same or an earlier transaction, and after a crash every
//! committed edge points at a stored URL. `sqlite` opens, checks, migrates and locks the
//! file and reads back what a resumed crawl needs; `gate` admits candidates through the
//! visited set (`visited`); `drain` counts what is admitted and not yet finished.

// What a file keeps of its link checks between runs.
pub(crate) mod check_cache;
pub mod columns;
pub mod drain;
pub mod error;
pub mod frontier;
pub mod gate;
pub(crate) mod generations;
pub mod history;
pub mod pending;
pub mod sqlite;
pub mod visited;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Notify};
use url::Url;

use self::drain::{Drain, DrainGuard};
use self::error::StoreError;
use self::frontier::{Frontier, HostPolicy, HostSlot, QueuedUrl, REFILL_BATCH};
use self::gate::Gate;
use self::pending::{HostId, PageRecord, Pending, UrlId};
use self::sqlite::SqliteStore;
use self::visited::{Footprint, Visited};
use self::writer::{StoreWriter, WriterHandle};
use super::{now_ms, Finished, FrontierCounts, HostState, Job, SitemapDoc, Store, Taken};
use crate::admit::{Outlinks, Rules, SkipReason};
use crate::config::CrawlConfig;
use crate::result::PageResult;
use crate::warc::CommitBarrier;

/// See the module doc.
pub struct LocalStore {
    gate: Arc<Gate>,
    frontier: Arc<Frontier>,
    pending: Arc<Pending>,
    drain: Arc<Drain>,
    wake: Arc<Notify>,
    writer: WriterHandle,
    /// The writer thread, joined by `finish`.
    thread: Mutex<Option<StoreWriter>>,
    /// A refill of a host's queue from disk failed: the run stops with this error.
    refill_failed: mpsc::UnboundedSender<StoreError>,
    refill_errors: Mutex<mpsc::UnboundedReceiver<StoreError>>,
    path: PathBuf,
}

/// A local job's handle: its row, its share of the drain counter, its host slot.
pub struct LocalTicket {
    id: UrlId,
    guard: DrainGuard,
    slot: HostSlot,
}

impl LocalStore {
    /// Take over `store` for a run: rebuild the visited set and the queues from it (a
    /// resumed crawl), mark it running and start its writer, whose commits wait on
    /// `barrier` (the WARC records of the pages they commit).
    pub fn start(
        mut store: SqliteStore,
        config: &CrawlConfig,
        rules: Arc<Rules>,
        barrier: Option<CommitBarrier>,
    ) -> Result<LocalStore, StoreError> {
        let wake = Arc::new(Notify::new());
        let pending = Arc::new(Pending::default());
        let policy = HostPolicy {
            per_host: config.per_host,
            interval: config.host_interval(),
        };
        let frontier = Arc::new(Frontier::new(policy, pending.clone(), wake.clone()));
        let drain = Drain::new(0, wake.clone());
        let dir = visited_dir(store.path());
        let visited = Visited::with_budget(config.visited_memory.0, &dir).map_err(|source| {
            StoreError::VisitedDir {
                dir: dir.display().to_string(),
                source,
            }
        })?;
        let gate = Arc::new(Gate::new(
            rules,
            visited,
            pending.clone(),
            frontier.clone(),
            drain.clone(),
        ));
        store.mark_running(true)?;
        restore(&mut store, &gate, &frontier, &drain)?;
        let path = store.path().to_owned();
        let (thread, writer) = StoreWriter::spawn_with_barrier(store, pending.clone(), barrier);
        let (refill_failed, refill_errors) = mpsc::unbounded_channel();
        Ok(LocalStore {
            gate,
            frontier,
            pending,
            drain,
            wake,
            writer,
            thread: Mutex::new(Some(thread)),
            refill_failed,
            refill_errors: Mutex::new(refill_errors),
            path,
        })
    }

    /// Read back the spilled URLs of the hosts that asked, off the dispatcher's path.
    fn start_refills(&self) {
        for host in self.frontier.take_refill_requests() {
            let writer = self.writer.clone();
            let frontier = self.frontier.clone();
            let drain = self.drain.clone();
            let failed = self.refill_failed.clone();
            tokio::spawn(async move {
                match writer.refill(host, REFILL_BATCH).await {
                    Ok(rows) => {
                        let consumed = rows.len();
                        let items = rows
                            .into_iter()
                            .filter_map(|r| {
                                // Adopt first: a row that no longer parses still releases
                                // its count.
                                let guard = drain.adopt();
                                Some(QueuedUrl {
                                    id: r.id,
                                    url: Url::parse(&r.url).ok()?,
                                    depth: r.depth,
                                    host,
                                    chain: Vec::new(),
                                    attempts: 0,
                                    validators: r.validators,
                                    guard,
                                })
                            })
                            .collect();
                        frontier.refilled(host, items, consumed);
                    }
                    Err(e) => {
                        let _ = failed.send(e);
                    }
                }
            });
        }
    }

    fn job(&self, item: QueuedUrl) -> Job<LocalStore> {
        Job {
            url: item.url,
            host: item.host,
            depth: item.depth,
            attempts: item.attempts,
            chain: item.chain,
            validators: item.validators,
            ticket: LocalTicket {
                id: item.id,
                guard: item.guard,
                slot: HostSlot {
                    frontier: self.frontier.clone(),
                    host: item.host,
                },
            },
        }
    }

    fn sqlite_error(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }
}

/// The visited set's overflow files go beside the database.
fn visited_dir(db: &Path) -> PathBuf {
    match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Rebuild the visited set and the frontier from the file.
fn restore(
    store: &mut SqliteStore,
    gate: &Gate,
    frontier: &Frontier,
    drain: &Arc<Drain>,
) -> Result<(), StoreError> {
    let resumed = store.resume(|url| gate.restore_url(url))?;
    for (id, name) in resumed.hosts {
        gate.restore_host(id, name);
    }
    for (host, until_ms) in resumed.paused {
        let left = Duration::from_millis((until_ms - now_ms()).max(0) as u64);
        frontier.pause(host, Instant::now() + left);
    }
    gate.restore_admitted(resumed.admitted, resumed.admitted_per_host);
    let mut queued_total = 0;
    for (host, n) in resumed.queued_per_host {
        queued_total += n;
        frontier.add_spilled(host, n);
    }
    // Spilled URLs keep their counts without guard objects.
    for _ in 0..queued_total {
        drain.admit().spill();
    }
    tracing::info!(
        known = gate.known(),
        queued = queued_total,
        "crawl starting"
    );
    Ok(())
}

impl Store for LocalStore {
    type Host = HostId;
    type Ticket = LocalTicket;
    type Error = StoreError;

    async fn admit_seeds(&self, seeds: &[Url]) -> Result<(), StoreError> {
        self.gate.admit_seeds(seeds);
        Ok(())
    }

    async fn take(&self, room: usize) -> Result<Taken<Self>, StoreError> {
        if let Ok(e) = self
            .refill_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .try_recv()
        {
            return Err(e);
        }
        self.start_refills();
        let now = Instant::now();
        let mut jobs = Vec::new();
        let mut next = None;
        while jobs.len() < room.max(1) {
            match self.frontier.pop(now) {
                Ok(item) => jobs.push(self.job(item)),
                Err(at) => {
                    next = at;
                    break;
                }
            }
        }
        Ok(Taken { jobs, next })
    }

    async fn wait(&self, until: Option<Instant>) {
        // `notify_one` keeps a permit when nobody waits, so a change made between the
        // last take and this wait is not missed.
        match until {
            Some(t) => {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = tokio::time::sleep_until(t.into()) => {}
                }
            }
            None => self.wake.notified().await,
        }
    }

    async fn is_drained(&self) -> Result<bool, StoreError> {
        Ok(self.drain.count() == 0)
    }

    fn depth_now(&self, job: &Job<Self>, hash: u128) -> u32 {
        self.gate
            .depth_of(hash)
            .map_or(job.depth, |d| d.min(job.depth))
    }

    async fn started(&self, host: &HostId) -> Result<Option<Instant>, StoreError> {
        Ok(self.frontier.started(*host))
    }

    async fn pause(&self, host: &HostId, until: Instant) -> Result<(), StoreError> {
        self.frontier.pause(*host, until);
        Ok(())
    }

    async fn retry(&self, job: Job<Self>, at: Instant) -> Result<(), StoreError> {
        let LocalTicket { id, guard, slot } = job.ticket;
        let item = QueuedUrl {
            id,
            url: job.url,
            depth: job.depth,
            host: job.host,
            chain: job.chain,
            attempts: job.attempts + 1,
            validators: job.validators,
            guard,
        };
        // Keeps its drain guard while it waits; its host slot is given back now.
        self.frontier.retry_at(item, at);
        drop(slot);
        Ok(())
    }

    async fn complete(
        &self,
        job: Job<Self>,
        result: PageResult,
        links: Outlinks,
    ) -> Result<(), StoreError> {
        let LocalTicket { id, guard, slot } = job.ticket;
        let edges = self.gate.admit_outlinks(id, links);
        let sent = self.writer.page(PageRecord { id, result, edges }).await;
        // The drain guard drops only now, after its result is queued.
        drop((guard, slot));
        sent
    }

    async fn release(&self, job: Job<Self>) -> Result<(), StoreError> {
        let LocalTicket { id, guard, slot } = job.ticket;
        self.frontier.push_front(QueuedUrl {
            id,
            url: job.url,
            depth: job.depth,
            host: job.host,
            chain: job.chain,
            attempts: job.attempts,
            validators: job.validators,
            guard,
        });
        drop(slot);
        Ok(())
    }

    async fn skip(&self, job: Job<Self>, reason: SkipReason) -> Result<(), StoreError> {
        // Recorded as skipped; dropping the ticket releases its count and slot.
        self.pending.push_skip(job.ticket.id, reason);
        Ok(())
    }

    fn set_interval(&self, host: &HostId, interval: Duration) {
        self.frontier.set_interval(*host, interval);
    }

    async fn occupy(&self, host: &HostId) -> Result<bool, StoreError> {
        Ok(self.frontier.try_occupy(*host))
    }

    async fn vacate(&self, host: &HostId) -> Result<(), StoreError> {
        self.frontier.release(*host);
        Ok(())
    }

    async fn book(&self, host: &HostId) -> Result<Instant, StoreError> {
        Ok(self.frontier.book(*host))
    }

    async fn sitemaps_to_read(
        &self,
        _host: &HostId,
        listed: Vec<Url>,
    ) -> Result<Vec<Url>, StoreError> {
        // A sitemap stored already was read by an earlier run of the crawl.
        Ok(listed
            .into_iter()
            .filter(|u| !self.gate.is_known(u))
            .collect())
    }

    async fn record_sitemap(&self, doc: SitemapDoc) -> Result<bool, StoreError> {
        let parent = doc.parent.as_ref().and_then(|p| self.gate.id_of(p));
        let Some((id, edges)) = self
            .gate
            .admit_sitemap(&doc.url, parent, &doc.entries, doc.index)
        else {
            return Ok(false);
        };
        let record = PageRecord {
            id,
            result: doc.result,
            edges,
        };
        self.writer.page(record).await?;
        Ok(true)
    }

    fn counts(&self) -> FrontierCounts {
        self.frontier.counts()
    }

    async fn host_states(&self, hosts: Vec<HostId>) -> Result<Vec<HostState>, StoreError> {
        Ok(hosts
            .into_iter()
            .map(|h| self.frontier.host_state(h))
            .collect())
    }

    fn footprint(&self) -> Footprint {
        self.gate.visited_footprint()
    }

    async fn finish(&self, drained: bool) -> Result<Finished, StoreError> {
        self.writer.close().await;
        let visited = self.gate.visited_footprint();
        if visited.runs > 0 {
            tracing::info!(
                memory_bytes = visited.memory,
                on_disk = visited.on_disk,
                runs = visited.runs,
                "visited set past visited-memory: part of it was on disk"
            );
        }
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(thread) = thread else {
            return Err(StoreError::WriterGone);
        };
        let store = tokio::task::spawn_blocking(move || thread.join())
            .await
            .unwrap_or(Err(StoreError::WriterGone))?;
        let finished = (|| {
            if drained {
                store.mark_finished(now_ms())?;
            }
            let count = |sql: &str| store.conn().query_row(sql, [], |r| r.get::<_, i64>(0));
            Ok(Finished {
                known_urls: count("SELECT count(*) FROM urls")? as u64,
                queued: count("SELECT count(*) FROM urls WHERE state = 0")? as u64,
                visited,
            })
        })()
        .map_err(|e| self.sqlite_error(e));
        store.mark_running(false)?;
        finished
    }
}
