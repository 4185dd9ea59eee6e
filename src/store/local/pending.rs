//! Rows admitted but not yet written, and the messages of the local store: the pending
//! buffer is filled *before* a URL becomes visible in the visited set, and the writer
//! drains it before every message, so any message that mentions a URL id finds that
//! URL's row already written in the same or an earlier transaction (see `writer`).

use std::sync::Mutex;

use crate::admit::EdgeSpec;
use crate::admit::SkipReason;
use crate::result::PageResult;

/// A URL's id: the `urls.id` column, assigned when the URL is admitted.
pub type UrlId = u64;
/// A host's id: the `hosts.id` column.
pub type HostId = u32;

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

/// One edge out of a page: its target and what admission planned of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Target URL.
    pub dst: UrlId,
    /// Kind, nofollow, text, fragment and place.
    pub spec: EdgeSpec,
}

/// A fetched page as the writer stores it: its row's result and its edges.
#[derive(Debug, Clone, Default)]
pub struct PageRecord {
    /// The URL fetched.
    pub id: UrlId,
    /// What came of it.
    pub result: PageResult,
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
    /// In a refresh: the previous generation's validators of a page that answered 2xx.
    pub validators: Option<Box<crate::refresh::Validators>>,
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
