//! A Redis crawl, finished or running, as a SQLite file: its results file (`collect`),
//! which has the schema of a local crawl's. `trawl export --to FILE` copies it with
//! `VACUUM INTO`; `trawl export` and `trawl report` on a Redis crawl read it in place, so
//! every format and report works the same on both stores.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::results::ResultsFile;
use super::{parse_target, DistError};
use crate::store::{OpenMode, SqliteStore, StoreError, StoredCrawl};

/// How long a reader waits for an unreachable Redis before giving up.
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);

/// What a copy wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    /// URL rows.
    pub urls: u64,
    /// Of them, fetched (done or failed).
    pub pages: u64,
    /// Edge rows.
    pub edges: u64,
}

/// Connect to the Redis at `store` for a reader, giving up after a while.
async fn connect(store: &str, crawl_id: &str) -> Result<(Redis, CrawlKeys), DistError> {
    let (url, id) = parse_target(store, Some(crawl_id))?;
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CONNECT_PATIENCE).await;
            cancel.cancel();
        })
    };
    let redis = Redis::connect(&url, cancel).await;
    timer.abort();
    Ok((redis?, CrawlKeys::new(&id)))
}

/// The results file of the crawl `crawl_id` in the Redis at `store`, to read in place (a
/// collector may be writing it: open it read-only).
pub async fn results_file(store: &str, crawl_id: &str) -> Result<PathBuf, DistError> {
    let (redis, keys) = connect(store, crawl_id).await?;
    ResultsFile::readable(&redis, &keys)
        .await?
        .ok_or(DistError::NoResults {
            id: keys.id().to_owned(),
        })
}

/// Copy the crawl `crawl_id` of the Redis at `store` into a new SQLite file `path`: its
/// results file as committed so far (all of it, once the crawl finished and its collector
/// stopped).
pub async fn to_sqlite(store: &str, crawl_id: &str, path: &Path) -> Result<Copied, DistError> {
    if path.exists() {
        return Err(DistError::TargetExists(path.display().to_string()));
    }
    let (redis, keys) = connect(store, crawl_id).await?;
    let target = path.to_owned();
    // None: its collector was stopped before it wrote anything, nothing is collected yet.
    let source = ResultsFile::readable(&redis, &keys).await?;
    let crawl = super::read(&redis, &keys).await?.unwrap_or_default();
    tokio::task::spawn_blocking(move || {
        let copied = match source {
            Some(source) => vacuum_into(&source, &target)?,
            None => Copied::default(),
        };
        record(&target, &crawl)?;
        Ok(copied)
    })
    .await
    .map_err(|e| DistError::Internal(format!("the copy panicked: {e}")))?
}

/// Give the copy the crawl's record when its collector had not written it yet, and mark
/// it as crawled by nobody: a copy is never running.
fn record(target: &Path, crawl: &StoredCrawl) -> Result<(), DistError> {
    let store = SqliteStore::open(target, OpenMode::Crawl)?;
    if store.crawl()?.is_none() {
        store.write_crawl(&crawl.seeds, &crawl.config)?;
    }
    store.mark_running(false)?;
    Ok(())
}

fn vacuum_into(source: &Path, target: &Path) -> Result<Copied, DistError> {
    let from = SqliteStore::open(source, OpenMode::Read)?;
    let shown = target.display().to_string();
    let sql = |e| {
        DistError::Store(StoreError::Sqlite {
            path: shown.clone(),
            source: e,
        })
    };
    let result = from
        .conn()
        .execute("VACUUM INTO ?1", [target.to_string_lossy()])
        .map_err(sql);
    if let Err(e) = result {
        // A half-written copy is worth nothing; the crawl is untouched.
        let _ = std::fs::remove_file(target);
        return Err(e);
    }
    let to = SqliteStore::open(target, OpenMode::Read)?;
    let count = |q: &str| -> Result<u64, DistError> {
        to.conn()
            .query_row(q, [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(sql)
    };
    Ok(Copied {
        urls: count("SELECT count(*) FROM urls")?,
        pages: count("SELECT count(*) FROM urls WHERE state IN (1, 2)")?,
        edges: count("SELECT count(*) FROM edges")?,
    })
}
