//! The collector: results leave Redis for the crawl's SQLite file.
//!
//! Every script that decides something about a URL (admitted, found nearer, stored,
//! skipped, its host paused) appends an entry to a results stream, in the same atomic
//! step: the stream of the host's part in the URL's shard (or the host's own, for pauses). One process of the crawl, given `--db FILE`, reads the streams, writes
//! the entries into FILE through the local store's own row writers (so the file is the one
//! a local crawl makes, and works with every command), records in the same transaction the
//! last entry it committed of each stream (table `collected`), and then trims what it
//! committed from Redis. So Redis holds coordination only, plus a bounded buffer of
//! results in transit (`records::RESULTS_IN_TRANSIT` entries per stream, a completing
//! process waits beyond it).
//!
//! Why a file and not a consumer group: SQLite has one writer anyway, and the position
//! kept inside the transaction that wrote the entries makes each entry written exactly
//! once, whoever collects and however it stopped. The file's crawl lock (a `flock`) lets
//! one collector in at a time; other processes given the same `--db` wait on it and take
//! over when the collector dies. The crawl records which file on which machine collects
//! (`results::ResultsFile`), so a second file never splits the results.
//!
//! Entries of one stream come in order; across streams they need not, so an entry that
//! names a URL not yet written (a link to a URL whose stream is read later) waits in
//! memory until its row arrives, and the streams are read again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::params;
use tokio::sync::watch;

use super::conn::Redis;
use super::entries::{sql_error, Entry, Ids, Known};
use super::keys::{CrawlKeys, Stream};
use super::queue::shards_of;
use super::DistError;
use crate::store::local::pending::{HostId, UrlId};
use crate::store::{now_ms, OpenMode, SqliteStore, StoreError};
use crate::url_norm::key_hash;

/// Entries read per stream per call.
const BATCH: usize = 1000;
/// How long a collector with nothing to read sleeps: from `IDLE_MIN` (the completing
/// processes mark what they wrote every 10 ms, `process::MARK_EVERY`) doubling up to
/// `IDLE_MAX` while nothing comes. A fixed 50 ms let a CPU-bound crawl fill the buffer in
/// transit while the collector slept, and its workers then waited (BENCHMARKS.md, 2026-12-07).
const IDLE_MIN: Duration = Duration::from_millis(10);
const IDLE_MAX: Duration = Duration::from_millis(50);
/// How often a process waiting for the file (another collects) tries again.
const STANDBY: Duration = Duration::from_secs(1);
/// How often every stream is read, not only those marked as written to.
const SWEEP: Duration = Duration::from_secs(5);
/// A collector that failed tries again after this, doubled up to `RETRY_MAX` while it keeps
/// failing: most failures pass (the file held by another program, a full disk freed),
/// and meanwhile the results wait in Redis, then the crawl waits for them.
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// How the collector is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Keep collecting.
    No,
    /// The crawl drained: collect everything left, then stop.
    Drained,
    /// This process stops: commit what was read and stop.
    Now,
}

/// A running collector (or one waiting for the file).
pub(crate) struct Collecting {
    stop: watch::Sender<Stop>,
    task: tokio::task::JoinHandle<Result<(), DistError>>,
}

impl Collecting {
    /// Start collecting the crawl `keys` into `path`.
    pub(crate) fn start(redis: Redis, keys: CrawlKeys, path: PathBuf) -> Collecting {
        let (stop, rx) = watch::channel(Stop::No);
        let task = tokio::spawn(async move {
            match redis.another().await {
                Ok(own) => collect_retrying(own, keys, path, rx).await,
                Err(e) => Err(e),
            }
        });
        Collecting { stop, task }
    }

    /// Stop: after collecting everything when the crawl `drained`, else at once.
    pub(crate) async fn finish(self, drained: bool) -> Result<(), DistError> {
        let _ = self
            .stop
            .send(if drained { Stop::Drained } else { Stop::Now });
        self.task
            .await
            .map_err(|e| DistError::Internal(format!("the collector panicked: {e}")))?
    }
}

/// [`collect`], tried again while it fails and this process goes on crawling; once the
/// process stops, one last try, whose error is the collector's.
async fn collect_retrying(
    redis: Redis,
    keys: CrawlKeys,
    path: PathBuf,
    mut stop: watch::Receiver<Stop>,
) -> Result<(), DistError> {
    let mut wait = RETRY_MIN;
    loop {
        let stopping = *stop.borrow();
        let e = match collect(redis.clone(), keys.clone(), path.clone(), stop.clone()).await {
            Ok(()) => return Ok(()),
            Err(e) if stopping != Stop::No => return Err(e),
            Err(e) => e,
        };
        // Said now, not only when the crawl ends: the crawl goes on, and its results wait
        // in Redis (up to the buffer, then the crawl waits too).
        tracing::error!(
            "collecting the results stopped: {e}; trying again in {}s (the results wait in Redis meanwhile)",
            wait.as_secs()
        );
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            changed = stop.changed() => {
                if changed.is_err() {
                    // Nobody can ask this collector to stop any more.
                    return Err(e);
                }
            }
        }
        wait = (wait * 2).min(RETRY_MAX);
    }
}

/// Collect the results of a crawl that no process crawls any more into `path` (the crawl
/// finished while its collector was away), then return.
pub(crate) async fn rest(redis: Redis, keys: CrawlKeys, path: PathBuf) -> Result<(), DistError> {
    let (_stop, rx) = watch::channel(Stop::Drained);
    collect(redis, keys, path, rx).await
}

async fn collect(
    redis: Redis,
    keys: CrawlKeys,
    path: PathBuf,
    mut stop: watch::Receiver<Stop>,
) -> Result<(), DistError> {
    let Some(mut sink) = take_file(&path, &mut stop).await? else {
        return Ok(());
    };
    sink.write_crawl(&redis, &keys).await?;
    tracing::info!(file = %path.display(), "collecting the crawl's results");
    let mut swept: Option<Instant> = None;
    let mut force = false;
    let mut idle = IDLE_MIN;
    loop {
        let stopping = *stop.borrow();
        let sweep = stopping == Stop::Drained || swept.is_none_or(|t| t.elapsed() >= SWEEP);
        let streams = if sweep {
            swept = Some(Instant::now());
            every_stream(&redis, &keys).await?
        } else {
            let marked: Vec<String> = redis
                .cmd(redis::cmd("SPOP").arg(&keys.unread).arg(10_000))
                .await?;
            marked.iter().filter_map(|m| Stream::parse(m)).collect()
        };
        let read = sink.read(&redis, &keys, &streams).await?;
        let (back, applied) = tokio::task::spawn_blocking(move || {
            let r = sink.apply(force);
            (sink, r)
        })
        .await
        .map_err(|e| DistError::Internal(format!("the collector panicked: {e}")))?;
        sink = back;
        let applied = applied?;
        trim(&redis, &keys, &applied).await?;
        let waiting = sink.waiting();
        match stopping {
            Stop::Now => break,
            Stop::Drained if read == 0 && waiting == 0 => break,
            // Everything is read and some entries still name URLs no stream holds: write
            // them as they are rather than wait for ever.
            Stop::Drained if read == 0 => force = true,
            _ => {}
        }
        if read > 0 {
            idle = IDLE_MIN;
        } else if stopping == Stop::No {
            tokio::select! {
                _ = tokio::time::sleep(idle) => {}
                _ = stop.changed() => {}
            }
            idle = (idle * 2).min(IDLE_MAX);
        }
    }
    let finished: Option<i64> = redis
        .cmd(redis::cmd("HGET").arg(&keys.meta).arg("finished_at"))
        .await?;
    let all_in = sink.waiting() == 0 && *stop.borrow() == Stop::Drained;
    tokio::task::spawn_blocking(move || sink.close(finished.filter(|_| all_in)))
        .await
        .map_err(|e| DistError::Internal(format!("the collector panicked: {e}")))??;
    Ok(())
}

/// Every results stream of the crawl: each host's own, and its part in each of its shards.
async fn every_stream(redis: &Redis, keys: &CrawlKeys) -> Result<Vec<Stream>, DistError> {
    let hosts: Vec<String> = redis.cmd(redis::cmd("SMEMBERS").arg(&keys.hosts)).await?;
    let calls = hosts.iter().map(|h| shards_of(redis, keys, h));
    let mut streams = Vec::new();
    for (host, shards) in hosts
        .iter()
        .zip(futures_util::future::join_all(calls).await)
    {
        streams.push(Stream {
            host: host.clone(),
            shard: None,
        });
        for shard in shards? {
            streams.push(Stream {
                host: host.clone(),
                shard: Some(shard),
            });
        }
    }
    Ok(streams)
}

/// Open the file for collecting, waiting while another process collects into it; `None`
/// when told to stop first.
async fn take_file(
    path: &Path,
    stop: &mut watch::Receiver<Stop>,
) -> Result<Option<Sink>, DistError> {
    let mut told = false;
    loop {
        let p = path.to_owned();
        let opened = tokio::task::spawn_blocking(move || Sink::open(&p))
            .await
            .map_err(|e| DistError::Internal(format!("the collector panicked: {e}")))?;
        match opened {
            Ok(sink) => return Ok(Some(sink)),
            Err(DistError::Store(StoreError::Locked { .. })) => {
                if !told {
                    tracing::info!(
                        file = %path.display(),
                        "another process collects the results; taking over if it stops"
                    );
                    told = true;
                }
            }
            Err(e) => return Err(e),
        }
        if *stop.borrow() != Stop::No {
            return Ok(None);
        }
        tokio::select! {
            _ = tokio::time::sleep(STANDBY) => {}
            _ = stop.changed() => {}
        }
    }
}

/// What a round committed: per stream, the last entry written.
type Applied = HashMap<Stream, String>;

/// The SQLite side: the file, the ids of its URLs and hosts, and the entries read but not
/// yet written.
struct Sink {
    store: SqliteStore,
    known: Known,
    /// Per stream: the last entry read (the file's position, then ahead of it).
    cursors: HashMap<Stream, String>,
    /// Per stream: entries read, not yet written.
    queues: HashMap<Stream, VecDeque<Entry>>,
}

impl Sink {
    fn open(path: &Path) -> Result<Sink, DistError> {
        let mut store = SqliteStore::open(path, OpenMode::Crawl)?;
        let shown = path.display().to_string();
        let sql = |e| sql_error(&shown, e);
        let conn = store.conn_mut();
        let mut known = Known {
            next_url: 1,
            next_host: 1,
            ..Known::default()
        };
        {
            let mut st = conn.prepare("SELECT id, key FROM urls").map_err(sql)?;
            let mut rows = st.query([]).map_err(sql)?;
            while let Some(r) = rows.next().map_err(sql)? {
                let id: i64 = r.get(0).map_err(sql)?;
                let key: String = r.get(1).map_err(sql)?;
                known.urls.insert(key_hash(&key), id as UrlId);
                known.next_url = known.next_url.max(id as UrlId + 1);
            }
        }
        for (name, id) in collect_pairs::<String, i64>(conn, "SELECT name, id FROM hosts", sql)? {
            known.next_host = known.next_host.max(id as HostId + 1);
            known.hosts.insert(name, id as HostId);
        }
        let cursors = collect_pairs(conn, "SELECT stream, last_id FROM collected", sql)?
            .into_iter()
            .filter_map(|(m, id): (String, String)| Some((Stream::parse(&m)?, id)))
            .collect();
        Ok(Sink {
            store,
            known,
            cursors,
            queues: HashMap::new(),
        })
    }

    /// The crawl row, from the crawl's record in Redis, with this process as the one
    /// writing the file.
    async fn write_crawl(&mut self, redis: &Redis, keys: &CrawlKeys) -> Result<(), DistError> {
        let meta: HashMap<String, String> =
            redis.cmd(redis::cmd("HGETALL").arg(&keys.meta)).await?;
        let seeds: Vec<String> = meta
            .get("seeds")
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        let config = meta.get("config").cloned().unwrap_or_default();
        self.store.write_crawl(&seeds, &config)?;
        self.store.mark_running(true)?;
        if let Some(started) = meta.get("started_at").and_then(|s| s.parse::<i64>().ok()) {
            let shown = self.store.path().display().to_string();
            self.store
                .conn()
                .execute("UPDATE crawl SET started_at = ?1 WHERE id = 1", [started])
                .map_err(|e| sql_error(&shown, e))?;
        }
        Ok(())
    }

    /// Read on in `streams` (those with room in memory); entries read.
    async fn read(
        &mut self,
        redis: &Redis,
        keys: &CrawlKeys,
        streams: &[Stream],
    ) -> Result<usize, DistError> {
        let wanted: Vec<&Stream> = streams
            .iter()
            .collect::<HashSet<_>>()
            .into_iter()
            .filter(|s| self.queues.get(*s).is_none_or(|q| q.len() < BATCH))
            .collect();
        let calls = wanted.iter().map(|s| {
            let start = self
                .cursors
                .get(*s)
                .map_or_else(|| "-".to_owned(), |c| format!("({c}"));
            let stream = keys.stream(s);
            async move {
                let entries: Vec<(String, Vec<Vec<u8>>)> = redis
                    .cmd(
                        redis::cmd("XRANGE")
                            .arg(&stream)
                            .arg(start)
                            .arg("+")
                            .arg("COUNT")
                            .arg(BATCH),
                    )
                    .await?;
                Ok::<_, DistError>(entries)
            }
        });
        let mut read = 0;
        for (s, got) in wanted
            .iter()
            .zip(futures_util::future::join_all(calls).await)
        {
            let got = got?;
            let Some((last, _)) = got.last() else {
                continue;
            };
            self.cursors.insert((*s).clone(), last.clone());
            read += got.len();
            self.queues
                .entry((*s).clone())
                .or_default()
                .extend(got.into_iter().map(|(id, fields)| Entry::new(id, fields)));
        }
        Ok(read)
    }

    /// Entries read and not yet written.
    fn waiting(&self) -> usize {
        self.queues.values().map(VecDeque::len).sum()
    }

    /// Write every entry whose URLs are known, in one transaction with the positions;
    /// with `force`, write the rest too (unknown URLs get a row of their own).
    fn apply(&mut self, force: bool) -> Result<Applied, DistError> {
        let shown = self.store.path().display().to_string();
        let sql = |e| sql_error(&shown, e);
        let Sink {
            store,
            known,
            queues,
            ..
        } = self;
        let mut ids = Ids {
            known,
            force,
            blocked: None,
        };
        let tx = store.conn_mut().transaction().map_err(sql)?;
        let mut applied = Applied::new();
        loop {
            let mut progress = false;
            for (stream, q) in queues.iter_mut() {
                while let Some(e) = q.front_mut() {
                    if !ids.write(&tx, &stream.host, e).map_err(|e| e.at(&shown))? {
                        break;
                    }
                    applied.insert(stream.clone(), e.id.clone());
                    q.pop_front();
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        if ids.force && queues.values().any(|q| !q.is_empty()) {
            tracing::warn!("some results name URLs no stream holds; written with what is known");
        }
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO collected (stream, last_id) VALUES (?1, ?2)
                     ON CONFLICT (stream) DO UPDATE SET last_id = ?2",
                )
                .map_err(sql)?;
            for (stream, id) in &applied {
                st.execute(params![stream.member(), id]).map_err(sql)?;
            }
        }
        tx.execute("UPDATE crawl SET updated_at = ?1 WHERE id = 1", [now_ms()])
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        queues.retain(|_, q| !q.is_empty());
        Ok(applied)
    }

    /// Mark the file finished (`finished_at`, when the crawl drained and everything is
    /// in) and no longer written.
    fn close(self, finished_at: Option<i64>) -> Result<(), DistError> {
        if let Some(at) = finished_at {
            let shown = self.store.path().display().to_string();
            self.store
                .mark_finished(at)
                .map_err(|e| sql_error(&shown, e))?;
        }
        self.store.mark_running(false)?;
        Ok(())
    }
}

/// Drop from Redis what is committed.
async fn trim(redis: &Redis, keys: &CrawlKeys, applied: &Applied) -> Result<(), DistError> {
    let calls = applied.iter().map(|(s, last)| {
        let stream = keys.stream(s);
        let min = after(last);
        async move {
            let _: i64 = redis
                .cmd(redis::cmd("XTRIM").arg(&stream).arg("MINID").arg(min))
                .await?;
            Ok::<_, DistError>(())
        }
    });
    for r in futures_util::future::join_all(calls).await {
        r?;
    }
    Ok(())
}

/// The smallest stream id after `id` (`MS-SEQ`): `XTRIM MINID` keeps it and what follows.
fn after(id: &str) -> String {
    match id.split_once('-').map(|(ms, seq)| (ms, seq.parse::<u64>())) {
        Some((ms, Ok(seq))) => format!("{ms}-{}", seq + 1),
        _ => id.to_owned(),
    }
}

fn collect_pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
    conn: &rusqlite::Connection,
    query: &str,
    sql: impl Fn(rusqlite::Error) -> DistError + Copy,
) -> Result<Vec<(A, B)>, DistError> {
    let mut st = conn.prepare(query).map_err(sql)?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(sql)?;
    rows.collect::<Result<_, _>>().map_err(sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_after_an_entry() {
        assert_eq!(after("1700000000000-0"), "1700000000000-1");
        assert_eq!(after("5-41"), "5-42");
    }
}
