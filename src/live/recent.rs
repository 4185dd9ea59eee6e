//! The last pages this process fetched and its last errors, for the live page: two
//! bounded rings, pushed once per page under a short lock while the crawl serves its page,
//! read when the page asks. They replace a scan of the crawl's `urls` per poll.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Serialize;
use url::Url;

use crate::result::PageResult;

/// Entries kept in each ring.
pub const RECENT: usize = 10;

/// One page in a ring: the fields `/api/recent` gives for a finished crawl too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecentPage {
    /// The URL as fetched.
    pub url: String,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
    /// What kind of failure, when it failed.
    pub error_kind: Option<&'static str>,
    /// The failure in words.
    pub error: Option<String>,
    /// When the request started, Unix ms.
    pub fetched_at: i64,
    /// Request start to body end, ms.
    pub fetch_ms: u64,
}

/// What the rings hold, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecentPages {
    /// The last pages fetched (errors among them).
    pub pages: Vec<RecentPage>,
    /// The last errors: failures and 4xx/5xx answers.
    pub errors: Vec<RecentPage>,
}

#[derive(Default)]
struct Rings {
    pages: VecDeque<RecentPage>,
    errors: VecDeque<RecentPage>,
}

/// See the module doc.
#[derive(Default)]
pub(crate) struct Recent(Mutex<Rings>);

impl Recent {
    /// `url` was fetched with `result`; `error` when it counts as one.
    pub fn push(&self, url: &Url, result: &PageResult, error: bool) {
        // Built before the lock: only the ring operations are under it.
        let page = RecentPage {
            url: url.to_string(),
            status: result.status,
            error_kind: result.error_kind.map(|k| k.as_str()),
            error: result.error.clone(),
            fetched_at: result.fetched_at,
            fetch_ms: result.fetch_ms,
        };
        let copy = error.then(|| page.clone());
        let mut rings = self.0.lock().unwrap_or_else(|p| p.into_inner());
        bounded_push(&mut rings.pages, page);
        if let Some(page) = copy {
            bounded_push(&mut rings.errors, page);
        }
    }

    /// A copy of both rings, newest first.
    pub fn read(&self) -> RecentPages {
        let rings = self.0.lock().unwrap_or_else(|p| p.into_inner());
        RecentPages {
            pages: rings.pages.iter().rev().cloned().collect(),
            errors: rings.errors.iter().rev().cloned().collect(),
        }
    }
}

fn bounded_push(ring: &mut VecDeque<RecentPage>, page: RecentPage) {
    if ring.len() == RECENT {
        ring.pop_front();
    }
    ring.push_back(page);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rings_keep_the_newest_first_and_no_more_than_their_size() {
        let recent = Recent::default();
        for i in 0..25 {
            let url = Url::parse(&format!("http://h.test/{i}")).unwrap();
            let result = PageResult {
                status: Some(if i % 2 == 0 { 200 } else { 404 }),
                ..PageResult::default()
            };
            recent.push(&url, &result, i % 2 == 1);
        }
        let read = recent.read();
        assert_eq!(read.pages.len(), RECENT);
        assert_eq!(read.pages[0].url, "http://h.test/24");
        assert_eq!(read.errors.len(), RECENT);
        assert_eq!(read.errors[0].url, "http://h.test/23");
        assert!(read.errors.iter().all(|p| p.status == Some(404)));
    }
}
