//! Host preparation: what happens once per host before its first URL is fetched, the same
//! for both stores.
//!
//! robots.txt is read by RFC 9309's rules (`fetch_robots`); when it cannot be read (a 5xx,
//! no answer), it is tried again after [`ROBOTS_RETRY`], doubling, [`ROBOTS_ATTEMPTS`]
//! times in all, and then the host is treated as all-disallowed (RFC 9309 2.3.1.4): its
//! URLs are skipped as `robots` when it answered (a 5xx), and recorded as failed with the
//! error it gave when it gave no response at all (no such name, refused, timed out), so an
//! unreachable seed is reported as a failure, not as a skip. Its Crawl-delay becomes the
//! host's spacing. Then sitemaps are read: those robots.txt names, or `/sitemap.xml` when
//! it names none. Every URL a sitemap lists is admitted like a
//! discovered link, with a `sitemap` edge from the sitemap document, which is stored as a
//! URL of its own (skip reason `sitemap`, never fetched as a page). The store decides which
//! sitemaps to read: none already read in an earlier run, and in a Redis crawl only by the
//! process that claims the host.
//!
//! The URLs of the host that the dispatcher took wait until its rules are known, and then
//! go back to the store (so they are taken again with the host's spacing counted from the
//! requests made meanwhile); pages are fetched while the sitemaps are read. A sitemap
//! read is a request like any other: it takes a host slot (`Store::occupy`, counted
//! against the per-host limit in every process) and keeps the host's spacing. The crawl
//! cannot end while a host is being prepared: the dispatcher waits for every preparation
//! before it asks whether the crawl is drained.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use url::Url;

use super::fetch_robots::{fetch_robots, robots_url, RobotsOutcome};
use super::hosts::{HostRules, Unreachable};
use super::robots::Robots;
use crate::fetch::Fetcher;
use crate::result::PageResult;
use crate::sitemap::{self, Sitemap};
use crate::store::{SitemapDoc, Store};
use crate::Error;

/// Wait before reading an unavailable robots.txt again (doubled each time).
pub const ROBOTS_RETRY: Duration = Duration::from_secs(1);
/// Reads of an unavailable robots.txt before the host is given up as all-disallowed.
pub const ROBOTS_ATTEMPTS: u32 = 3;
/// Sitemap documents read per host at most (an index may list many).
const MAX_SITEMAPS_PER_HOST: usize = 100;
/// How often a sitemap read waiting for a host slot looks again.
const SLOT_POLL: Duration = Duration::from_millis(5);

/// What preparing a host needs.
pub struct Preparer<S: Store> {
    /// Where sitemap entries are admitted and the host's spacing is kept.
    pub store: Arc<S>,
    /// HTTP client.
    pub fetcher: Fetcher,
    /// Where the rules go once known.
    pub hosts: Arc<HostRules<S::Host>>,
    /// Read sitemaps.
    pub sitemaps: bool,
    /// The longest Crawl-delay honoured.
    pub max_crawl_delay: Duration,
}

impl<S: Store> Preparer<S>
where
    Error: From<S::Error>,
{
    /// Prepare `host`, of which `url` is a URL: robots.txt, then (`first` time in this
    /// run) its sitemaps. Once the host's rules are known, whatever happened, the host is
    /// sent on `ready`, before its sitemaps are read.
    pub async fn prepare(
        &self,
        host: S::Host,
        url: Url,
        first: bool,
        ready: &mpsc::UnboundedSender<S::Host>,
    ) -> Result<(), Error> {
        let (robots, readable) = match self.hosts.agent() {
            None => (Robots::allow_all(), true),
            Some(_) => match self.read_robots(&url).await {
                Ok(robots) => (robots, true),
                Err(Some(why)) => {
                    // Nothing of the host can be read: its sitemaps neither.
                    self.hosts.unreachable(host.clone(), why);
                    let _ = ready.send(host);
                    return Ok(());
                }
                Err(None) => (Robots::disallow_all(), false),
            },
        };
        if let Some(agent) = self.hosts.agent() {
            if let Some(d) = robots.crawl_delay(agent) {
                self.store.set_interval(&host, d.min(self.max_crawl_delay));
            }
        }
        let robots = Arc::new(robots);
        self.hosts.ready(host.clone(), robots.clone(), readable);
        let _ = ready.send(host.clone());
        if self.sitemaps && first && readable {
            self.read_sitemaps(&host, &url, &robots).await?;
        }
        Ok(())
    }

    /// The rules of `url`'s host; when they cannot be read, everything is disallowed: the
    /// host's URLs are skipped (`None`: it answered, with a 5xx or 429), or fail with the
    /// error it gave (`Some`: no response at all).
    async fn read_robots(&self, url: &Url) -> Result<Robots, Option<Unreachable>> {
        let Some(at) = robots_url(url) else {
            return Ok(Robots::allow_all());
        };
        let mut wait = ROBOTS_RETRY;
        for attempt in 1..=ROBOTS_ATTEMPTS {
            let (why, unreachable) = match fetch_robots(&self.fetcher, at.clone()).await {
                RobotsOutcome::Rules(r) => return Ok(r),
                RobotsOutcome::AllowAll => return Ok(Robots::allow_all()),
                RobotsOutcome::Unavailable(why) => (why, None),
                RobotsOutcome::Unreachable(e) => (e.to_string(), Some(e.kind())),
            };
            if attempt < ROBOTS_ATTEMPTS {
                tracing::info!(url = %at, %why, "robots.txt unavailable: will try again");
                tokio::time::sleep(wait).await;
                wait *= 2;
                continue;
            }
            let Some(kind) = unreachable else {
                tracing::warn!(url = %at, %why, "robots.txt unavailable: the host's URLs are skipped");
                return Err(None);
            };
            tracing::warn!(url = %at, %why, "host unreachable: its URLs are recorded as failed");
            return Err(Some(Unreachable {
                kind,
                message: format!("robots.txt got no response: {why}"),
            }));
        }
        Err(None)
    }

    /// Read the sitemaps of `host` (robots.txt's, else `/sitemap.xml`) and what indexes
    /// list, at most [`MAX_SITEMAPS_PER_HOST`] documents.
    async fn read_sitemaps(&self, host: &S::Host, url: &Url, robots: &Robots) -> Result<(), Error> {
        let base = robots_url(url).unwrap_or_else(|| url.clone());
        let mut listed: Vec<Url> = robots
            .sitemaps()
            .iter()
            .filter_map(|s| base.join(s.trim()).ok())
            .collect();
        if listed.is_empty() {
            listed.extend(base.join("/sitemap.xml").ok());
        }
        let mut todo: Vec<(Url, Option<Url>)> = self
            .store
            .sitemaps_to_read(host, listed)
            .await?
            .into_iter()
            .map(|u| (u, None))
            .collect();
        let mut read = 0;
        while let Some((doc, parent)) = todo.pop() {
            if read >= MAX_SITEMAPS_PER_HOST {
                tracing::warn!(%doc, "too many sitemaps for one host; the rest are not read");
                break;
            }
            read += 1;
            // A sitemap read is a request to the host like a page fetch: it waits for a
            // free slot under the per-host limit, and keeps the host's spacing.
            while !self.store.occupy(host).await? {
                tokio::time::sleep(SLOT_POLL).await;
            }
            let children = self.read_in_slot(host, doc, parent).await;
            self.store.vacate(host).await?;
            todo.extend(children?);
        }
        Ok(())
    }

    /// Read one sitemap document in a host slot already taken, at its booked time.
    async fn read_in_slot(
        &self,
        host: &S::Host,
        doc: Url,
        parent: Option<Url>,
    ) -> Result<Vec<(Url, Option<Url>)>, Error> {
        tokio::time::sleep_until(self.store.book(host).await?.into()).await;
        if let Some(at) = self.store.started(host).await? {
            tokio::time::sleep_until(at.into()).await;
        }
        self.read_sitemap(doc, parent).await
    }

    /// Fetch, parse and record one sitemap document; the documents an index lists, with
    /// this one as their parent.
    async fn read_sitemap(
        &self,
        url: Url,
        parent: Option<Url>,
    ) -> Result<Vec<(Url, Option<Url>)>, Error> {
        let Some(fetched) = sitemap::fetch(&self.fetcher, &url).await else {
            return Ok(Vec::new());
        };
        let (listed, index) = match &fetched.sitemap {
            Sitemap::UrlSet(u) => (u, false),
            Sitemap::Index(u) => (u, true),
        };
        let entries: Vec<Url> = listed.iter().filter_map(|e| url.join(e).ok()).collect();
        let children: Vec<(Url, Option<Url>)> = if index {
            entries
                .iter()
                .map(|e| (e.clone(), Some(url.clone())))
                .collect()
        } else {
            Vec::new()
        };
        let doc = SitemapDoc {
            url,
            parent,
            result: PageResult {
                attempts: 1,
                status: Some(fetched.status),
                content_type: fetched.content_type,
                size: Some(fetched.size),
                fetched_at: fetched.fetched_at,
                fetch_ms: fetched.fetch_ms,
                ..PageResult::default()
            },
            entries,
            index,
        };
        Ok(if self.store.record_sitemap(doc).await? {
            children
        } else {
            Vec::new()
        })
    }
}
