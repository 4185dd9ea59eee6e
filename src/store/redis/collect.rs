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
//! (`ResultsFile`), so a second file never splits the results.
//!
//! Entries of one stream come in order; across streams they need not, so an entry that
//! names a URL not yet written (a link to a URL whose stream is read later) waits in
//! memory until its row arrives, and the streams are read again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Transaction};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::conn::Redis;
use super::keys::{CrawlKeys, Stream};
use super::process::hostname;
use super::records::{Row, StoredEdge};
use super::DistError;
use crate::admit::SkipReason;
use crate::link::LinkKind;
use crate::result::PageResult;
use crate::store::local::pending::{Edge, HostId, NewHost, NewUrl, PageRecord, PendingRows, UrlId};
use crate::store::local::writer::{write_page, write_rows};
use crate::store::{now_ms, OpenMode, SqliteStore, StoreError};
use crate::url_norm::{host_key, key_hash};

/// Entries read per stream per call.
const BATCH: usize = 1000;
/// How long a collector with nothing to read sleeps.
const IDLE: Duration = Duration::from_millis(50);
/// How often a process waiting for the file (another collects) tries again.
const STANDBY: Duration = Duration::from_secs(1);
/// How often every stream is read, not only those marked as written to.
const SWEEP: Duration = Duration::from_secs(5);

/// Where a crawl's results are collected: the meta field `results`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ResultsFile {
    /// The machine holding the file (its host name).
    pub machine: String,
    /// The file, as an absolute path on that machine.
    pub path: PathBuf,
}

impl ResultsFile {
    /// `path` on this machine.
    fn here(path: &Path) -> ResultsFile {
        ResultsFile {
            machine: hostname(),
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
        }
    }

    /// The crawl's results file, if a process claimed one.
    pub(crate) async fn of(redis: &Redis, keys: &CrawlKeys) -> Result<Option<Self>, DistError> {
        let text: Option<String> = redis
            .cmd(redis::cmd("HGET").arg(&keys.meta).arg("results"))
            .await?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| DistError::Corrupt {
                what: "the results file".into(),
                detail: e.to_string(),
            })
        })
        .transpose()
    }

    /// The file, when it is on this machine.
    pub(crate) fn local(&self) -> Option<&Path> {
        (self.machine == hostname()).then_some(self.path.as_path())
    }

    fn shown(&self, id: &str) -> DistError {
        DistError::ResultsElsewhere {
            id: id.to_owned(),
            path: self.path.display().to_string(),
            machine: self.machine.clone(),
        }
    }

    /// The file to read the results of the crawl `keys` from, on this machine; `None`
    /// when its collector has written nothing yet (the file is missing or empty).
    pub(crate) async fn readable(
        redis: &Redis,
        keys: &CrawlKeys,
    ) -> Result<Option<PathBuf>, DistError> {
        let Some(file) = ResultsFile::of(redis, keys).await? else {
            return Err(DistError::NoResults {
                id: keys.id().to_owned(),
            });
        };
        let Some(path) = file.local() else {
            return Err(file.shown(keys.id()));
        };
        Ok(begun(path).then(|| path.to_owned()))
    }
}

/// Whether a collector has made `path` a crawl file: a collector stopped between creating
/// the file and its schema leaves an empty or schema-less file, which holds nothing yet.
fn begun(path: &Path) -> bool {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return false;
    };
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .is_ok_and(|v| v > 0)
}

/// Record `path` as where the crawl's results go, unless another file is recorded: then
/// refuse, so the results are never split over two files.
pub(crate) async fn claim(
    redis: &Redis,
    keys: &CrawlKeys,
    path: &Path,
) -> Result<ResultsFile, DistError> {
    let mine = ResultsFile::here(path);
    let _: i64 = redis
        .cmd(
            redis::cmd("HSETNX")
                .arg(&keys.meta)
                .arg("results")
                .arg(serde_json::to_string(&mine).expect("serialising a path")),
        )
        .await?;
    let theirs = ResultsFile::of(redis, keys).await?.unwrap_or(mine.clone());
    if theirs != mine {
        return Err(DistError::OtherResults {
            id: keys.id().to_owned(),
            path: theirs.path.display().to_string(),
            machine: theirs.machine,
        });
    }
    Ok(mine)
}

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
            let collected = collect(redis, keys, path, rx).await;
            if let Err(e) = &collected {
                // Said now, not only when the crawl ends: the crawl goes on, and its
                // results wait in Redis (up to the buffer, then the crawl waits too).
                tracing::error!(
                    "collecting the results stopped: {e}; they wait in Redis until a process of the crawl given --db FILE collects them"
                );
            }
            collected
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
        if read == 0 && stopping == Stop::No {
            tokio::select! {
                _ = tokio::time::sleep(IDLE) => {}
                _ = stop.changed() => {}
            }
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
    let calls = hosts.iter().map(|h| async move {
        let shards: Vec<usize> = redis
            .cmd(redis::cmd("SMEMBERS").arg(keys.host(h).shards))
            .await?;
        Ok::<_, DistError>(shards)
    });
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
            if shard < keys.shard_count() {
                streams.push(Stream {
                    host: host.clone(),
                    shard: Some(shard),
                });
            }
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

/// One entry of a results stream: its id and its fields.
#[derive(Debug)]
struct Entry {
    id: String,
    fields: Vec<String>,
}

impl Entry {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .chunks_exact(2)
            .find(|kv| kv[0] == name)
            .map(|kv| kv[1].as_str())
    }
}

/// What a round committed: per stream, the last entry written.
type Applied = HashMap<Stream, String>;

/// The SQLite side: the file, the ids of its URLs and hosts, and the entries read but not
/// yet written.
struct Sink {
    store: SqliteStore,
    ids: HashMap<u128, UrlId>,
    hosts: HashMap<String, HostId>,
    next_url: UrlId,
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
        let mut ids = HashMap::new();
        let mut next_url = 1;
        {
            let mut st = conn.prepare("SELECT id, key FROM urls").map_err(sql)?;
            let mut rows = st.query([]).map_err(sql)?;
            while let Some(r) = rows.next().map_err(sql)? {
                let id: i64 = r.get(0).map_err(sql)?;
                let key: String = r.get(1).map_err(sql)?;
                ids.insert(key_hash(&key), id as UrlId);
                next_url = next_url.max(id as UrlId + 1);
            }
        }
        let hosts = collect_pairs(conn, "SELECT name, id FROM hosts", sql)?
            .into_iter()
            .map(|(n, id): (String, i64)| (n, id as HostId))
            .collect();
        let cursors = collect_pairs(conn, "SELECT stream, last_id FROM collected", sql)?
            .into_iter()
            .filter_map(|(m, id): (String, String)| Some((Stream::parse(&m)?, id)))
            .collect();
        Ok(Sink {
            store,
            ids,
            hosts,
            next_url,
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
                let entries: Vec<(String, Vec<String>)> = redis
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
                .extend(got.into_iter().map(|(id, fields)| Entry { id, fields }));
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
            ids,
            hosts,
            next_url,
            queues,
            ..
        } = self;
        let mut ids = Ids {
            ids,
            hosts,
            next_url,
            force,
        };
        let tx = store.conn_mut().transaction().map_err(sql)?;
        let mut applied = Applied::new();
        loop {
            let mut progress = false;
            for (stream, q) in queues.iter_mut() {
                while let Some(e) = q.front() {
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
                .conn()
                .execute("UPDATE crawl SET finished_at = ?1 WHERE id = 1", [at])
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

fn sql_error(shown: &str, e: rusqlite::Error) -> DistError {
    DistError::Store(StoreError::Sqlite {
        path: shown.to_owned(),
        source: e,
    })
}

/// Why an entry could not be written.
enum WriteError {
    Sql(rusqlite::Error),
    Corrupt(String, String),
}

impl WriteError {
    fn at(self, shown: &str) -> DistError {
        match self {
            WriteError::Sql(e) => sql_error(shown, e),
            WriteError::Corrupt(what, detail) => DistError::Corrupt { what, detail },
        }
    }
}

impl From<rusqlite::Error> for WriteError {
    fn from(e: rusqlite::Error) -> Self {
        WriteError::Sql(e)
    }
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, WriteError> {
    serde_json::from_str(text).map_err(|e| WriteError::Corrupt(what.to_owned(), e.to_string()))
}

/// The ids of a round: known URLs and hosts, and how new ones are numbered.
struct Ids<'a> {
    ids: &'a mut HashMap<u128, UrlId>,
    hosts: &'a mut HashMap<String, HostId>,
    next_url: &'a mut UrlId,
    force: bool,
}

impl Ids<'_> {
    fn url(&self, key: &str) -> Option<UrlId> {
        self.ids.get(&key_hash(key)).copied()
    }

    fn host(&mut self, name: &str, rows: &mut PendingRows) -> HostId {
        if let Some(id) = self.hosts.get(name) {
            return *id;
        }
        let id = self.hosts.values().max().map_or(1, |m| m + 1);
        self.hosts.insert(name.to_owned(), id);
        rows.hosts.push(NewHost {
            id,
            name: name.to_owned(),
        });
        id
    }

    fn assign(&mut self, key: &str) -> UrlId {
        let id = *self.next_url;
        *self.next_url += 1;
        self.ids.insert(key_hash(key), id);
        id
    }

    /// The id of `key`, or (when forced) a new row for it; `None`: wait for its row.
    fn need(&mut self, key: &str, rows: &mut PendingRows) -> Option<UrlId> {
        if let Some(id) = self.url(key) {
            return Some(id);
        }
        if !self.force {
            return None;
        }
        let host = url::Url::parse(key)
            .map(|u| host_key(&u))
            .unwrap_or_default();
        let host = self.host(&host, rows);
        let id = self.assign(key);
        rows.urls.push(NewUrl {
            id,
            host,
            key: key.to_owned(),
            url: None,
            depth: 0,
            referrer: None,
            skip: None,
        });
        Some(id)
    }

    /// Write one entry of `host`'s stream; false when it names a URL not written yet.
    fn write(&mut self, tx: &Transaction<'_>, host: &str, e: &Entry) -> Result<bool, WriteError> {
        let mut rows = PendingRows::default();
        let written = self.write_entry(tx, host, e, &mut rows)?;
        if !written {
            // Not written: the host rows it made are not in the file.
            for h in &rows.hosts {
                self.hosts.remove(&h.name);
            }
        }
        Ok(written)
    }

    fn write_entry(
        &mut self,
        tx: &Transaction<'_>,
        host: &str,
        e: &Entry,
        rows: &mut PendingRows,
    ) -> Result<bool, WriteError> {
        let host_id = self.host(host, rows);
        match e.field("t") {
            Some("a") => {
                let lines = Lines::parse(e.field("r").unwrap_or_default())?;
                // Referrers first: the entry is written whole or not at all.
                let mine: HashSet<u128> = lines.new_keys().map(key_hash).collect();
                for r in lines.referrers() {
                    if !mine.contains(&key_hash(r)) && self.url(r).is_none() && !self.force {
                        return Ok(false);
                    }
                }
                for line in &lines.0 {
                    self.admitted(line, host_id, rows);
                }
            }
            Some("p") => {
                let key = e.field("k").unwrap_or_default();
                let result: PageResult = parse(e.field("r").unwrap_or_default(), key)?;
                let stored: Vec<StoredEdge> = match e.field("e") {
                    Some(t) if !t.is_empty() => parse(t, "an edge list")?,
                    _ => Vec::new(),
                };
                let mut edges = Vec::with_capacity(stored.len());
                for (dst, kind, nofollow, anchor) in stored {
                    let Some(dst) = self.need(&dst, rows) else {
                        return Ok(false);
                    };
                    edges.push(Edge {
                        dst,
                        kind: LinkKind::from_code(kind).unwrap_or(LinkKind::A),
                        nofollow,
                        anchor,
                    });
                }
                let Some(id) = self.need(key, rows) else {
                    return Ok(false);
                };
                write_rows(tx, rows)?;
                write_page(tx, &PageRecord { id, result, edges })?;
                return Ok(true);
            }
            Some("s") => {
                let key = e.field("k").unwrap_or_default();
                let Some(id) = self.need(key, rows) else {
                    return Ok(false);
                };
                if let Ok(reason) = e.field("why").unwrap_or_default().parse::<SkipReason>() {
                    rows.skips.push((id, reason));
                }
            }
            Some("h") => {
                if let Some(until) = e.field("until").and_then(|u| u.parse().ok()) {
                    rows.pauses.push((host_id, until));
                }
            }
            other => {
                return Err(WriteError::Corrupt(
                    format!("a results stream of {host}"),
                    format!("an entry of unknown type {other:?}"),
                ))
            }
        }
        write_rows(tx, rows)?;
        Ok(true)
    }

    /// One line of an admission entry.
    fn admitted(&mut self, line: &Line, host: HostId, rows: &mut PendingRows) {
        let known = self.url(&line.row.key);
        match (line.code, known) {
            ('n', None) => {
                let referrer = line
                    .row
                    .referrer
                    .as_deref()
                    .and_then(|r| self.need(r, rows));
                let id = self.assign(&line.row.key);
                rows.urls.push(NewUrl {
                    id,
                    host,
                    key: line.row.key.clone(),
                    url: line.row.url.clone(),
                    depth: line.depth,
                    referrer,
                    skip: line.skip,
                });
            }
            ('n' | 'd', Some(id)) => rows.depths.push((id, line.depth)),
            ('q', Some(id)) => rows.requeues.push((id, line.depth)),
            _ => {}
        }
    }
}

/// One line of an admission entry (see `scripts::ADMIT`).
struct Line {
    code: char,
    skip: Option<SkipReason>,
    depth: u32,
    row: Row,
}

struct Lines(Vec<Line>);

impl Lines {
    fn parse(text: &str) -> Result<Lines, WriteError> {
        let bad = |detail: String| WriteError::Corrupt("an admission entry".into(), detail);
        let mut out = Vec::new();
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            let mut parts = line.splitn(4, '\t');
            let (Some(code), Some(skip), Some(depth), Some(row)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(bad(format!("line {line:?}")));
            };
            let skip = if skip.is_empty() {
                None
            } else {
                Some(skip.parse::<SkipReason>().map_err(bad)?)
            };
            out.push(Line {
                code: code.chars().next().unwrap_or(' '),
                skip,
                depth: depth.parse().map_err(|_| bad(format!("depth {depth:?}")))?,
                row: parse(row, "an admitted row")?,
            });
        }
        Ok(Lines(out))
    }

    fn new_keys(&self) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .filter(|l| l.code == 'n')
            .map(|l| l.row.key.as_str())
    }

    fn referrers(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|l| l.row.referrer.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_after_an_entry() {
        assert_eq!(after("1700000000000-0"), "1700000000000-1");
        assert_eq!(after("5-41"), "5-42");
    }

    #[test]
    fn admission_lines_parse() {
        let text = "n\t\t0\t{\"k\":\"http://a/\"}\nn\tout-of-scope\t1\t{\"k\":\"http://b/\",\"r\":\"http://a/\"}";
        let lines = Lines::parse(text).ok().unwrap();
        assert_eq!(lines.0.len(), 2);
        assert_eq!(lines.0[1].skip, Some(SkipReason::OutOfScope));
        assert_eq!(lines.referrers().collect::<Vec<_>>(), ["http://a/"]);
        assert!(Lines::parse("n\t\tx\t{}").is_err());
    }
}
