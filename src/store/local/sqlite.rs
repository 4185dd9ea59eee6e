//! Opening a trawl SQLite file: refuse what is not ours, migrate, lock, and read back what
//! a resumed crawl needs.
//!
//! Nothing here ever rewrites a file it did not create: a foreign or damaged file is
//! reported and left alone. The lock is an advisory `flock` on the database file itself,
//! held for the life of the crawl, so a second `trawl crawl` on the same file is refused
//! while readers (`trawl export`) are not; SQLite's own locks are POSIX record locks, which
//! on Linux do not interact with `flock`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::error::StoreError;
use super::pending::{HostId, UrlId};
use crate::store::{now_ms, UrlState};

/// `PRAGMA application_id` of a trawl file ("trwl").
const APPLICATION_ID: i64 = 0x7472_776c;

/// Schema migrations, in order; `PRAGMA user_version` is the number applied.
pub(crate) const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/0001_init.sql"),
    include_str!("../../../migrations/0002_politeness.sql"),
    include_str!("../../../migrations/0003_anchor.sql"),
    include_str!("../../../migrations/0004_last_modified.sql"),
    include_str!("../../../migrations/0005_collected.sql"),
    include_str!("../../../migrations/0006_link_check.sql"),
    include_str!("../../../migrations/0007_generations.sql"),
    include_str!("../../../migrations/0008_edge_ranges.sql"),
    include_str!("../../../migrations/0009_gen_urls_rowid.sql"),
];

/// How a store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// For crawling: created if missing, migrated, locked against other crawlers.
    Crawl,
    /// For reading (export, report): must exist; never written.
    Read,
}

/// The `crawl` row.
#[derive(Debug, Clone)]
pub struct CrawlRow {
    /// Seed URLs as given.
    pub seeds: Vec<String>,
    /// TOML of the configuration.
    pub config: String,
    /// When the crawl started.
    pub started_at: i64,
    /// When the frontier drained, if it did.
    pub finished_at: Option<i64>,
    /// The process crawling now, as last recorded.
    pub running_pid: Option<i64>,
}

/// What a resumed crawl starts from, besides the visited set.
#[derive(Debug, Default)]
pub struct Resumed {
    /// Every host: id and name.
    pub hosts: Vec<(HostId, String)>,
    /// Hosts paused until a Unix ms still in the future.
    pub paused: Vec<(HostId, i64)>,
    /// Queued URLs per host (all of them on disk, in the spill table).
    pub queued_per_host: HashMap<HostId, u64>,
    /// Largest URL id in use.
    pub max_url_id: Option<UrlId>,
    /// URLs that were admitted for fetching (not skipped): what `max-pages` counts.
    pub admitted: u64,
    /// The same per host, for `max-pages-per-host`.
    pub admitted_per_host: HashMap<HostId, u64>,
    /// Rows by state.
    pub done: u64,
    /// Rows that failed.
    pub failed: u64,
}

/// A URL read back on resume.
#[derive(Debug, Clone, Copy)]
pub struct KnownUrl<'a> {
    /// Its id.
    pub id: UrlId,
    /// Its canonical key.
    pub key: &'a str,
    /// Its depth.
    pub depth: u32,
    /// Why it was skipped, if it was.
    pub skip_reason: Option<&'a str>,
    /// Its host.
    pub host: HostId,
}

/// An open trawl database.
pub struct SqliteStore {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// Holds the crawl lock while alive.
    pub(super) _lock: Option<File>,
    /// For readers: tidy up after the connection closes (after `conn` on purpose).
    pub(super) _cleanup: Option<ReaderCleanup>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteStore {
    /// Open (and for [`OpenMode::Crawl`], create, migrate and lock) the file at `path`.
    pub fn open(path: &Path, mode: OpenMode) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        let exists = path.exists();
        if mode == OpenMode::Read && !exists {
            return Err(StoreError::Open {
                path: shown,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such file; give the --db of an existing crawl",
                ),
            });
        }
        if exists {
            check_header(path)?;
        } else {
            check_folder(path)?;
        }
        let lock = match mode {
            OpenMode::Crawl => Some(take_lock(path)?),
            OpenMode::Read => None,
        };
        let flags = match mode {
            OpenMode::Crawl => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            OpenMode::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let reader_files_existed = mode == OpenMode::Read
            && (sibling(path, "-wal").exists() || sibling(path, "-shm").exists());
        let conn = Connection::open_with_flags(path, flags).map_err(|e| classify(&shown, e))?;
        let store = SqliteStore {
            conn,
            path: path.to_owned(),
            _lock: lock,
            _cleanup: (mode == OpenMode::Read && !reader_files_existed)
                .then(|| ReaderCleanup(path.to_owned())),
        };
        store.finish_open(mode)
    }

    fn finish_open(mut self, mode: OpenMode) -> Result<SqliteStore, StoreError> {
        self.check_ours()?;
        if mode == OpenMode::Crawl {
            self.configure()?;
            self.migrate()?;
        } else if self.user_version()? == 0 {
            return Err(StoreError::NotTrawl {
                path: self.path.display().to_string(),
            });
        }
        Ok(self)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for readers (export, report).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection to write through (a Redis crawl's collector, the check cache).
    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    pub(super) fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path.display().to_string(), e)
    }

    fn user_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    fn check_ours(&self) -> Result<(), StoreError> {
        let app: i64 = self
            .conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let tables: i64 = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if app != APPLICATION_ID && tables > 0 {
            return Err(StoreError::NotTrawl {
                path: self.path.display().to_string(),
            });
        }
        let version = self.user_version()?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StoreError::TooNew {
                path: self.path.display().to_string(),
                found: version,
                supported: MIGRATIONS.len() as i64,
            });
        }
        Ok(())
    }

    fn configure(&self) -> Result<(), StoreError> {
        // WAL: readers (export, status) never block the writer. NORMAL: a commit is not
        // fsynced, so a power cut may lose the last few batches but never corrupts; a
        // killed process loses nothing that was committed. An 8 MB page cache: the writer
        // appends (urls, edges) and updates rows by id; at 32 MB the cache was a part of
        // peak memory that grew with the file, and the 1e6-URL frontier run is no slower
        // with 8 (BENCHMARKS.md, "Memory flat with the frontier").
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::ReadOnly {
                path: self.path.display().to_string(),
                detail: format!("could not switch to WAL journal (got {mode})"),
            });
        }
        self.conn
            .execute_batch(
                "PRAGMA synchronous = NORMAL;
                 PRAGMA temp_store = MEMORY;
                 PRAGMA cache_size = -8192;",
            )
            .map_err(|e| self.err(e))?;
        self.conn
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let version = self.user_version()? as usize;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = self
                .conn
                .transaction()
                .map_err(|e| classify_path(&self.path, e))?;
            tx.execute_batch(sql)
                .and_then(|_| {
                    tx.execute_batch(&format!(
                        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {}",
                        i + 1
                    ))
                })
                .and_then(|_| tx.commit())
                .map_err(|e| classify_path(&self.path, e))?;
        }
        Ok(())
    }

    /// The crawl row, if a crawl was started in this file.
    pub fn crawl(&self) -> Result<Option<CrawlRow>, StoreError> {
        self.conn
            .query_row(
                "SELECT seeds, config, started_at, finished_at, running_pid FROM crawl WHERE id = 1",
                [],
                |r| {
                    let seeds: String = r.get(0)?;
                    Ok(CrawlRow {
                        seeds: serde_json::from_str(&seeds).unwrap_or_default(),
                        config: r.get(1)?,
                        started_at: r.get(2)?,
                        finished_at: r.get(3)?,
                        running_pid: r.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Record a new crawl (or replace the seeds and configuration of this one).
    pub fn write_crawl(&self, seeds: &[String], config_toml: &str) -> Result<(), StoreError> {
        let seeds = serde_json::to_string(seeds).expect("strings serialise");
        let now = now_ms();
        self.conn
            .execute(
                "INSERT INTO crawl (id, seeds, config, trawl_version, started_at, updated_at)
                 VALUES (1, ?1, ?2, ?3, ?4, ?4)
                 ON CONFLICT (id) DO UPDATE SET seeds = ?1, config = ?2, trawl_version = ?3",
                params![seeds, config_toml, env!("CARGO_PKG_VERSION"), now],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Mark the crawl as run by this process (shown by the "in use" error of others).
    pub fn mark_running(&self, running: bool) -> Result<(), StoreError> {
        let pid = running.then(|| i64::from(std::process::id()));
        self.conn
            .execute(
                "UPDATE crawl SET running_pid = ?1, finished_at = CASE WHEN ?2 THEN NULL ELSE finished_at END WHERE id = 1",
                params![pid, running],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Prepare an unfinished crawl to continue: every queued URL goes to the spill table
    /// (the frontier refills its in-memory queues from there), and `visit` is called with
    /// every known URL so the caller can rebuild the visited set.
    pub fn resume(&mut self, visit: impl FnMut(KnownUrl<'_>)) -> Result<Resumed, StoreError> {
        let path = self.path.clone();
        let e = |e| classify_path(&path, e);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute_batch(
            "DELETE FROM spill;
             INSERT INTO spill (host_id, url_id)
                 SELECT host_id, id FROM urls WHERE state = 0 ORDER BY depth, id;",
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;

        let mut out = Resumed {
            hosts: self.collect_rows("SELECT id, name FROM hosts", [], |r| {
                Ok((r.get::<_, i64>(0)? as HostId, r.get(1)?))
            })?,
            paused: self.collect_rows(
                "SELECT id, paused_until FROM hosts WHERE paused_until > ?1",
                [now_ms()],
                |r| Ok((r.get::<_, i64>(0)? as HostId, r.get(1)?)),
            )?,
            queued_per_host: self.collect_rows(
                "SELECT host_id, count(*) FROM spill GROUP BY host_id",
                [],
                |r| Ok((r.get::<_, i64>(0)? as HostId, r.get::<_, i64>(1)? as u64)),
            )?,
            ..Resumed::default()
        };
        self.read_known(&mut out, visit).map_err(e)?;
        Ok(out)
    }

    /// Every row of `sql`, mapped by `row`.
    fn collect_rows<T, C: FromIterator<T>>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<C, StoreError> {
        let mut st = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = st.query_map(params, row).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<C>>()
            .map_err(|e| self.err(e))
    }

    /// Call `visit` with every known URL, and count them into `out`.
    fn read_known(
        &self,
        out: &mut Resumed,
        mut visit: impl FnMut(KnownUrl<'_>),
    ) -> rusqlite::Result<()> {
        let mut st = self
            .conn
            .prepare("SELECT id, key, state, depth, skip_reason, host_id FROM urls")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let id = r.get::<_, i64>(0)? as UrlId;
            visit(KnownUrl {
                id,
                key: r.get_ref(1)?.as_str()?,
                depth: r.get(3)?,
                skip_reason: r.get_ref(4)?.as_str_or_null()?,
                host: r.get::<_, i64>(5)? as HostId,
            });
            out.max_url_id = Some(out.max_url_id.map_or(id, |m| m.max(id)));
            let state = UrlState::from_code(r.get(2)?);
            if state != Some(UrlState::Skipped) {
                let host = r.get::<_, i64>(5)? as HostId;
                *out.admitted_per_host.entry(host).or_default() += 1;
            }
            match state {
                Some(UrlState::Skipped) => {}
                Some(UrlState::Done) => {
                    out.admitted += 1;
                    out.done += 1
                }
                Some(UrlState::Failed) => {
                    out.admitted += 1;
                    out.failed += 1
                }
                _ => out.admitted += 1,
            }
        }
        Ok(())
    }

    /// URLs known to the crawl: fetched, queued and skipped.
    pub fn count_urls(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM urls", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }
}

fn check_header(path: &Path) -> Result<(), StoreError> {
    let shown = path.display().to_string();
    let mut f = File::open(path).map_err(|source| StoreError::Open {
        path: shown.clone(),
        source,
    })?;
    let mut head = [0u8; 16];
    let n = f.read(&mut head).map_err(|source| StoreError::Open {
        path: shown.clone(),
        source,
    })?;
    // An empty file is a database SQLite has not written yet; anything else must carry
    // SQLite's magic, or SQLite might decide to treat it as empty and overwrite it.
    if n > 0 && (n < 16 || &head != b"SQLite format 3\0") {
        return Err(StoreError::Corrupt {
            path: shown,
            detail: "it does not start with the SQLite header".into(),
        });
    }
    Ok(())
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A read-only connection to a WAL file creates its `-wal` and `-shm` and, unable to
/// checkpoint, leaves them behind. When a reader that found none closes (or fails to
/// open), they are removed again, so readers leave a file as they found it: only when no
/// crawler holds the file (it takes the lock before opening) and the `-wal` holds nothing.
/// Declared after the connection in [`SqliteStore`], so it runs once that is closed.
pub(super) struct ReaderCleanup(PathBuf);

impl Drop for ReaderCleanup {
    fn drop(&mut self) {
        remove_reader_files(&self.0);
    }
}

fn remove_reader_files(path: &Path) {
    let Ok(file) = File::open(path) else { return };
    if file.try_lock().is_err() {
        return;
    }
    let wal = sibling(path, "-wal");
    if std::fs::metadata(&wal).map_or(true, |m| m.len() == 0) {
        let _ = std::fs::remove_file(&wal);
        let _ = std::fs::remove_file(sibling(path, "-shm"));
    }
}

/// That a crawl file can be made at `path`: its folder exists. Said before anything is
/// crawled (a Redis crawl records its results file before a collector first opens it).
pub fn check_folder(path: &Path) -> Result<(), StoreError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => return Ok(()),
    };
    if dir.is_dir() {
        return Ok(());
    }
    Err(StoreError::NoFolder {
        path: path.display().to_string(),
        dir: dir.display().to_string(),
    })
}

fn take_lock(path: &Path) -> Result<File, StoreError> {
    let shown = path.display().to_string();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                StoreError::ReadOnly {
                    path: shown.clone(),
                    detail: source.to_string(),
                }
            }
            _ => StoreError::Open {
                path: shown.clone(),
                source,
            },
        })?;
    // Held with no crawler recorded: a process is opening or closing the file, or one that
    // just closed it shares the lock a moment longer with a child it is starting (between
    // fork and exec the child holds every descriptor). Worth a short wait.
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = running_pid(path);
                if pid.is_none() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                }
                let pid = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                return Err(StoreError::Locked { path: shown, pid });
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StoreError::Open {
                    path: shown,
                    source,
                })
            }
        }
    }
}

/// How long a lock held with no crawler recorded is waited for.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

fn running_pid(path: &Path) -> Option<i64> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    conn.query_row("SELECT running_pid FROM crawl WHERE id = 1", [], |r| {
        r.get(0)
    })
    .ok()
    .flatten()
}

fn classify_path(path: &Path, e: rusqlite::Error) -> StoreError {
    classify(&path.display().to_string(), e)
}

/// Turn a SQLite error into one that tells the user what to do.
pub(super) fn classify(path: &str, e: rusqlite::Error) -> StoreError {
    let code = match &e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: path.into(),
            detail: e.to_string(),
        },
        Some(ErrorCode::ReadOnly)
        | Some(ErrorCode::CannotOpen)
        | Some(ErrorCode::PermissionDenied) => StoreError::ReadOnly {
            path: path.into(),
            detail: e.to_string(),
        },
        Some(ErrorCode::DiskFull) => StoreError::DiskFull { path: path.into() },
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Locked {
            path: path.into(),
            pid: String::new(),
        },
        _ => StoreError::Sqlite {
            path: path.into(),
            source: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file at schema 8 with a kept generation comes out of the upgrade to 9 with
    /// every row, found by its unique (generation, id) index.
    #[test]
    fn schema_9_keeps_the_kept_generations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let conn = Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..8] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 8;
             INSERT INTO gen_urls (generation, id, key, host_id, depth, state, status, ids,
                                   edges_from, outlinks)
             VALUES (1, 7, 'http://a/', 1, 0, 1, 200, 'top x', 1, 3),
                    (2, 7, 'http://a/', 1, 0, 1, 304, 'top x', 4, 3);"
        ))
        .unwrap();
        drop(conn);
        let store = SqliteStore::open(&path, OpenMode::Crawl).unwrap();
        assert_eq!(store.user_version().unwrap(), MIGRATIONS.len() as i64);
        let rows: Vec<(i64, i64, String, i64)> = store
            .conn()
            .prepare("SELECT generation, status, ids, edges_from FROM gen_urls WHERE id = 7")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [(1, 200, "top x".into(), 1), (2, 304, "top x".into(), 4)]
        );
        let duplicate = store.conn().execute(
            "INSERT INTO gen_urls (generation, id, key, host_id, depth, state)
             VALUES (1, 7, 'http://a/', 1, 0, 1)",
            [],
        );
        assert!(duplicate.is_err(), "(generation, id) stays unique");
    }
}
