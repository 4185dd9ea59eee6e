//! Admission rules and link planning: what both stores call to decide what a discovered URL
//! becomes, so the rules are written once.
//!
//! [`Rules`] gives a URL its canonical key and the reason, if any, it will not be fetched
//! (scope, traps, the user's filter, depth, nofollow). The planning functions turn what a
//! page led to (its links, a redirect, a sitemap's entries, the seeds) into [`Candidate`]s
//! and decide a redirect's errors, without knowing where URLs are kept: the local store
//! looks each candidate up in its visited set, the Redis store sends them to its scripts.

use std::sync::Arc;

use url::Url;

use crate::result::ErrorKind;
use crate::traps::{strip_session_ids, Traps};

mod plan;
mod skip;

use crate::url_norm::{canonical_key_into, key_hash, Scope};
pub use plan::{plan_redirect, Candidate, EdgeSpec, Judged, Outlinks};
pub use skip::SkipReason;

/// The canonical key of `url` in `key`, without session IDs when `strip_session_ids` (the
/// crawl's `strip-session-ids`): the key both stores file a URL under. [`Rules::key_of`]
/// for a running crawl; this for a reader that has only the crawl's configuration.
pub fn key_of(url: &Url, strip_session_ids: bool, key: &mut String) {
    canonical_key_into(url, key);
    if strip_session_ids {
        self::strip_session_ids(key);
    }
}

/// Limits applied at admission.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deepest depth fetched; 0 means none.
    pub max_depth: u32,
    /// Most URLs admitted for fetching; 0 means none.
    pub max_pages: u64,
    /// Most redirect hops followed from one URL.
    pub max_redirects: u32,
    /// Most URLs fetched from one host; 0 means none.
    pub max_pages_per_host: u64,
}

/// Why following a redirect failed; recorded on the URL that redirected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectError {
    /// The target is the URL itself or an earlier hop of the same chain.
    Loop,
    /// The chain is longer than `max-redirects`.
    TooMany,
}

impl RedirectError {
    /// The `error_kind` stored.
    pub fn kind(self) -> ErrorKind {
        match self {
            RedirectError::Loop => ErrorKind::RedirectLoop,
            RedirectError::TooMany => ErrorKind::RedirectLimit,
        }
    }
}

/// The library user's decision per discovered URL: `true` to fetch it.
pub type LinkFilter = Arc<dyn Fn(&Url) -> bool + Send + Sync>;

/// The rules a discovered URL is judged by, apart from whether it is already known:
/// its canonical key, and the reason (if any) it will not be fetched.
pub struct Rules {
    /// Which URLs are in scope.
    pub scope: Scope,
    /// The library user's link filter.
    pub filter: Option<LinkFilter>,
    /// Depth, page and redirect limits.
    pub limits: Limits,
    /// Crawler-trap limits.
    pub traps: Traps,
    /// Remove session IDs from canonical keys.
    pub strip_session_ids: bool,
    /// Out-of-scope links are checked once, not skipped (`check-external`).
    pub check_external: bool,
}

impl Rules {
    /// The rules of a crawl with `config`, over `scope`.
    pub fn new(
        scope: Scope,
        config: &crate::config::CrawlConfig,
        filter: Option<LinkFilter>,
    ) -> Rules {
        Rules {
            scope,
            filter,
            limits: Limits {
                max_depth: config.max_depth,
                max_pages: config.max_pages,
                max_redirects: config.max_redirects,
                max_pages_per_host: config.max_pages_per_host,
            },
            traps: Traps {
                max_url_length: config.max_url_length,
                max_path_segments: config.max_path_segments,
                max_repeated_segments: config.max_repeated_segments,
                max_query_variants: config.max_query_variants,
            },
            strip_session_ids: config.strip_session_ids,
            check_external: config.check_external,
        }
    }

    /// Whether `url` (canonical key `key`) is checked rather than crawled: an external
    /// link under `check-external`. Its response's links are not followed.
    pub fn checks(&self, url: &Url, key: &str) -> bool {
        self.check_external && self.scope.is_external(url, key)
    }

    /// The canonical key of `url` in `key`, without session IDs when so configured.
    pub fn key_of(&self, url: &Url, key: &mut String) {
        key_of(url, self.strip_session_ids, key);
    }

    /// The 128-bit hash of `url`'s canonical key, computed in `key`.
    pub fn hash_of(&self, url: &Url, key: &mut String) -> u128 {
        self.key_of(url, key);
        key_hash(key)
    }

    /// Why a new URL found at `depth` (on a page that said `nofollow` when `follow` is
    /// false) will not be fetched; `None` to fetch it.
    pub fn skip_reason(
        &self,
        url: &Url,
        key: &str,
        depth: u32,
        follow: bool,
    ) -> Option<SkipReason> {
        if self.checks(url, key) {
            // A check adds nothing to the crawl, so depth and the trap limits (there to
            // stop endless crawling) do not apply; the user's filter and nofollow do.
            return match &self.filter {
                Some(f) if !f(url) => Some(SkipReason::Filtered),
                _ => (!follow).then_some(SkipReason::Nofollow),
            };
        }
        self.scope
            .check(url, key)
            .map_err(SkipReason::from)
            .and_then(|()| self.traps.check(url).map_err(SkipReason::from))
            .and_then(|()| match &self.filter {
                Some(f) if !f(url) => Err(SkipReason::Filtered),
                _ => Ok(()),
            })
            .err()
            .or_else(|| {
                (self.limits.max_depth > 0 && depth > self.limits.max_depth)
                    .then_some(SkipReason::MaxDepth)
            })
            .or_else(|| (!follow).then_some(SkipReason::Nofollow))
    }

    /// The skip reason of candidate `c`, whose canonical key is `key`.
    pub fn judge(&self, c: &Candidate, key: &str) -> Option<SkipReason> {
        match c.judged {
            Judged::ByRules => self.skip_reason(&c.url, key, c.depth, c.follow),
            Judged::Admit => None,
            Judged::Skip(r) => Some(r),
        }
    }
}
