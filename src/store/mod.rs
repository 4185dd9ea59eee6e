//! The store: where the truth of a crawl lives.
//!
//! One writer owns the database connection (`writer`); everything else talks to it with
//! `WriteOp` messages (through a [`WriterHandle`]), and it commits them in batched transactions. URLs admitted to the
//! crawl are not sent as messages but appended to [`Pending`] *before* they become visible
//! in the visited set, and the writer drains `Pending` before every message: so any
//! message that mentions a URL id finds that URL's row already written in the same or an
//! earlier transaction, and after a crash every committed edge points at a stored URL.
//!
//! `sqlite` opens, checks, migrates and locks the file and reads back what a resumed crawl
//! needs.

mod sqlite;
mod writer;

use std::sync::Mutex;

pub use sqlite::{CrawlRow, KnownUrl, OpenMode, Resumed, SqliteStore};
pub use writer::{StoreWriter, WriterHandle};

use crate::link::LinkKind;
use crate::url_norm::SkipReason;

/// A URL's id: the `urls.id` column, assigned when the URL is admitted.
pub type UrlId = u64;
/// A host's id: the `hosts.id` column.
pub type HostId = u32;

/// Where a URL is in its life (`urls.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlState {
    /// Admitted, waiting to be fetched.
    Queued = 0,
    /// Fetched: a response came back (any status).
    Done = 1,
    /// No usable response: network error, timeout, redirect loop, ...
    Failed = 2,
    /// Known but never fetched (out of scope, limits).
    Skipped = 3,
}

impl UrlState {
    /// Inverse of `as i64`.
    pub fn from_code(code: i64) -> Option<UrlState> {
        Some(match code {
            0 => UrlState::Queued,
            1 => UrlState::Done,
            2 => UrlState::Failed,
            3 => UrlState::Skipped,
            _ => return None,
        })
    }

    /// The name used in exports.
    pub fn as_str(self) -> &'static str {
        match self {
            UrlState::Queued => "queued",
            UrlState::Done => "done",
            UrlState::Failed => "failed",
            UrlState::Skipped => "skipped",
        }
    }
}

/// Why the store failed. Each message says what the user can do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file is not a SQLite database, or is damaged.
    #[error("{path} is not a usable trawl database ({detail}); it was left untouched: give another --db path, or restore the file from a backup")]
    Corrupt {
        /// The file.
        path: String,
        /// What SQLite or trawl found.
        detail: String,
    },
    /// A SQLite database, but not one trawl made.
    #[error("{path} is a SQLite database but not a trawl crawl; it was left untouched: give another --db path")]
    NotTrawl {
        /// The file.
        path: String,
    },
    /// Made by a newer trawl.
    #[error("{path} has schema version {found}, newer than this trawl understands ({supported}); upgrade trawl")]
    TooNew {
        /// The file.
        path: String,
        /// The file's version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// Another process holds the crawl.
    #[error("{path} is in use by another trawl process{pid}; wait for it to finish or stop it, then run again")]
    Locked {
        /// The file.
        path: String,
        /// " (pid N)" when known.
        pid: String,
    },
    /// The file or its directory cannot be written.
    #[error("{path} cannot be written ({detail}); check its permissions and free disk space")]
    ReadOnly {
        /// The file.
        path: String,
        /// What the OS or SQLite said.
        detail: String,
    },
    /// The file could not be opened at all.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The disk is full: what is committed is safe.
    #[error("the disk holding {path} is full; everything committed so far is safe: free some space and run the same command again to resume")]
    DiskFull {
        /// The file.
        path: String,
    },
    /// Any other SQLite error.
    #[error("database error on {path}: {source}")]
    Sqlite {
        /// The file.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The WARC records of a page could not be written, so its result was not committed.
    #[error(transparent)]
    Warc(#[from] crate::warc::WarcError),
    /// The writer thread is gone (it stopped on an earlier error).
    #[error("the store writer has stopped")]
    WriterGone,
}

/// A host first seen during this run.
#[derive(Debug, Clone)]
pub struct NewHost {
    /// Its id.
    pub id: HostId,
    /// `host[:port]`.
    pub name: String,
}

/// A URL first seen during this run: becomes a `urls` row.
#[derive(Debug, Clone)]
pub struct NewUrl {
    /// Its id.
    pub id: UrlId,
    /// Its host.
    pub host: HostId,
    /// Canonical key.
    pub key: String,
    /// The URL to fetch when it differs from `key`.
    pub url: Option<String>,
    /// Click depth.
    pub depth: u32,
    /// First page linking here.
    pub referrer: Option<UrlId>,
    /// `Some` when the URL will never be fetched.
    pub skip: Option<SkipReason>,
}

/// One edge out of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Target URL.
    pub dst: UrlId,
    /// Element or event that made it.
    pub kind: LinkKind,
    /// `rel=nofollow` on the element.
    pub nofollow: bool,
    /// The link's text (for `<a>`).
    pub anchor: Option<String>,
}

/// What fetching one URL produced.
#[derive(Debug, Clone, Default)]
pub struct PageRecord {
    /// The URL fetched.
    pub id: UrlId,
    /// Its depth when fetched (it may have been found along a shorter path since queued).
    pub depth: u32,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// `Done` or `Failed`.
    pub failed: bool,
    /// HTTP status, when a response came.
    pub status: Option<u16>,
    /// `Content-Type` as sent.
    pub content_type: Option<String>,
    /// Body bytes read (or announced by `Content-Length` when the body was not read).
    pub size: Option<u64>,
    /// The body passed `max-body` and was cut.
    pub truncated: bool,
    /// `<title>`.
    pub title: Option<String>,
    /// The page asked not to be indexed (meta robots or X-Robots-Tag).
    pub noindex: bool,
    /// When the request started, Unix ms.
    pub fetched_at: i64,
    /// Request start to body end.
    pub fetch_ms: u64,
    /// Short machine-readable error class (`timeout`, `connect`, ...).
    pub error_kind: Option<&'static str>,
    /// Human-readable error.
    pub error: Option<String>,
    /// Outlinks in document order (for a redirect: the one `redirect` edge).
    pub edges: Vec<Edge>,
}

/// A queued URL read back from the spill table.
#[derive(Debug, Clone)]
pub struct Refilled {
    /// Its id.
    pub id: UrlId,
    /// The URL to fetch.
    pub url: String,
    /// Click depth.
    pub depth: u32,
}

/// Rows admitted but not yet handed to the writer; see the module doc for why this is
/// not a message.
#[derive(Debug, Default)]
pub struct Pending {
    inner: Mutex<PendingRows>,
}

/// The rows inside [`Pending`].
#[derive(Debug, Default)]
pub struct PendingRows {
    /// New hosts.
    pub hosts: Vec<NewHost>,
    /// New URLs.
    pub urls: Vec<NewUrl>,
    /// Queued URLs the frontier keeps on disk: (host, url).
    pub spills: Vec<(HostId, UrlId)>,
    /// URLs found along a shorter path: (url, new depth).
    pub depths: Vec<(UrlId, u32)>,
    /// URLs skipped for `max-depth` that a shorter path brought within it: (url, depth).
    pub requeues: Vec<(UrlId, u32)>,
    /// Hosts paused by a 429 or 503: (host, until Unix ms), so a restart honours them.
    pub pauses: Vec<(HostId, i64)>,
    /// Queued URLs decided against at dispatch (robots.txt): (url, reason).
    pub skips: Vec<(UrlId, SkipReason)>,
}

impl Pending {
    /// Append a host row.
    pub fn push_host(&self, host: NewHost) {
        self.lock().hosts.push(host);
    }

    /// Append a URL row.
    pub fn push_url(&self, url: NewUrl) {
        self.lock().urls.push(url);
    }

    /// Append spill rows.
    pub fn push_spills(&self, spills: impl IntoIterator<Item = (HostId, UrlId)>) {
        self.lock().spills.extend(spills);
    }

    /// Record a shorter path to a URL.
    pub fn push_depth(&self, id: UrlId, depth: u32) {
        self.lock().depths.push((id, depth));
    }

    /// Record that a URL skipped for depth is to be fetched after all.
    pub fn push_requeue(&self, id: UrlId, depth: u32) {
        self.lock().requeues.push((id, depth));
    }

    /// Record a queued URL as skipped.
    pub fn push_skip(&self, id: UrlId, reason: SkipReason) {
        self.lock().skips.push((id, reason));
    }

    /// Record a host's pause.
    pub fn push_pause(&self, host: HostId, until_ms: i64) {
        self.lock().pauses.push((host, until_ms));
    }

    /// Take everything appended so far.
    pub fn take(&self) -> Option<PendingRows> {
        let mut g = self.lock();
        if g.hosts.is_empty()
            && g.urls.is_empty()
            && g.spills.is_empty()
            && g.depths.is_empty()
            && g.requeues.is_empty()
            && g.pauses.is_empty()
            && g.skips.is_empty()
        {
            return None;
        }
        Some(std::mem::take(&mut *g))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PendingRows> {
        // A panic while pushing cannot leave the vectors half-updated, so a poisoned lock
        // is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
