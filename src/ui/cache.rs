//! The page's own index of a crawl file, so its tables page in SQL however large the crawl.
//!
//! The crawl file has no index by link target or by URL text (the crawl keeps its inserts
//! fast) and a reader may not add one, and a report such as `broken` or `top` is one pass
//! over every edge. Run per request, a 10-million-URL file would answer each click in
//! minutes. So the page keeps a second SQLite file beside the crawl's (`site.db-ui`, or in
//! the temporary directory when the crawl's directory is not writable) holding, per *part*:
//!
//! - each report's rows once, in the report's order (`ord`), with their URL text folded to
//!   lower case for the filter: a page of rows is a primary-key range (`ord > after`), a
//!   filtered one a scan of that table only (see [`super::tables`]);
//! - `inlinks`: every edge's rowid by target, so a page view finds the pages linking to a
//!   URL by index;
//! - `names`: URL id by canonical key and by the URL as fetched.
//!
//! A part is built the first time it is asked for and is current while the crawl file's
//! [`Fingerprint`] is unchanged (a finished crawl: until it is crawled again). While the
//! crawl runs, a part is rebuilt in the background when a request finds it older than
//! [`REBUILD_EVERY`] and ten times its last build time, and the stale one answers meanwhile
//! (its answers say `as_of`); a new crawl or generation in the file is rebuilt before it
//! answers, since its rows would be another crawl's. The index is a cache: a file that
//! cannot be read is deleted and built again, and deleting it loses nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::UiError;
use crate::report::{self, Cell, Kind, Options, ReportError, RowSink};
use crate::store::{now_ms, OpenMode, SqliteStore, StoreError};

/// A running crawl's parts are rebuilt at most this often (and at most every ten times
/// their build time): a build reads the whole file beside the crawl writing it.
pub(super) const REBUILD_EVERY: Duration = Duration::from_secs(30);

/// Rows of `top` kept: who pages past the 100,000 most-linked URLs? (One URL's in-degree
/// is on its page view, from `inlinks`.)
pub(super) const TOP_ROWS: u64 = 100_000;

/// What the index holds, built and checked one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Part {
    /// A report's rows.
    Report(Kind),
    /// Edge rowids by target.
    Inlinks,
    /// URL ids by key and URL.
    Names,
}

impl Part {
    /// The table holding it (and its name in `meta`).
    pub(super) fn table(self) -> &'static str {
        match self {
            Part::Report(kind) => kind.as_str(),
            Part::Inlinks => "inlinks",
            Part::Names => "names",
        }
    }
}

/// When a part was built, from which state of the crawl file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Built {
    /// Milliseconds since the epoch.
    pub at: i64,
    /// Whether the crawl file has changed since.
    pub stale: bool,
}

/// The state of a crawl file a part was built from: the crawl (its start), its
/// generation, and its writer's last commit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    started_at: i64,
    generations: i64,
    updated_at: i64,
    finished_at: Option<i64>,
}

impl Fingerprint {
    fn read(conn: &Connection, schema: &str) -> rusqlite::Result<Fingerprint> {
        conn.query_row(
            &format!(
                "SELECT started_at, (SELECT count(*) FROM {schema}.generations), updated_at,
                        finished_at FROM {schema}.crawl"
            ),
            [],
            |r| {
                Ok(Fingerprint {
                    started_at: r.get(0)?,
                    generations: r.get(1)?,
                    updated_at: r.get(2)?,
                    finished_at: r.get(3)?,
                })
            },
        )
    }

    fn text(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.started_at,
            self.generations,
            self.updated_at,
            self.finished_at.map_or(String::new(), |f| f.to_string())
        )
    }

    /// Whether rows built from `built` (a fingerprint's text) are this crawl's and
    /// generation's, though maybe fewer: a stale part may answer while it is rebuilt.
    fn same_generation(&self, built: &str) -> bool {
        built.starts_with(&format!("{}:{}:", self.started_at, self.generations))
    }
}

/// The index of one crawl file (see the module doc). Shared by every request.
pub(super) struct Cache {
    db: PathBuf,
    path: PathBuf,
    /// Parts being built now: a second request waits for the build, a rebuild is not
    /// started twice.
    building: Mutex<HashSet<Part>>,
    built: std::sync::Condvar,
    /// One build at a time: the index has one writer.
    writer: Mutex<()>,
}

impl Cache {
    /// The index of crawl file `db`, in `db-ui` beside it when that directory is writable.
    pub(super) fn new(db: &Path) -> Arc<Cache> {
        Arc::new(Cache {
            db: db.to_path_buf(),
            path: place(db),
            building: Mutex::new(HashSet::new()),
            built: std::sync::Condvar::new(),
            writer: Mutex::new(()),
        })
    }

    /// The index file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// A connection to the index with the crawl file attached read-only as `crawl`, and
    /// `part` ready in it.
    pub(super) fn ready(self: &Arc<Self>, part: Part) -> Result<(Connection, Built), CacheError> {
        let conn = self.connect()?;
        // Twice at most: a crawl restarting during the build may change it again.
        for _ in 0..2 {
            let now = Fingerprint::read(&conn, "crawl").map_err(|e| self.crawl_err(e))?;
            if let Some((text, at, took)) = built(&conn, part).map_err(|e| self.err(e))? {
                if text == now.text() {
                    return Ok((conn, Built { at, stale: false }));
                }
                if now.same_generation(&text) && now.finished_at.is_none() {
                    let age = Duration::from_millis((now_ms() - at).max(0) as u64);
                    if age >= REBUILD_EVERY.max(Duration::from_millis(took as u64 * 10)) {
                        self.rebuild_later(part);
                    }
                    return Ok((conn, Built { at, stale: true }));
                }
            }
            // None yet, or another crawl's: build it now, or wait for the build under way.
            if self.claim(part, true) {
                let result = self.build(part);
                self.release(part);
                result?;
            }
        }
        match built(&conn, part).map_err(|e| self.err(e))? {
            Some((_, at, _)) => Ok((conn, Built { at, stale: true })),
            None => Err(CacheError::Moving),
        }
    }

    /// Take the right to build `part`; `wait` for a build under way to end (then `false`:
    /// look again at what it built).
    fn claim(&self, part: Part, wait: bool) -> bool {
        let mut building = self.building.lock().expect("not poisoned");
        if !building.contains(&part) {
            building.insert(part);
            return true;
        }
        if wait {
            let _unused = self
                .built
                .wait_while(building, |b| b.contains(&part))
                .expect("not poisoned");
        }
        false
    }

    fn release(&self, part: Part) {
        self.building.lock().expect("not poisoned").remove(&part);
        self.built.notify_all();
    }

    /// Rebuild `part` on a thread of its own unless a build is under way.
    fn rebuild_later(self: &Arc<Self>, part: Part) {
        if !self.claim(part, false) {
            return;
        }
        let cache = self.clone();
        std::thread::spawn(move || {
            if let Err(e) = cache.build(part) {
                tracing::warn!("cannot rebuild the page's {} table: {e}", part.table());
            }
            cache.release(part);
        });
    }

    /// Build `part` from the crawl file as it is now, in one transaction: readers see the
    /// old rows until it commits.
    fn build(&self, part: Part) -> Result<(), CacheError> {
        let _writer = self.writer.lock().expect("not poisoned");
        let started = Instant::now();
        let mut conn = self.connect()?;
        // Read before the rows: a commit in between makes the part look older than it is
        // (rebuilt sooner), never newer.
        let fingerprint = Fingerprint::read(&conn, "crawl").map_err(|e| self.crawl_err(e))?;
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let table = part.table();
        tx.execute_batch(&format!("DROP TABLE IF EXISTS main.\"{table}\""))
            .map_err(|e| self.err(e))?;
        let rows = match part {
            Part::Report(kind) => self.build_report(&tx, kind)?,
            Part::Inlinks => tx
                .execute_batch(
                    "CREATE TABLE main.inlinks (dst INTEGER NOT NULL, edge INTEGER NOT NULL,
                         PRIMARY KEY (dst, edge)) WITHOUT ROWID;
                     INSERT INTO main.inlinks SELECT dst, rowid FROM crawl.edges
                         ORDER BY dst, rowid;",
                )
                .and_then(|()| tx.query_row("SELECT count(*) FROM main.inlinks", [], |r| r.get(0)))
                .map_err(|e| self.crawl_err(e))?,
            Part::Names => tx
                .execute_batch(
                    "CREATE TABLE main.names (name TEXT PRIMARY KEY, id INTEGER NOT NULL)
                         WITHOUT ROWID;
                     INSERT OR IGNORE INTO main.names SELECT key, id FROM crawl.urls;
                     INSERT OR IGNORE INTO main.names
                         SELECT url, id FROM crawl.urls WHERE url IS NOT NULL;",
                )
                .and_then(|()| tx.query_row("SELECT count(*) FROM main.names", [], |r| r.get(0)))
                .map_err(|e| self.crawl_err(e))?,
        };
        let took = started.elapsed().as_millis() as i64;
        tx.execute(
            "INSERT OR REPLACE INTO meta (part, fingerprint, built_at, took_ms, rows)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![table, fingerprint.text(), now_ms(), took, rows],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        tracing::debug!("the page's {table} table: {rows} rows in {took} ms");
        Ok(())
    }

    /// A report's rows into its table, through the report's own row sink.
    fn build_report(&self, tx: &Connection, kind: Kind) -> Result<i64, CacheError> {
        let table = kind.as_str();
        tx.execute_batch(&format!(
            "CREATE TABLE main.\"{table}\" (ord INTEGER PRIMARY KEY, text TEXT NOT NULL,
                 row TEXT NOT NULL)"
        ))
        .map_err(|e| self.err(e))?;
        let store = SqliteStore::open(&self.db, OpenMode::Read)?;
        let insert = tx
            .prepare(&format!(
                "INSERT INTO main.\"{table}\" (text, row) VALUES (?1, ?2)"
            ))
            .map_err(|e| self.err(e))?;
        let mut sink = Insert { insert, rows: 0 };
        let options = Options {
            limit: (kind == Kind::Top).then_some(TOP_ROWS),
            ..Options::default()
        };
        report::rows(&store, kind, &options, &mut sink)?;
        Ok(sink.rows)
    }

    /// The index, created or (when unreadable) replaced, with the crawl file attached.
    fn connect(&self) -> Result<Connection, CacheError> {
        match self.try_connect() {
            Ok(conn) => Ok(conn),
            Err(CacheError::Index { .. }) => {
                // A cache: a file we cannot use is rebuilt from the crawl.
                let _ = std::fs::remove_file(&self.path);
                for suffix in ["-wal", "-shm"] {
                    let mut p = self.path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
                self.try_connect()
            }
            Err(other) => Err(other),
        }
    }

    fn try_connect(&self) -> Result<Connection, CacheError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(|e| self.err(e))?;
        conn.busy_timeout(Duration::from_secs(30))
            .and_then(|()| {
                // A cache: a crash may lose it whole, never corrupt the crawl.
                conn.execute_batch(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;
                     CREATE TABLE IF NOT EXISTS meta (part TEXT PRIMARY KEY,
                         fingerprint TEXT NOT NULL, built_at INTEGER NOT NULL,
                         took_ms INTEGER NOT NULL, rows INTEGER NOT NULL);",
                )
            })
            .map_err(|e| self.err(e))?;
        let uri = url::Url::from_file_path(std::path::absolute(&self.db).unwrap_or_default())
            .map_or_else(|()| self.db.display().to_string(), |u| u.to_string());
        conn.execute("ATTACH DATABASE ?1 AS crawl", [format!("{uri}?mode=ro")])
            .map_err(|e| self.crawl_err(e))?;
        Ok(conn)
    }

    /// An error reading the index (with the crawl attached), for the tables' queries.
    pub(super) fn index_err(&self, source: rusqlite::Error) -> UiError {
        UiError::Cache(self.err(source))
    }

    fn err(&self, source: rusqlite::Error) -> CacheError {
        CacheError::Index {
            path: self.path.display().to_string(),
            source,
        }
    }

    fn crawl_err(&self, source: rusqlite::Error) -> CacheError {
        CacheError::Crawl(StoreError::Sqlite {
            path: self.db.display().to_string(),
            source,
        })
    }
}

/// What `meta` says of `part`: the fingerprint it was built from, when, in how long.
fn built(conn: &Connection, part: Part) -> rusqlite::Result<Option<(String, i64, i64)>> {
    conn.query_row(
        "SELECT fingerprint, built_at, took_ms FROM meta WHERE part = ?1",
        [part.table()],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .optional()
}

/// `db-ui` beside `db` when its directory takes a new file, else in the temporary
/// directory under a name made from `db`'s full path.
fn place(db: &Path) -> PathBuf {
    let mut beside = db.as_os_str().to_owned();
    beside.push("-ui");
    let beside = PathBuf::from(beside);
    let dir = db.parent().filter(|p| !p.as_os_str().is_empty());
    let writable = beside.exists() || tempfile::tempfile_in(dir.unwrap_or(Path::new("."))).is_ok();
    if writable {
        return beside;
    }
    let full = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    let hash = xxhash_rust::xxh3::xxh3_64(full.as_os_str().as_encoded_bytes());
    std::env::temp_dir().join(format!("trawl-ui-{hash:016x}.db"))
}

/// The report's rows into a part's table: the row as JSON in column order, and its text
/// (every URL-like value, lower case) for the filter.
struct Insert<'c> {
    insert: rusqlite::Statement<'c>,
    rows: i64,
}

impl RowSink for Insert<'_> {
    fn row(&mut self, columns: &[&'static str], cells: Vec<Cell>) -> Result<(), ReportError> {
        let mut text = String::new();
        for cell in &cells {
            let mut add = |s: &str| {
                text.push_str(&s.to_lowercase());
                text.push('\n');
            };
            match cell {
                Cell::Text(s) => add(s),
                Cell::List(items) => items.iter().for_each(|s| add(s)),
                Cell::Null | Cell::Int(_) | Cell::Float(_) => {}
            }
        }
        let mut row = Vec::new();
        report::json_object(columns, &cells, &mut row)?;
        let row = String::from_utf8(row).expect("JSON is UTF-8");
        self.insert.execute(params![text, row]).map_err(|e| {
            std::io::Error::other(format!("cannot store a row in the page's index: {e}"))
        })?;
        self.rows += 1;
        Ok(())
    }
}

/// Why the index could not answer.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The index file itself.
    #[error(
        "cannot use the page's index {path}: {source}; delete it (it is rebuilt from the \
         crawl) or free space beside the crawl file"
    )]
    Index {
        /// The index file.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// Reading the crawl file.
    #[error(transparent)]
    Crawl(#[from] StoreError),
    /// A report.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// Another build of the part failed, or the crawl file became another crawl's twice.
    #[error("the crawl file changed while the page's index was built; ask again")]
    Moving,
}
