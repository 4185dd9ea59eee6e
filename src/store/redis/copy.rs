//! Copy a Redis crawl, finished or running, into a SQLite file with the same schema as a
//! local crawl. `trawl export --to FILE` keeps the file; `trawl export` and `trawl
//! report` on a Redis crawl read a temporary copy, so every format and report works the
//! same on both stores.
//!
//! The copy streams: hashes are read with `HSCAN` and lists with `LRANGE` in pages of
//! `BATCH`. Memory holds one map from each URL's 128-bit key hash to its row id (24
//! bytes a URL), because edges name their ends by key.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection};
use tokio_util::sync::CancellationToken;

use super::conn::Redis;
use super::keys::{CrawlKeys, HostKeys};
use super::queue::{Admission, StoredEdges};
use super::{parse_target, DistError};
use crate::admit::SkipReason;
use crate::result::PageResult;
use crate::store::local::columns;
use crate::store::{OpenMode, SqliteStore, StoreError, UrlState};
use crate::url_norm::{host_key, key_hash};

/// Keys read per Redis call.
const BATCH: usize = 1000;
/// How long a copy waits for an unreachable Redis before giving up.
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

/// Copy the crawl `crawl_id` of the Redis at `store` into a new SQLite file `path`.
pub async fn to_sqlite(store: &str, crawl_id: &str, path: &Path) -> Result<Copied, DistError> {
    if path.exists() {
        return Err(DistError::TargetExists(path.display().to_string()));
    }
    let (url, id) = parse_target(store, Some(crawl_id))?;
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CONNECT_PATIENCE).await;
            cancel.cancel();
        })
    };
    let redis = Redis::connect(&url, cancel).await?;
    let keys = CrawlKeys::new(&id);
    let result = copy(&redis, &keys, path).await;
    timer.abort();
    if result.is_err() {
        // A half-written copy is worth nothing; the crawl in Redis is untouched.
        let _ = std::fs::remove_file(path);
    }
    result
}

async fn copy(redis: &Redis, keys: &CrawlKeys, path: &Path) -> Result<Copied, DistError> {
    let meta: HashMap<String, String> = redis.cmd(redis::cmd("HGETALL").arg(&keys.meta)).await?;
    let Some(config) = meta.get("config") else {
        return Err(DistError::NoSeeds {
            id: keys.id().to_owned(),
        });
    };
    let seeds: Vec<String> = meta
        .get("seeds")
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let store = SqliteStore::open(path, OpenMode::Crawl)?;
    store.write_crawl(&seeds, config)?;
    let shown = path.display().to_string();
    let sql = sql_error(&shown);
    let conn = store.conn();
    let started = meta.get("started_at").and_then(|s| s.parse::<i64>().ok());
    let finished = meta.get("finished_at").and_then(|s| s.parse::<i64>().ok());
    conn.execute(
        "UPDATE crawl SET started_at = coalesce(?1, started_at), finished_at = ?2 WHERE id = 1",
        params![started, finished],
    )
    .map_err(sql)?;

    let tx = conn.unchecked_transaction().map_err(sql)?;
    let mut hosts: Vec<String> = redis.cmd(redis::cmd("SMEMBERS").arg(&keys.hosts)).await?;
    hosts.sort();
    let mut rows = Rows {
        conn: &tx,
        ids: HashMap::new(),
        host_ids: HashMap::new(),
        copied: Copied::default(),
    };
    let copier = Copier {
        redis,
        keys,
        hosts: &hosts,
        sql,
    };
    copier.hosts(&mut rows).await?;
    copier.ids(&mut rows).await?;
    copier.urls(&mut rows).await?;
    copier.edges(&mut rows).await?;
    let copied = rows.copied;
    tx.commit().map_err(sql)?;
    store.mark_running(false)?;
    Ok(copied)
}

/// How a SQLite error of the copy at `shown` is reported.
fn sql_error(shown: &str) -> impl Fn(rusqlite::Error) -> DistError + Copy + '_ {
    move |e| {
        DistError::Store(StoreError::Sqlite {
            path: shown.to_owned(),
            source: e,
        })
    }
}

/// One copy under way: where from, and the crawl's hosts in order (each step reads every
/// host in turn); `sql` reports the SQLite errors.
struct Copier<'a, E> {
    redis: &'a Redis,
    keys: &'a CrawlKeys,
    hosts: &'a [String],
    sql: E,
}

impl<E: Fn(rusqlite::Error) -> DistError + Copy> Copier<'_, E> {
    /// The host rows, with any 429/503 pause still running (as a local crawl keeps it).
    async fn hosts(&self, rows: &mut Rows<'_>) -> Result<(), DistError> {
        for host in self.hosts {
            let id = rows.host_id(host).map_err(self.sql)?;
            let paused: Option<i64> = self
                .redis
                .cmd(
                    redis::cmd("HGET")
                        .arg(&self.keys.host(host).state)
                        .arg("paused_until"),
                )
                .await?;
            if let Some(until) = paused {
                rows.conn
                    .execute(
                        "UPDATE hosts SET paused_until = ?2 WHERE id = ?1",
                        params![id, until],
                    )
                    .map_err(self.sql)?;
            }
        }
        Ok(())
    }

    /// Ids first (in host order, admission order within a scan), so referrers resolve.
    async fn ids(&self, rows: &mut Rows<'_>) -> Result<(), DistError> {
        for host in self.hosts {
            scan_hash(self.redis, &self.keys.host(host).seen, |batch| {
                for (key, _) in batch {
                    rows.assign(&key);
                }
                Ok(())
            })
            .await?;
        }
        Ok(())
    }

    /// The URL rows, with their pages and skip reasons.
    async fn urls(&self, rows: &mut Rows<'_>) -> Result<(), DistError> {
        for host in self.hosts {
            let hk = self.keys.host(host);
            let host_id = rows.host_id(host).map_err(self.sql)?;
            let mut batches = Vec::new();
            scan_hash(self.redis, &hk.seen, |batch| {
                batches.push(batch);
                Ok(())
            })
            .await?;
            for batch in batches {
                let (pages, skips) = details(self.redis, &hk, &batch).await?;
                for (((key, admission), page), skip) in batch.iter().zip(pages).zip(skips) {
                    let admission: Admission = parse(admission, key)?;
                    let page = page.map(|p| parse::<PageResult>(&p, key)).transpose()?;
                    rows.insert(key, host_id, &admission, page.as_ref(), skip.as_deref())
                        .map_err(self.sql)?;
                }
            }
        }
        Ok(())
    }

    /// The edge rows, `BATCH` edge lists at a time; ends a scan missed are read then.
    async fn edges(&self, rows: &mut Rows<'_>) -> Result<(), DistError> {
        for host in self.hosts {
            let hk = self.keys.host(host);
            let mut start = 0usize;
            loop {
                let batch: Vec<String> = self
                    .redis
                    .cmd(
                        redis::cmd("LRANGE")
                            .arg(&hk.edges)
                            .arg(start)
                            .arg(start + BATCH - 1),
                    )
                    .await?;
                if batch.is_empty() {
                    break;
                }
                start += batch.len();
                for item in &batch {
                    let e: StoredEdges = parse(item, "an edge list")?;
                    self.edge_list(rows, &e).await?;
                }
            }
        }
        Ok(())
    }

    /// The edge rows of one page.
    async fn edge_list(&self, rows: &mut Rows<'_>, e: &StoredEdges) -> Result<(), DistError> {
        let src = rows.ensure(self.redis, self.keys, &e.src).await?;
        for (dst, kind, nofollow, anchor) in &e.edges {
            let dst = rows.ensure(self.redis, self.keys, dst).await?;
            rows.conn
                .prepare_cached(
                    "INSERT INTO edges (src, dst, kind, nofollow, anchor) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut st| st.execute(params![src, dst, kind, nofollow, anchor]))
                .map_err(self.sql)?;
            rows.copied.edges += 1;
        }
        Ok(())
    }
}

/// A URL's row as a copy writes it: the row's own columns, then its result's.
static INSERT_URL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let marks: Vec<String> = (1..=8 + columns::COLUMNS.len())
        .map(|i| format!("?{i}"))
        .collect();
    format!(
        "INSERT OR IGNORE INTO urls (id, key, url, host_id, depth, state, skip_reason, referrer, {})
         VALUES ({})",
        columns::names(),
        marks.join(", ")
    )
});

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, DistError> {
    serde_json::from_str(text).map_err(|e| DistError::Corrupt {
        what: format!("the record of {what}"),
        detail: e.to_string(),
    })
}

/// Every field of a hash, `BATCH` at a time.
async fn scan_hash(
    redis: &Redis,
    key: &str,
    mut each: impl FnMut(Vec<(String, String)>) -> Result<(), DistError>,
) -> Result<(), DistError> {
    let mut cursor = "0".to_string();
    loop {
        let (next, flat): (String, Vec<String>) = redis
            .cmd(
                redis::cmd("HSCAN")
                    .arg(key)
                    .arg(&cursor)
                    .arg("COUNT")
                    .arg(BATCH),
            )
            .await?;
        let mut pairs = Vec::with_capacity(flat.len() / 2);
        let mut it = flat.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            pairs.push((k, v));
        }
        each(pairs)?;
        if next == "0" {
            return Ok(());
        }
        cursor = next;
    }
}

type Details = (Vec<Option<String>>, Vec<Option<String>>);

/// The stored pages and skip reasons of a batch of keys of one host, in one pipeline.
async fn details(
    redis: &Redis,
    hk: &HostKeys,
    batch: &[(String, String)],
) -> Result<Details, DistError> {
    if batch.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut pipe = redis::pipe();
    let mut pages = redis::cmd("HMGET");
    pages.arg(&hk.pages);
    let mut skips = redis::cmd("HMGET");
    skips.arg(&hk.skip);
    for (k, _) in batch {
        pages.arg(k);
        skips.arg(k);
    }
    pipe.add_command(pages).add_command(skips);
    redis.pipe(&pipe).await
}

struct Rows<'c> {
    conn: &'c Connection,
    ids: HashMap<u128, i64>,
    host_ids: HashMap<String, i64>,
    copied: Copied,
}

impl Rows<'_> {
    fn assign(&mut self, key: &str) -> i64 {
        let next = self.ids.len() as i64 + 1;
        *self.ids.entry(key_hash(key)).or_insert(next)
    }

    fn host_id(&mut self, host: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.host_ids.get(host) {
            return Ok(*id);
        }
        let id = self.host_ids.len() as i64 + 1;
        self.conn
            .prepare_cached("INSERT INTO hosts (id, name) VALUES (?1, ?2)")?
            .execute(params![id, host])?;
        self.host_ids.insert(host.to_owned(), id);
        Ok(id)
    }

    fn insert(
        &mut self,
        key: &str,
        host_id: i64,
        admission: &Admission,
        page: Option<&PageResult>,
        skip: Option<&str>,
    ) -> rusqlite::Result<()> {
        let id = self.assign(key);
        let referrer = admission.referrer.as_deref().map(|r| self.assign(r));
        let doc = SkipReason::SitemapDoc.as_str();
        let (state, skip_reason) = match (page, skip) {
            // Read as a sitemap: done, and marked so it is never taken for a page.
            (Some(_), Some(s)) if s == doc => (UrlState::Done, Some(doc)),
            (Some(p), _) if p.failed => (UrlState::Failed, None),
            (Some(_), _) => (UrlState::Done, None),
            (None, Some(s)) => (UrlState::Skipped, Some(s)),
            (None, None) => (UrlState::Queued, None),
        };
        let fetched = page;
        let mut st = self.conn.prepare_cached(&INSERT_URL)?;
        st.raw_bind_parameter(1, id)?;
        st.raw_bind_parameter(2, key)?;
        st.raw_bind_parameter(3, &admission.url)?;
        st.raw_bind_parameter(4, host_id)?;
        st.raw_bind_parameter(
            5,
            fetched.map_or(admission.depth, |p| p.depth.min(admission.depth)),
        )?;
        st.raw_bind_parameter(6, state as i64)?;
        st.raw_bind_parameter(7, skip_reason)?;
        st.raw_bind_parameter(8, referrer)?;
        columns::bind(&mut st, 9, fetched)?;
        let changed = st.raw_execute()?;
        if changed == 1 {
            self.copied.urls += 1;
            if fetched.is_some() {
                self.copied.pages += 1;
            }
        }
        Ok(())
    }

    /// The id of `key`, reading its row from Redis when the scans missed it (a running
    /// crawl admitted it after its host was read).
    async fn ensure(
        &mut self,
        redis: &Redis,
        keys: &CrawlKeys,
        key: &str,
    ) -> Result<i64, DistError> {
        if let Some(id) = self.ids.get(&key_hash(key)) {
            if self.row_exists(*id) {
                return Ok(*id);
            }
        }
        let host = url::Url::parse(key)
            .map(|u| host_key(&u))
            .unwrap_or_default();
        let hk = keys.host(&host);
        let rec: Option<String> = redis.cmd(redis::cmd("HGET").arg(&hk.seen).arg(key)).await?;
        let admission = match rec {
            Some(r) => parse(&r, key)?,
            None => Admission::default(),
        };
        let (pages, skips) = details(redis, &hk, &[(key.to_owned(), String::new())]).await?;
        let page = pages
            .into_iter()
            .next()
            .flatten()
            .map(|p| parse::<PageResult>(&p, key))
            .transpose()?;
        let skip = skips.into_iter().next().flatten();
        let sql = sql_error("the copy");
        let host_id = self.host_id(&host).map_err(sql)?;
        self.insert(key, host_id, &admission, page.as_ref(), skip.as_deref())
            .map_err(sql)?;
        Ok(self.assign(key))
    }

    fn row_exists(&self, id: i64) -> bool {
        self.conn
            .prepare_cached("SELECT 1 FROM urls WHERE id = ?1")
            .and_then(|mut st| st.exists([id]))
            .unwrap_or(false)
    }
}
