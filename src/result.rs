//! What fetching one URL came to: the one result type of a page, made by `page`, stored by
//! both stores (a `urls` row in SQLite, a JSON value in Redis), counted by the run's
//! statistics and handed to page hooks and events; and the kinds of failure, which
//! `fetch` names too. Depends on nothing else of trawl, so every module can use it.

use serde::{Deserialize, Serialize};

use crate::names::stable_names;

/// The result of fetching one URL (its outlinks travel beside it, see `admit::Outlinks`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageResult {
    /// Click depth when fetched (it may have been found along a shorter path since it was
    /// queued).
    pub depth: u32,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// No usable response: a network error, a timeout, a redirect loop, ...
    #[serde(default)]
    pub failed: bool,
    /// HTTP status, when a response came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `Content-Type` as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Body bytes read (or announced by `Content-Length` when the body was not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The body passed `max-body` and was cut.
    #[serde(default)]
    pub truncated: bool,
    /// `<title>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The page asked not to be indexed (meta robots or `X-Robots-Tag`).
    #[serde(default)]
    pub noindex: bool,
    /// The response's `Last-Modified` header, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// An HTML page's fragment targets (every `id`, every `<a name>`), newline-separated;
    /// `None` when not collected (not HTML, `check-fragments` off, or
    /// past the per-page cap). What a link's `#fragment` is judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<String>,
    /// Checked, not crawled: an out-of-scope link under `check-external`, asked with HEAD
    /// (GET when HEAD is refused or the page's ids are needed); its links are not followed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checked: bool,
    /// The response's `ETag` header, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// xxh3-128 of the body as read (decoded); `None` when no body was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<u128>,
    /// In a refresh, how the page was found unchanged since the previous generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchanged: Option<Unchanged>,
    /// When the request started, Unix ms.
    pub fetched_at: i64,
    /// Request start to body end, in milliseconds.
    pub fetch_ms: u64,
    /// What kind of failure, when something failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// The failure in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a refreshed page was found unchanged (`urls.unchanged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unchanged {
    /// The server answered 304 Not Modified to the previous generation's validators: its
    /// record and links are carried over.
    NotModified = 1,
    /// A 200 whose body has the previous generation's content hash.
    SameContent = 2,
}

impl Unchanged {
    /// The stored code.
    pub fn code(self) -> i64 {
        self as i64
    }

    /// Inverse of [`Unchanged::code`].
    pub fn from_code(code: i64) -> Option<Unchanged> {
        match code {
            1 => Some(Unchanged::NotModified),
            2 => Some(Unchanged::SameContent),
            _ => None,
        }
    }
}

/// Failed seeds listed at most (by a run's summary and by `trawl status`): a crawl of many
/// sites may have many.
pub const MAX_FAILED_SEEDS: usize = 100;

/// A seed (a depth-0 URL, or where it redirects) that got no usable response: what the
/// run's summary and `trawl status` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedSeed {
    /// The URL.
    pub url: String,
    /// What kind of failure ([`ErrorKind`]'s stable name: `dns`, `connect`, ...).
    pub error_kind: String,
    /// The failure in words.
    pub error: String,
}

impl FailedSeed {
    /// The failure of seed `url`, if `result` is one.
    pub fn of(url: String, result: &PageResult) -> Option<FailedSeed> {
        let kind = result.error_kind.filter(|_| result.failed)?;
        Some(FailedSeed {
            url,
            error_kind: kind.as_str().to_string(),
            error: result.error.clone().unwrap_or_default(),
        })
    }
}

impl std::fmt::Display for FailedSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}: {})", self.url, self.error_kind, self.error)
    }
}

/// Milliseconds since the Unix epoch: the times results and stores record.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl PageResult {
    /// The result of a URL at `depth`, after `attempts` attempts, that failed before any
    /// response was read (its host unreachable, its handling panicked), now.
    pub fn failure(depth: u32, attempts: u32, kind: ErrorKind, message: String) -> PageResult {
        let mut result = PageResult {
            depth,
            attempts,
            fetched_at: now_ms(),
            ..PageResult::default()
        };
        result.fail(kind, message);
        result
    }

    /// Mark the page failed, with the kind of failure and a message.
    pub fn fail(&mut self, kind: ErrorKind, message: String) {
        self.failed = true;
        self.error_kind = Some(kind);
        self.error = Some(message);
    }
}

stable_names! {
    /// Why a page failed. [`ErrorKind::as_str`] is the stable name stored in `urls.error_kind`
    /// and shown in summaries and reports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum ErrorKind ("error kind") {
        /// No answer in time (connect, read or the whole request).
        Timeout = "timeout",
        /// The host name did not resolve.
        Dns = "dns",
        /// The connection could not be made (refused, reset, TLS).
        Connect = "connect",
        /// The connection broke while the body was read.
        Body = "body",
        /// The body could not be decoded (a corrupt compressed stream).
        Decode = "decode",
        /// The request could not be sent.
        Request = "request",
        /// The HTTP client itself failed.
        Client = "client",
        /// A redirect's `Location` is not a URL.
        BadLocation = "bad-location",
        /// The HTML could not be parsed.
        Parse = "parse",
        /// A redirect points back to the URL itself or an earlier hop of its chain.
        RedirectLoop = "redirect-loop",
        /// A redirect chain longer than `max-redirects`.
        RedirectLimit = "redirect-limit",
        /// trawl or the page hook panicked on this page.
        Panic = "panic",
        /// A queued URL that no longer parses (a damaged Redis record).
        BadUrl = "bad-url",
    }
}

impl Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl rusqlite::ToSql for ErrorKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &k in ErrorKind::ALL {
            assert_eq!(k.as_str().parse::<ErrorKind>(), Ok(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<ErrorKind>(&json).unwrap(), k);
        }
        assert!("teapot".parse::<ErrorKind>().is_err());
    }
}
