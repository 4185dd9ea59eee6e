//! Where a crawl stands, read from its file: for `trawl status` in another terminal while
//! a crawl runs, or afterwards.
//!
//! Read-only and lock-free: the file is opened like `trawl export` opens it, and whether
//! a crawler holds it is asked of the advisory lock (taken and released at once when it is
//! free, never held). The `-wal` and `-shm` files a read-only connection creates beside a
//! finished crawl are removed again, so reading leaves the file as it was.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::check::{ClassCounts, LinkClasses};
use crate::result::{FailedSeed, MAX_FAILED_SEEDS};
use crate::store::{now_ms, CrawlRow, OpenMode, SqliteStore, StoreError, UrlState};

/// The window of [`Status::recent_rate`].
pub const RECENT_WINDOW_MS: i64 = 60_000;

/// Whether a crawl is going on in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// No crawl was started in the file yet.
    NotStarted,
    /// A trawl process holds the file and is crawling.
    Running,
    /// Unfinished and nobody crawling: stopped by Ctrl-C, killed or crashed. `trawl crawl
    /// --db FILE` resumes it.
    Stopped,
    /// The frontier drained: every in-scope URL was fetched.
    Finished,
}

impl State {
    /// The name shown to people and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            State::NotStarted => "not-started",
            State::Running => "running",
            State::Stopped => "stopped",
            State::Finished => "finished",
        }
    }
}

/// A snapshot of a crawl. Times are Unix milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The file read.
    pub db: PathBuf,
    /// Running, stopped, finished, or not started.
    pub state: State,
    /// The process recorded as crawling (`crawl.running_pid`); after a kill it stays
    /// behind while `locked` is false.
    pub running_pid: Option<i64>,
    /// Whether a crawler holds the file's advisory lock now.
    pub locked: bool,
    /// The crawl's seeds.
    pub seeds: Vec<String>,
    /// When the crawl started.
    pub started_at: Option<i64>,
    /// The last commit of the crawl.
    pub updated_at: Option<i64>,
    /// When the frontier drained.
    pub finished_at: Option<i64>,
    /// When this snapshot was taken.
    pub now: i64,
    /// Start to now (running), to the finish, or to the last commit (stopped). Includes
    /// any time a resumed crawl spent stopped.
    pub elapsed_ms: Option<i64>,
    /// URLs the crawl knows.
    pub known: u64,
    /// Fetched: a response came.
    pub done: u64,
    /// No usable response.
    pub failed: u64,
    /// Waiting to be fetched.
    pub queued: u64,
    /// Never to be fetched (out of scope, limits, robots.txt, ...).
    pub skipped: u64,
    /// URLs by HTTP status class (`"2xx"` ... `"5xx"`).
    pub status_classes: BTreeMap<String, u64>,
    /// Failed URLs by error kind (`timeout`, `connect`, ...).
    pub errors: BTreeMap<String, u64>,
    /// URLs whose fetch started in the last minute.
    pub recent_pages: u64,
    /// Those per second, over the last minute (or since the start, when it is more
    /// recent); `None` unless running.
    pub recent_rate: Option<f64>,
    /// URLs that failed or answered 4xx/5xx, each once (by class, and with the links to
    /// them, see [`link_counts`]).
    pub broken: u64,
    /// Seeds (depth-0 URLs, or where they redirect) that got no usable response, with
    /// their errors: the first [`MAX_FAILED_SEEDS`](crate::result::MAX_FAILED_SEEDS).
    pub failed_seeds: Vec<FailedSeed>,
    /// The generation read (1 for the first crawl, one more per `--refresh`); `None`
    /// before a crawl started.
    pub generation: Option<i64>,
    /// Every generation the file keeps, oldest first (`trawl diff` compares them).
    pub generations: Vec<i64>,
}

impl Status {
    /// Pages fetched (done or failed) per second from the start to the end of `elapsed_ms`.
    pub fn average_rate(&self) -> Option<f64> {
        let ms = self.elapsed_ms?;
        (ms > 0).then(|| (self.done + self.failed) as f64 * 1000.0 / ms as f64)
    }
}

/// Open `path` read-only, call `f` with it, and close it (a reader leaves the file as it
/// found it: see `OpenMode::Read`).
pub fn with_reader<T>(
    path: &Path,
    f: impl FnOnce(&SqliteStore) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    SqliteStore::open(path, OpenMode::Read).and_then(|store| f(&store))
}

/// The crawl row of `path`, read-only: `None` when no crawl was started in it.
pub fn stored_crawl(path: &Path) -> Result<Option<CrawlRow>, StoreError> {
    with_reader(path, |store| store.crawl())
}

/// Read the status of the crawl in `path`, read-only. A crawl may be running.
pub fn read(path: &Path) -> Result<Status, StoreError> {
    read_generation(path, None)
}

/// [`read`] of generation `generation` of the crawl in `path` (see `trawl crawl
/// --refresh`); `None` for the current one. An earlier generation is finished or was
/// interrupted: never running, whoever holds the file now.
pub fn read_generation(path: &Path, generation: Option<i64>) -> Result<Status, StoreError> {
    with_reader(path, |store| {
        let kept = store.generations()?;
        let current = kept.last().map(|g| g.number);
        let read = generation.or(current);
        if let Some(n) = generation {
            store.read_generation(n)?;
        }
        let mut status = read_store(path, store, read != current)?;
        status.generation = read;
        status.generations = kept.iter().map(|g| g.number).collect();
        Ok(status)
    })
}

/// The links of `classes` in the crawl in `path`, read-only: what `trawl crawl --fail-on`
/// counts, and what `trawl report broken --class` lists, a row each (a link per target,
/// page and kind; a missing fragment per page; a failed URL nothing links to).
pub fn link_counts(path: &Path, classes: LinkClasses) -> Result<ClassCounts, StoreError> {
    with_reader(path, |store| crate::report::count_links(store, classes))
}

fn read_store(path: &Path, store: &SqliteStore, archived: bool) -> Result<Status, StoreError> {
    let locked = !archived && lock_held(path)?;
    let err = |e| StoreError::Sqlite {
        path: path.display().to_string(),
        source: e,
    };
    // One snapshot, so the counts agree with each other and with the crawl row.
    let _snapshot = store.conn().unchecked_transaction().map_err(err)?;
    let row = store.crawl()?;
    let mut status = Status::empty(path, locked, now_ms());
    let updated_at: Option<i64> = store
        .conn()
        .query_row("SELECT updated_at FROM crawl WHERE id = 1", [], |r| {
            r.get(0)
        })
        .ok();
    match &row {
        Some(row) => status.read_crawl_row(row, updated_at),
        // A crawler that has opened the file but not written its crawl row yet.
        None if locked => status.state = State::Running,
        None => {}
    }
    let since = status.now - RECENT_WINDOW_MS;
    count_urls(store, since, &mut status).map_err(err)?;
    if status.failed > 0 {
        status.failed_seeds = failed_seeds(store).map_err(err)?;
    }
    if status.state == State::Running {
        let from = status.started_at.map_or(since, |s| s.max(since));
        let window = (status.now - from).max(1000);
        status.recent_rate = Some(status.recent_pages as f64 * 1000.0 / window as f64);
    }
    Ok(status)
}

impl Status {
    /// Nothing known yet but the file, its lock and the time.
    fn empty(path: &Path, locked: bool, now: i64) -> Status {
        Status {
            db: path.to_owned(),
            state: State::NotStarted,
            running_pid: None,
            locked,
            seeds: Vec::new(),
            started_at: None,
            updated_at: None,
            finished_at: None,
            now,
            elapsed_ms: None,
            known: 0,
            done: 0,
            failed: 0,
            queued: 0,
            skipped: 0,
            status_classes: BTreeMap::new(),
            errors: BTreeMap::new(),
            recent_pages: 0,
            recent_rate: None,
            broken: 0,
            failed_seeds: Vec::new(),
            generation: None,
            generations: Vec::new(),
        }
    }

    /// What the crawl row says, and the state and elapsed time it implies with `locked`.
    fn read_crawl_row(&mut self, row: &CrawlRow, updated_at: Option<i64>) {
        self.seeds = row.seeds.clone();
        self.started_at = Some(row.started_at);
        self.updated_at = updated_at;
        self.finished_at = row.finished_at;
        self.running_pid = row.running_pid;
        self.state = if row.finished_at.is_some() && !self.locked {
            State::Finished
        } else if self.locked {
            State::Running
        } else {
            State::Stopped
        };
        let end = match self.state {
            State::Running => Some(self.now),
            State::Finished => row.finished_at,
            _ => updated_at,
        };
        self.elapsed_ms = end.map(|e| (e - row.started_at).max(0));
    }

    /// Count `n` URLs of one (state, status class, error kind) group.
    fn add_group(
        &mut self,
        state: Option<UrlState>,
        class: Option<i64>,
        kind: Option<String>,
        n: u64,
    ) {
        self.known += n;
        match state {
            Some(UrlState::Queued) => self.queued += n,
            Some(UrlState::Done) => self.done += n,
            Some(UrlState::Failed) => {
                self.failed += n;
                let kind = kind.unwrap_or_else(|| "unknown".into());
                *self.errors.entry(kind).or_default() += n;
            }
            Some(UrlState::Skipped) => self.skipped += n,
            None => {}
        }
        if let Some(c @ 1..=5) = class {
            *self.status_classes.entry(format!("{c}xx")).or_default() += n;
        }
        if state == Some(UrlState::Failed) || class.is_some_and(|c| c >= 4) {
            self.broken += n;
        }
    }
}

/// Every count of `urls` into `status`, in one scan; fetches since `since` are recent.
fn count_urls(store: &SqliteStore, since: i64, status: &mut Status) -> rusqlite::Result<()> {
    let mut st = store.conn().prepare(
        "SELECT state, status / 100, error_kind, count(*),
                coalesce(sum(state IN (1, 2) AND fetched_at >= ?1), 0)
         FROM urls GROUP BY 1, 2, 3",
    )?;
    let mut rows = st.query([since])?;
    while let Some(r) = rows.next()? {
        let state: i64 = r.get(0)?;
        let class: Option<i64> = r.get(1)?;
        let kind: Option<String> = r.get(2)?;
        let n = r.get::<_, i64>(3)? as u64;
        status.recent_pages += r.get::<_, i64>(4)? as u64;
        status.add_group(UrlState::from_code(state), class, kind, n);
    }
    Ok(())
}

/// The seeds that failed (a scan of `urls`, made only when some URL failed).
pub(crate) fn failed_seeds(store: &SqliteStore) -> rusqlite::Result<Vec<FailedSeed>> {
    let mut st = store.conn().prepare(
        "SELECT coalesce(url, key), error_kind, error FROM urls
         WHERE state = 2 AND depth = 0 ORDER BY id LIMIT ?1",
    )?;
    let rows = st.query_map([MAX_FAILED_SEEDS as i64], |r| {
        Ok(FailedSeed {
            url: r.get(0)?,
            error_kind: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            error: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        })
    })?;
    rows.collect()
}

/// Whether a crawler holds the advisory lock on `path` (see `OpenMode::Crawl`): try to
/// take it on a handle of our own and, when that works, let it go at once.
fn lock_held(path: &Path) -> Result<bool, StoreError> {
    let file = File::open(path).map_err(|source| StoreError::Open {
        path: path.display().to_string(),
        source,
    })?;
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            Ok(false)
        }
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(source)) => Err(StoreError::Open {
            path: path.display().to_string(),
            source,
        }),
    }
}
