//! Host preparation: what happens once per host before its first URL is fetched.
//!
//! robots.txt is read (RFC 9309 rules in `politeness::fetch_robots`) and handed to the
//! frontier, which holds the host until then. Then sitemaps are read: those robots.txt
//! names, or `/sitemap.xml` when it names none. Every URL a sitemap lists enters the
//! frontier through the gate like any discovered link, with a `sitemap` edge from the
//! sitemap document, which is stored as a URL of its own (state done, `skip_reason`
//! `sitemap`, so it is never fetched as a page). A sitemap already stored is not read
//! again, so a resumed crawl does not repeat this work.
//!
//! The task holds a drain guard while it runs, so the crawl cannot end while a sitemap is
//! still being read.

use std::sync::Arc;
use std::time::Instant;

use url::Url;

use super::Frontier;
use crate::admit::Gate;
use crate::drain::DrainGuard;
use crate::fetch::Fetcher;
use crate::politeness::fetch_robots::{fetch_robots, RobotsOutcome};
use crate::politeness::robots::Robots;
use crate::sitemap::{self, Sitemap};
use crate::store::{HostId, PageRecord, WriterHandle};

/// Wait before reading an unavailable robots.txt again.
const ROBOTS_RETRY: std::time::Duration = std::time::Duration::from_secs(2);
/// How often a sitemap read waiting for a host slot looks again.
const SLOT_POLL: std::time::Duration = std::time::Duration::from_millis(5);
/// Sitemap documents read per host at most (an index may list many).
const MAX_SITEMAPS_PER_HOST: usize = 100;

/// What preparing a host needs.
#[derive(Clone)]
pub struct Preparer {
    /// HTTP client.
    pub fetcher: Fetcher,
    /// The queues (robots.txt results go here).
    pub frontier: Arc<Frontier>,
    /// Admission of sitemap URLs.
    pub gate: Arc<Gate>,
    /// Where sitemap documents are recorded.
    pub writer: WriterHandle,
    /// Read robots.txt (else every host is allowed everything).
    pub robots: bool,
    /// Read sitemaps.
    pub sitemaps: bool,
}

impl Preparer {
    /// Prepare `host`, whose robots.txt is at `robots_url`. `_guard` keeps the crawl alive
    /// until this returns.
    pub async fn prepare(self, host: HostId, robots_url: Url, _guard: DrainGuard) {
        let mut listed = Vec::new();
        if self.robots {
            match fetch_robots(&self.fetcher, robots_url.clone()).await {
                RobotsOutcome::Rules(r) => {
                    listed = r
                        .sitemaps()
                        .iter()
                        .filter_map(|s| robots_url.join(s.trim()).ok())
                        .collect();
                    self.frontier.robots_known(host, r);
                }
                RobotsOutcome::AllowAll => self.frontier.robots_known(host, Robots::allow_all()),
                RobotsOutcome::Unavailable(why) => {
                    let retry_at = Instant::now() + ROBOTS_RETRY;
                    if self.frontier.robots_unavailable(host, retry_at) {
                        tracing::warn!(url = %robots_url, %why, "robots.txt unavailable: the host's URLs are skipped");
                    } else {
                        tracing::info!(url = %robots_url, %why, "robots.txt unavailable: will try again");
                    }
                    // Sitemaps wait until the rules are known.
                    return;
                }
            }
        } else {
            self.frontier.robots_known(host, Robots::allow_all());
        }
        if !self.sitemaps {
            return;
        }
        let probe = listed.is_empty();
        if probe {
            if let Ok(u) = robots_url.join("/sitemap.xml") {
                listed.push(u);
            }
        }
        let mut todo: Vec<(Url, Option<crate::store::UrlId>)> =
            listed.into_iter().map(|u| (u, None)).collect();
        let mut read = 0;
        while let Some((url, parent)) = todo.pop() {
            if read >= MAX_SITEMAPS_PER_HOST {
                tracing::warn!(%url, "too many sitemaps for one host; the rest are not read");
                break;
            }
            read += 1;
            if self.gate.is_known(&url) && parent.is_none() {
                continue;
            }
            // A sitemap read is a request to the host like a page fetch: it waits for a
            // free slot under the per-host limit, and keeps the host's spacing.
            while !self.frontier.try_occupy(host) {
                tokio::time::sleep(SLOT_POLL).await;
            }
            let _slot = super::HostSlot {
                frontier: &self.frontier,
                host,
            };
            tokio::time::sleep_until(self.frontier.book(host).into()).await;
            self.frontier.started(host);
            if let Some(children) = self.read_sitemap(&url, parent).await {
                todo.extend(children);
            }
        }
    }

    /// Fetch, parse and record one sitemap document; returns the sitemaps it lists (for
    /// an index) with its id as their parent.
    async fn read_sitemap(
        &self,
        url: &Url,
        parent: Option<crate::store::UrlId>,
    ) -> Option<Vec<(Url, Option<crate::store::UrlId>)>> {
        let fetched = sitemap::fetch(&self.fetcher, url).await?;
        let parsed = &fetched.sitemap;
        let (entries, index) = match parsed {
            Sitemap::UrlSet(u) => (u, false),
            Sitemap::Index(u) => (u, true),
        };
        let entries: Vec<Url> = entries.iter().filter_map(|e| url.join(e).ok()).collect();
        let (id, edges, children) = self.gate.admit_sitemap(url, parent, &entries, index)?;
        let record = PageRecord {
            id,
            depth: 0,
            attempts: 1,
            status: Some(fetched.status),
            content_type: fetched.content_type,
            size: Some(fetched.size),
            fetched_at: fetched.fetched_at,
            fetch_ms: fetched.fetch_ms,
            edges,
            ..PageRecord::default()
        };
        self.writer.page(record).await.ok()?;
        Some(children.into_iter().map(|c| (c, Some(id))).collect())
    }
}
