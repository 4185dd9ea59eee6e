//! Reads a crawl's SQLite file back into sets the tests compare with [`super::Expected`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// What a crawl stored.
#[derive(Debug, Default)]
pub struct Crawled {
    /// Fetched (done or failed) URLs by canonical key: (status, depth, state, error_kind).
    pub fetched: BTreeMap<String, (Option<u16>, u32, i64, Option<String>)>,
    /// Skipped URLs with their reason.
    pub skipped: BTreeMap<String, String>,
    /// Still queued.
    pub queued: BTreeSet<String>,
    /// Edge multiset by (from key, to key, kind name).
    pub edges: BTreeMap<(String, String, String), usize>,
    /// Keys stored more than once (must be empty).
    pub duplicate_keys: Vec<String>,
    /// Result of PRAGMA integrity_check.
    pub integrity: String,
    /// Whether the crawl row says finished.
    pub finished: bool,
}

/// Read everything from `path` (read-only).
pub fn read(path: &Path) -> Crawled {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut out = Crawled {
        integrity: conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap(),
        finished: conn
            .query_row("SELECT finished_at IS NOT NULL FROM crawl", [], |r| {
                r.get(0)
            })
            .unwrap(),
        ..Crawled::default()
    };
    let mut st = conn
        .prepare("SELECT key, state, status, depth, skip_reason, error_kind FROM urls")
        .unwrap();
    let mut seen = BTreeSet::new();
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<u16>>(2)?,
                r.get::<_, u32>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (key, state, status, depth, reason, error_kind) = row.unwrap();
        if !seen.insert(key.clone()) {
            out.duplicate_keys.push(key.clone());
        }
        match state {
            0 => {
                out.queued.insert(key);
            }
            1 | 2 => {
                out.fetched.insert(key, (status, depth, state, error_kind));
            }
            3 => {
                out.skipped.insert(key, reason.unwrap_or_default());
            }
            other => panic!("unknown state {other}"),
        }
    }
    let mut st = conn
        .prepare(
            "SELECT s.key, d.key, e.kind FROM edges e
             JOIN urls s ON s.id = e.src JOIN urls d ON d.id = e.dst",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (s, d, k) = row.unwrap();
        *out.edges
            .entry((
                s,
                d,
                trawl::LinkKind::from_code(k)
                    .expect("a known link kind")
                    .as_str()
                    .to_owned(),
            ))
            .or_default() += 1;
    }
    let dangling: i64 = conn
        .query_row(
            "SELECT count(*) FROM edges WHERE dst NOT IN (SELECT id FROM urls) OR src NOT IN (SELECT id FROM urls)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dangling, 0, "edges pointing at no stored URL");
    out
}

/// `PRAGMA integrity_check` of the file ("ok" when sound), or None when there is no file.
///
/// Opened read-write (never created): after a kill the write-ahead log may need recovery,
/// which a read-only connection refuses ("attempt to write a readonly database"); a
/// resuming trawl recovers it the same way before reading.
pub fn integrity(path: &Path) -> Option<String> {
    if !path.exists() {
        return None;
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
    Some(
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap(),
    )
}

/// `PRAGMA integrity_check` of a copy of the file and its `-wal` and `-shm` (None when
/// there is no file): the check may recover the log, and on the file itself that would
/// delete the WAL a kill left, which the next run must find as the kill left it.
pub fn integrity_of_copy(path: &Path) -> Option<String> {
    if !path.exists() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    std::fs::copy(path, &copy).unwrap();
    for suffix in ["-wal", "-shm"] {
        let mut from = path.as_os_str().to_owned();
        from.push(suffix);
        let from = std::path::PathBuf::from(from);
        if from.exists() {
            let mut to = copy.as_os_str().to_owned();
            to.push(suffix);
            std::fs::copy(&from, std::path::PathBuf::from(to)).unwrap();
        }
    }
    integrity(&copy)
}

/// `PRAGMA integrity_check` of a file a crashed crawl left ("ok" when sound).
pub fn read_partial(path: &Path) -> String {
    integrity(path).expect("the crawl created its file")
}

/// The rows of a two-column query on `path` (read-only), collected.
pub fn pairs<A, B, C>(path: &Path, sql: &str) -> C
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: FromIterator<(A, B)>,
{
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut st = conn.prepare(sql).unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<C, _>>()
        .unwrap();
    rows
}
