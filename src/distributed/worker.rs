//! A worker of a Redis crawl: read a leased page with the shared page reader, admit what
//! it links to into the targets' hosts, then complete the lease with the page's result.
//! The order matters: admissions, then the generation bump, then the completion (see
//! `Queue::is_drained`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::queue::{Admission, Candidate, Lease, Queue, StoredEdges, StoredPage};
use super::run::Held;
use super::DistError;
use crate::admit::Rules;
use crate::fetch::Fetcher;
use crate::link::LinkKind;
use crate::page::{fail, Outcome, Reader};
use crate::politeness::fetch_robots::{fetch_robots, robots_url, RobotsOutcome};
use crate::politeness::robots::Robots;
use crate::stats::Stats;
use crate::store::{now_ms, PageRecord};
use crate::url_norm::{host_key, SkipReason};

/// Tries at a robots.txt that cannot be read (5xx, no answer) before its host's URLs are
/// skipped as `robots`, as the local crawl does.
const ROBOTS_TRIES: u32 = 3;

/// Each host's robots.txt, fetched once per process.
pub struct RobotsCache {
    agent: Option<String>,
    fetcher: Fetcher,
    hosts: DashMap<String, Arc<OnceCell<Arc<Robots>>>>,
}

impl RobotsCache {
    /// A cache that checks rules for `agent` (`None`: robots.txt ignored).
    pub fn new(agent: Option<String>, fetcher: Fetcher) -> RobotsCache {
        RobotsCache {
            agent,
            fetcher,
            hosts: DashMap::new(),
        }
    }

    /// The rules of `host` if already known; `Some(allow all)` when robots.txt is ignored.
    pub fn known(&self, host: &str) -> Option<Arc<Robots>> {
        if self.agent.is_none() {
            return Some(Arc::new(Robots::allow_all()));
        }
        self.hosts.get(host).and_then(|c| c.get().cloned())
    }

    /// Whether `url` may be fetched, reading its host's robots.txt first if needed.
    async fn allows(&self, url: &Url) -> bool {
        let Some(agent) = &self.agent else {
            return true;
        };
        let cell = self
            .hosts
            .entry(host_key(url))
            .or_insert_with(|| Arc::new(OnceCell::new()))
            .clone();
        let rules = cell
            .get_or_init(|| async {
                let Some(at) = robots_url(url) else {
                    return Arc::new(Robots::allow_all());
                };
                let mut wait = Duration::from_secs(1);
                for attempt in 1..=ROBOTS_TRIES {
                    match fetch_robots(&self.fetcher, at.clone()).await {
                        RobotsOutcome::Rules(r) => return Arc::new(r),
                        RobotsOutcome::AllowAll => return Arc::new(Robots::allow_all()),
                        RobotsOutcome::Unavailable(why) if attempt < ROBOTS_TRIES => {
                            tracing::info!(%at, "robots.txt unavailable ({why}); trying again");
                            tokio::time::sleep(wait).await;
                            wait *= 2;
                        }
                        RobotsOutcome::Unavailable(why) => {
                            tracing::warn!(%at, "robots.txt unavailable ({why}); skipping the host's URLs as robots");
                        }
                    }
                }
                Arc::new(Robots::disallow_all())
            })
            .await;
        rules.is_allowed(agent, url)
    }

    /// The `Crawl-delay` for us in `rules`.
    pub fn crawl_delay(&self, rules: &Robots) -> Option<Duration> {
        self.agent.as_deref().and_then(|a| rules.crawl_delay(a))
    }
}

/// Everything a worker shares with the others.
pub struct Worker {
    /// Fetches and reads pages.
    pub reader: Reader,
    /// The shared frontier and store.
    pub queue: Arc<Queue>,
    /// Canonical keys and skip reasons.
    pub rules: Arc<Rules>,
    /// robots.txt per host.
    pub robots: Arc<RobotsCache>,
    /// This process's counters.
    pub stats: Arc<Stats>,
    /// Leases held (renewed by the run loop).
    pub held: Arc<Held>,
    /// Set when the process stops.
    pub cancel: CancellationToken,
    /// Read sitemaps (`sitemaps`).
    pub sitemaps: bool,
}

impl Worker {
    /// Work leases from `rx` until it closes.
    pub async fn run(self: Arc<Self>, rx: async_channel::Receiver<Lease>) {
        while let Ok(lease) = rx.recv().await {
            if self.cancel.is_cancelled() {
                // Stays in `held`: given back when the process stops.
                continue;
            }
            match self.page(&lease).await {
                Ok(()) => {
                    self.held.remove(&lease.key);
                }
                Err(e) => {
                    // Redis stayed away until the stop, or refused for good: the lease
                    // expires and another process (or a restart) fetches the page.
                    tracing::warn!(key = %lease.key, "could not record the page: {e}");
                    if !matches!(e, DistError::Unreachable(_)) {
                        self.cancel.cancel();
                    }
                }
            }
        }
    }

    async fn page(&self, lease: &Lease) -> Result<(), DistError> {
        let depth = lease.admission.depth;
        let url = match Url::parse(lease.admission.url.as_deref().unwrap_or(&lease.key)) {
            Ok(u) => u,
            Err(e) => {
                let mut rec = PageRecord {
                    depth,
                    fetched_at: now_ms(),
                    attempts: lease.tries + 1,
                    ..PageRecord::default()
                };
                fail(
                    &mut rec,
                    "bad-url",
                    format!("unusable URL {}: {e}", lease.key),
                );
                return self.finish(lease, &rec, None, None).await;
            }
        };
        let allowed = self.robots.allows(&url).await;
        self.sitemaps_once(&url, &lease.host).await?;
        if !allowed {
            let page = StoredPage {
                depth,
                skip: Some(SkipReason::Robots.as_str().to_owned()),
                fetched_at: now_ms(),
                ..StoredPage::default()
            };
            self.queue.complete(lease, &page, None).await?;
            return Ok(());
        }
        self.queue.started(lease).await?;
        let read = self.reader.read(&url, depth, lease.tries).await;
        if let Some(at) = read.pause {
            self.stats.record_pause();
            self.queue
                .pause(&lease.host, at.saturating_duration_since(Instant::now()))
                .await?;
        }
        let mut found = match read.outcome {
            Outcome::Retry(at) => {
                self.stats.record_retry();
                return self
                    .queue
                    .retry(lease, at.saturating_duration_since(Instant::now()))
                    .await;
            }
            Outcome::Done(found) => *found,
        };
        let rec = &mut found.rec;
        let mut groups: HashMap<String, Vec<Candidate>> = HashMap::new();
        let mut edges = Vec::new();
        let mut front = false;
        if let Some(mut target) = found.redirect.take() {
            target.set_fragment(None);
            front = true;
            let mut key = String::new();
            self.rules.key_of(&target, &mut key);
            let too_many = lease.admission.chain.len() as u32 >= self.rules.limits.max_redirects;
            let skip = if too_many {
                Some(SkipReason::MaxRedirects)
            } else {
                self.rules.skip_reason(&target, &key, depth, true)
            };
            let mut chain = lease.admission.chain.clone();
            chain.push(lease.key.clone());
            if key == lease.key || lease.admission.chain.contains(&key) {
                fail(
                    rec,
                    "redirect-loop",
                    format!("redirect loop back to {target}"),
                );
            } else if too_many {
                fail(
                    rec,
                    "redirect-limit",
                    format!("more than {} redirects", lease.admission.chain.len()),
                );
            }
            edges.push((key.clone(), LinkKind::Redirect.code(), false, None));
            groups
                .entry(host_key(&target))
                .or_default()
                .push(Candidate {
                    admission: Admission {
                        url: (target.as_str() != key).then(|| target.to_string()),
                        depth,
                        referrer: Some(lease.key.clone()),
                        chain,
                    },
                    key,
                    skip: skip.map(SkipReason::as_str),
                });
        } else {
            let follow = found.follow;
            for link in std::mem::take(&mut found.links) {
                let mut url = link.url;
                url.set_fragment(None);
                let mut key = String::new();
                self.rules.key_of(&url, &mut key);
                let skip = self.rules.skip_reason(&url, &key, depth + 1, follow);
                edges.push((
                    key.clone(),
                    link.kind.code(),
                    link.nofollow || !follow,
                    link.anchor,
                ));
                groups.entry(host_key(&url)).or_default().push(Candidate {
                    admission: Admission {
                        url: (url.as_str() != key).then(|| url.to_string()),
                        depth: depth + 1,
                        referrer: Some(lease.key.clone()),
                        chain: Vec::new(),
                    },
                    key,
                    skip: skip.map(SkipReason::as_str),
                });
            }
        }
        let stored_edges = (!edges.is_empty()).then(|| StoredEdges {
            src: lease.key.clone(),
            edges,
        });
        let rec = found.rec;
        self.finish(
            lease,
            &rec,
            Some(groups),
            stored_edges.as_ref().map(|e| (e, front)),
        )
        .await
    }

    /// Admit the page's targets (one script per target host, sent together), bump the
    /// generation, then store the page and end its lease.
    async fn finish(
        &self,
        lease: &Lease,
        rec: &PageRecord,
        groups: Option<HashMap<String, Vec<Candidate>>>,
        edges: Option<(&StoredEdges, bool)>,
    ) -> Result<(), DistError> {
        let front = edges.is_some_and(|(_, f)| f);
        if let Some(groups) = groups {
            let calls = groups
                .iter()
                .map(|(host, urls)| self.queue.admit(host, urls, front));
            let mut new = 0;
            for r in futures_util::future::join_all(calls).await {
                new += r?;
            }
            if new > 0 {
                self.queue.bump().await?;
            }
        }
        let page = StoredPage {
            depth: rec.depth,
            attempts: rec.attempts,
            failed: rec.failed,
            skip: None,
            status: rec.status,
            content_type: rec.content_type.clone(),
            size: rec.size,
            truncated: rec.truncated,
            title: rec.title.clone(),
            noindex: rec.noindex,
            fetched_at: rec.fetched_at,
            fetch_ms: rec.fetch_ms,
            error_kind: rec.error_kind.map(str::to_owned),
            error: rec.error.clone(),
        };
        self.queue
            .complete(lease, &page, edges.map(|(e, _)| e))
            .await?;
        self.stats.record(rec);
        Ok(())
    }
}
