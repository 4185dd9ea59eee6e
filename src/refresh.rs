//! Refreshing a finished crawl (`trawl crawl --refresh`): every known page is asked again
//! with the previous generation's validators, so an unchanged page costs a 304 and no
//! body, and what changed is told apart from what did not.
//!
//! The store hands each URL to fetch with its [`Validators`] (the previous generation's
//! `ETag`, `Last-Modified` and content hash, for a page that answered 2xx then). A 304
//! is stored as the previous record with its links carried over, not parsed again; a 200
//! is read as any page and marked unchanged when its body hashes as before, so servers
//! without validators are handled too.

use reqwest::header::{HeaderMap, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use serde::{Deserialize, Serialize};

use crate::result::{PageResult, Unchanged};

/// What the previous generation knew of a page, to ask it again conditionally. Travels
/// with the queued URL (in a Redis crawl, inside its queue element: hence the short names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validators {
    /// Its `ETag`, sent back as `If-None-Match`.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// Its `Last-Modified`, sent back as `If-Modified-Since`.
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Its content hash (see [`PageResult::content_hash`]).
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<u128>,
    /// When it was fetched (Unix ms): the earlier capture a WARC `revisit` record names.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<i64>,
}

impl Validators {
    /// The conditional request's headers: both when both are known (RFC 9110 13.1.3: a
    /// server that understands `If-None-Match` ignores `If-Modified-Since`). A value that
    /// is not a valid header is not sent.
    pub fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        let mut put = |name, value: &Option<String>| {
            if let Some(v) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                h.insert(name, v);
            }
        };
        put(IF_NONE_MATCH, &self.etag);
        put(IF_MODIFIED_SINCE, &self.last_modified);
        h
    }

    /// How the page came back: 304 to these validators, or a 2xx body that hashes as
    /// before; `None` when it changed (or failed).
    pub fn judge(&self, rec: &PageResult) -> Option<Unchanged> {
        match rec.status {
            Some(304) => Some(Unchanged::NotModified),
            Some(200..=299)
                if rec.content_hash.is_some() && rec.content_hash == self.content_hash =>
            {
                Some(Unchanged::SameContent)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_carry_what_is_known_and_valid() {
        let v = Validators {
            etag: Some("\"abc\"".into()),
            last_modified: Some("Wed, 21 Oct 2015 07:28:00 GMT".into()),
            ..Validators::default()
        };
        let h = v.headers();
        assert_eq!(h[IF_NONE_MATCH], "\"abc\"");
        assert_eq!(h[IF_MODIFIED_SINCE], "Wed, 21 Oct 2015 07:28:00 GMT");
        let bad = Validators {
            etag: Some("a\nb".into()),
            ..Validators::default()
        };
        assert!(bad.headers().is_empty());
    }

    #[test]
    fn judged_by_status_then_by_hash() {
        let v = Validators {
            content_hash: Some(7),
            ..Validators::default()
        };
        let page = |status, hash| PageResult {
            status: Some(status),
            content_hash: hash,
            ..PageResult::default()
        };
        assert_eq!(v.judge(&page(304, None)), Some(Unchanged::NotModified));
        assert_eq!(v.judge(&page(200, Some(7))), Some(Unchanged::SameContent));
        assert_eq!(v.judge(&page(200, Some(8))), None);
        assert_eq!(v.judge(&page(200, None)), None);
        assert_eq!(v.judge(&page(404, Some(7))), None);
    }
}
