//! The hosts a running crawl's process knows, for the live page's hosts table, the same
//! over both stores.
//!
//! Three sources make a row, each asked only when the page asks, apart from two counters
//! per page:
//! - this process's run (the [`HostBoard`], counted by the engine): pages done and errors;
//! - this process's host rules: robots.txt's state;
//! - the store ([`Store::host_states`]): request slots taken, the spacing, the pause. A
//!   Redis store reads the slots and the pause from Redis, so they are crawl-wide (every
//!   process's requests, the pause every process obeys); the spacing is this process's
//!   (each process reads robots.txt, hence Crawl-delay, itself).

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use futures_util::future::BoxFuture;
use serde::Serialize;
use url::Url;

use super::recent::{Recent, RecentPages};
use crate::politeness::hosts::{HostRules, RobotsState};
use crate::result::PageResult;
use crate::store::{CrawlWide, HostState, Store};
use crate::url_norm::host_key;

/// Rows of the live hosts table at most.
pub const HOSTS: usize = 50;
/// How long the page waits for the store's figures (a Redis away) before showing a row
/// without them.
const STORE_WAIT: Duration = Duration::from_secs(2);

/// One row of the live hosts table (the fields of `/api/live`'s `hosts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostRow {
    /// `host[:port]`.
    pub host: String,
    /// Requests to it under way now: this process's for a SQLite crawl, every process's
    /// for a Redis crawl. `None` when the store did not answer in time.
    pub in_flight: Option<u64>,
    /// The spacing between its requests (the configuration's, or its Crawl-delay when
    /// longer), ms.
    pub delay_ms: Option<u64>,
    /// The end of its 429/503 pause, Unix ms (crawl-wide for a Redis crawl).
    pub paused_until: Option<i64>,
    /// robots.txt: `ignored`, `unknown`, `fetching`, `read`, `unavailable`, `unreachable`.
    pub robots: &'static str,
    /// With `read`: the allow and disallow lines that govern this crawler.
    pub robots_rules: Option<usize>,
    /// URLs of it this process finished in this run.
    pub pages: u64,
    /// Of those, the failures and 4xx/5xx answers.
    pub errors: u64,
}

/// Whether a page counts among a host's errors (and the last errors).
pub(crate) fn is_error(result: &PageResult) -> bool {
    result.failed || result.status.is_some_and(|s| s >= 400)
}

struct Counts {
    name: String,
    pages: AtomicU64,
    errors: AtomicU64,
}

/// What the engine counts per host in this run, and the last pages (see the module doc).
pub(crate) struct HostBoard<H> {
    hosts: DashMap<H, Arc<Counts>>,
    recent: Recent,
}

impl<H: Hash + Eq + Clone> HostBoard<H> {
    fn new() -> HostBoard<H> {
        HostBoard {
            hosts: DashMap::new(),
            recent: Recent::default(),
        }
    }

    /// A URL of `host` was taken: show the host from now on (before its first page ends).
    pub fn seen(&self, host: &H, url: &Url) {
        if !self.hosts.contains_key(host) {
            self.counts(host, url);
        }
    }

    /// A URL of `host` was finished with `result`.
    pub fn record(&self, host: &H, url: &Url, result: &PageResult) {
        let counts = self.counts(host, url);
        counts.pages.fetch_add(1, Relaxed);
        let error = is_error(result);
        if error {
            counts.errors.fetch_add(1, Relaxed);
        }
        self.recent.push(url, result, error);
    }

    fn counts(&self, host: &H, url: &Url) -> Arc<Counts> {
        if let Some(c) = self.hosts.get(host) {
            return c.clone();
        }
        self.hosts
            .entry(host.clone())
            .or_insert_with(|| {
                Arc::new(Counts {
                    name: host_key(url),
                    pages: AtomicU64::new(0),
                    errors: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// The [`HOSTS`] busiest hosts of this run: (host, name, pages, errors). Only their
    /// names are copied: a crawl may know a great many hosts.
    fn busiest(&self) -> Vec<(H, String, u64, u64)> {
        let mut all: Vec<(H, Arc<Counts>, u64)> = self
            .hosts
            .iter()
            .map(|e| {
                (
                    e.key().clone(),
                    e.value().clone(),
                    e.value().pages.load(Relaxed),
                )
            })
            .collect();
        all.sort_unstable_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.name.cmp(&b.1.name)));
        all.truncate(HOSTS);
        all.into_iter()
            .map(|(host, c, pages)| (host, c.name.clone(), pages, c.errors.load(Relaxed)))
            .collect()
    }
}

/// How long the crawl-wide figures are kept: reading them is a round trip per host and
/// shard, too many to make every second.
const CRAWL_WIDE_EVERY: Duration = Duration::from_secs(5);

/// What the page reads of a running crawl's hosts, whatever its store.
pub(crate) trait HostsView: Send + Sync {
    /// The hosts table, busiest first.
    fn hosts(&self) -> BoxFuture<'_, Vec<HostRow>>;
    /// The whole crawl's figures when other processes share it (at most
    /// [`CRAWL_WIDE_EVERY`] old).
    fn crawl_wide(&self) -> BoxFuture<'_, Option<CrawlWide>>;
    /// The last pages and errors.
    fn recent(&self) -> RecentPages;
}

/// A run's [`HostsView`]: its board and host rules, and its store while the run lasts.
pub(crate) struct Watched<S: Store> {
    /// Weak: the page outliving the run must not keep the store open.
    store: Weak<S>,
    board: Arc<HostBoard<S::Host>>,
    rules: Arc<HostRules<S::Host>>,
    /// The last crawl-wide reading and when it was taken.
    crawl: std::sync::Mutex<Option<(Instant, Option<CrawlWide>)>>,
}

impl<S: Store> Watched<S> {
    /// The view of `store`'s run, with a new board for the engine to count on.
    pub fn new(store: &Arc<S>, rules: &Arc<HostRules<S::Host>>) -> Watched<S> {
        Watched {
            store: Arc::downgrade(store),
            board: Arc::new(HostBoard::new()),
            rules: rules.clone(),
            crawl: std::sync::Mutex::new(None),
        }
    }

    /// The board the engine counts on.
    pub fn board(&self) -> Arc<HostBoard<S::Host>> {
        self.board.clone()
    }
}

impl<S: Store> HostsView for Watched<S> {
    fn hosts(&self) -> BoxFuture<'_, Vec<HostRow>> {
        Box::pin(async move {
            let busiest = self.board.busiest();
            let states = match self.store.upgrade() {
                Some(store) => {
                    let keys = busiest.iter().map(|b| b.0.clone()).collect();
                    match tokio::time::timeout(STORE_WAIT, store.host_states(keys)).await {
                        Ok(Ok(states)) => Some(states),
                        Ok(Err(e)) => {
                            tracing::debug!("the live hosts table has no store figures: {e}");
                            None
                        }
                        Err(_) => None,
                    }
                }
                None => None,
            };
            busiest
                .into_iter()
                .enumerate()
                .map(|(i, (host, name, pages, errors))| {
                    let state: Option<HostState> = states.as_ref().and_then(|s| s.get(i).copied());
                    let robots = self.rules.robots_state(&host);
                    HostRow {
                        host: name,
                        in_flight: state.map(|s| s.in_flight),
                        delay_ms: state.map(|s| s.delay.as_millis() as u64),
                        paused_until: state.and_then(|s| s.paused_until),
                        robots: robots.as_str(),
                        robots_rules: match robots {
                            RobotsState::Read { rules } => Some(rules),
                            _ => None,
                        },
                        pages,
                        errors,
                    }
                })
                .collect()
        })
    }

    fn crawl_wide(&self) -> BoxFuture<'_, Option<CrawlWide>> {
        Box::pin(async move {
            let kept = *self.crawl.lock().expect("not poisoned");
            if let Some((_, figures)) = kept.filter(|(at, _)| at.elapsed() < CRAWL_WIDE_EVERY) {
                return figures;
            }
            let store = self.store.upgrade()?;
            let figures = match tokio::time::timeout(STORE_WAIT, store.crawl_wide()).await {
                Ok(Ok(figures)) => figures,
                Ok(Err(e)) => {
                    tracing::debug!("the live page has no crawl-wide figures: {e}");
                    None
                }
                Err(_) => None,
            };
            *self.crawl.lock().expect("not poisoned") = Some((Instant::now(), figures));
            figures
        })
    }

    fn recent(&self) -> RecentPages {
        self.board.recent.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_hosts_come_first_with_their_errors() {
        let board = HostBoard::new();
        let url = |h: &str| Url::parse(&format!("http://{h}/x")).unwrap();
        let ok = PageResult {
            status: Some(200),
            ..PageResult::default()
        };
        let missing = PageResult {
            status: Some(404),
            ..PageResult::default()
        };
        board.seen(&3, &url("c.test"));
        board.record(&1, &url("a.test"), &ok);
        for _ in 0..2 {
            board.record(&2, &url("b.test:8080"), &missing);
        }
        let rows: Vec<_> = board
            .busiest()
            .into_iter()
            .map(|r| (r.1, r.2, r.3))
            .collect();
        assert_eq!(
            rows,
            [
                ("b.test:8080".to_owned(), 2, 2),
                ("a.test".to_owned(), 1, 0),
                ("c.test".to_owned(), 0, 0),
            ]
        );
        let recent = board.recent.read();
        assert_eq!((recent.pages.len(), recent.errors.len()), (3, 2));
    }
}
