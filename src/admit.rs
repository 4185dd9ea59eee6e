//! Admission: the gate every discovered URL passes once.
//!
//! For each link: drop the fragment, build the canonical key, hash it, look it up in the
//! visited set. A URL seen before costs one hash and one map read and yields its id. A new
//! URL gets an id, is checked against scope and limits, has its row written to the
//! store's pending buffer (while its visited-set entry is locked, see `visited`), and, if
//! it is to be fetched, is queued in the frontier with a drain guard. A page's new URLs
//! reach the frontier in one push, so the frontier lock is taken once per page.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use url::Url;

use crate::drain::Drain;
use crate::extract::Link;
use crate::frontier::{Frontier, QueuedUrl};
use crate::link::LinkKind;
use crate::store::{Edge, HostId, KnownUrl, NewHost, NewUrl, Pending, UrlId};
use crate::traps::{strip_session_ids, Traps};
use crate::url_norm::{canonical_key_into, host_key, key_hash, Scope, SkipReason};
use crate::visited::{Footprint, Held, Lowered, Seen, Visited};

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
    pub fn kind(self) -> &'static str {
        match self {
            RedirectError::Loop => "redirect-loop",
            RedirectError::TooMany => "redirect-limit",
        }
    }
}

/// The library user's decision per discovered URL: `true` to fetch it.
pub type LinkFilter = Arc<dyn Fn(&Url) -> bool + Send + Sync>;

/// The rules a discovered URL is judged by, apart from whether it is already known:
/// its canonical key, and the reason (if any) it will not be fetched. Shared by the local
/// gate and the distributed crawl.
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
}

impl Rules {
    /// The canonical key of `url` in `key`, without session IDs when so configured.
    pub fn key_of(&self, url: &Url, key: &mut String) {
        canonical_key_into(url, key);
        if self.strip_session_ids {
            strip_session_ids(key);
        }
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
        self.scope
            .check(url, key)
            .and_then(|()| self.traps.check(url))
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
}

/// See the module doc.
pub struct Gate {
    rules: Rules,
    limits: Limits,
    /// URLs admitted for fetching per host, for `max-pages-per-host`.
    host_admitted: DashMap<HostId, u64>,
    visited: Visited,
    hosts: DashMap<String, HostId>,
    next_host: AtomicU32,
    next_id: AtomicU64,
    /// URLs admitted for fetching, for `max-pages`.
    admitted: AtomicU64,
    pending: Arc<Pending>,
    frontier: Arc<Frontier>,
    drain: Arc<Drain>,
}

impl Gate {
    /// A gate for a fresh crawl; a resumed one is then filled with [`Gate::restore_url`] and
    /// [`Gate::restore_host`].
    pub fn new(
        scope: Scope,
        limits: Limits,
        traps: Traps,
        strip_session_ids: bool,
        pending: Arc<Pending>,
        frontier: Arc<Frontier>,
        drain: Arc<Drain>,
    ) -> Gate {
        Gate {
            rules: Rules {
                scope,
                filter: None,
                limits,
                traps,
                strip_session_ids,
            },
            limits,
            host_admitted: DashMap::new(),
            visited: Visited::new(),
            hosts: DashMap::new(),
            next_host: AtomicU32::new(1),
            next_id: AtomicU64::new(1),
            admitted: AtomicU64::new(0),
            pending,
            frontier,
            drain,
        }
    }

    /// Keep the visited set in `visited` (e.g. one with a memory budget) instead of an
    /// unbounded one. Call before anything is admitted.
    pub fn with_visited(mut self, visited: Visited) -> Gate {
        self.visited = visited;
        self
    }

    /// Ask `filter` about every new in-scope URL; refused ones are skipped as `filtered`.
    pub fn with_filter(mut self, filter: Option<LinkFilter>) -> Gate {
        self.rules.filter = filter;
        self
    }

    /// Record a URL known from the store (resume).
    pub fn restore_url(&self, url: KnownUrl<'_>) {
        self.visited.insert_known(
            key_hash(url.key),
            Seen {
                id: url.id,
                depth: url.depth,
                held: match url.skip_reason {
                    Some("max-depth") => Held::TooDeep,
                    Some("nofollow") => Held::Nofollow,
                    _ => Held::No,
                },
            },
        );
        self.next_id.fetch_max(url.id + 1, Ordering::Relaxed);
    }

    /// The shallowest depth known for a queued URL: it may have been found along a
    /// shorter path after it was queued.
    pub fn current_depth(&self, url: &Url, queued_at: u32) -> u32 {
        let mut key = String::new();
        self.key_of(url, &mut key);
        self.visited
            .get(key_hash(&key))
            .map_or(queued_at, |s| s.depth.min(queued_at))
    }

    /// Record a host known from the store (resume).
    pub fn restore_host(&self, id: HostId, name: String) {
        self.hosts.insert(name, id);
        self.next_host.fetch_max(id + 1, Ordering::Relaxed);
    }

    /// Count URLs already admitted for fetching in earlier runs, in all and per host.
    pub fn restore_admitted(&self, n: u64, per_host: impl IntoIterator<Item = (HostId, u64)>) {
        self.admitted.store(n, Ordering::Relaxed);
        for (host, n) in per_host {
            self.host_admitted.insert(host, n);
        }
    }

    /// Where the visited set is: memory and disk.
    pub fn visited_footprint(&self) -> Footprint {
        self.visited.footprint()
    }

    /// URLs known (fetched, queued or skipped).
    pub fn known(&self) -> usize {
        self.visited.len()
    }

    /// Admit a seed: never filtered by scope (the user asked for it). Returns its id.
    pub fn admit_seed(&self, url: Url) -> UrlId {
        let mut key = String::new();
        let mut fresh = Vec::new();
        let id = self.admit_one(url, 0, None, Some(None), true, &mut key, &mut fresh);
        self.frontier.push(fresh);
        id
    }

    /// Whether `url` is known to the crawl.
    pub fn is_known(&self, url: &Url) -> bool {
        let mut key = String::new();
        self.key_of(url, &mut key);
        self.visited.get(key_hash(&key)).is_some()
    }

    /// Record a sitemap document read at `url` (listed by the index `parent`, if any) and
    /// admit what it lists: pages (depth 1) for a URL set, further sitemap documents for
    /// an index. Returns the document's id, its `sitemap` edges, and for an index the
    /// documents to read next; `None` when a top-level document is already known (read in
    /// an earlier run).
    pub fn admit_sitemap(
        &self,
        url: &Url,
        parent: Option<UrlId>,
        entries: &[Url],
        index: bool,
    ) -> Option<(UrlId, Vec<Edge>, Vec<Url>)> {
        let mut key = String::new();
        let mut fresh = Vec::new();
        let mut doc = url.clone();
        doc.set_fragment(None);
        if parent.is_none() && self.is_known(&doc) {
            return None;
        }
        let forced = Some(Some(SkipReason::SitemapDoc));
        let id = self.admit_one(doc, 0, parent, forced, true, &mut key, &mut fresh);
        let mut edges = Vec::with_capacity(entries.len());
        let mut children = Vec::new();
        for entry in entries {
            let mut e = entry.clone();
            e.set_fragment(None);
            let dst = if index {
                children.push(e.clone());
                self.admit_one(e, 0, Some(id), forced, true, &mut key, &mut fresh)
            } else {
                self.admit_one(e, 1, Some(id), None, true, &mut key, &mut fresh)
            };
            edges.push(Edge {
                dst,
                kind: LinkKind::Sitemap,
                nofollow: false,
                anchor: None,
            });
        }
        self.frontier.push(fresh);
        Some((id, edges, children))
    }

    /// Admit the links of a page fetched at `depth`; returns its edges in link order.
    /// When the page said `nofollow` (`follow` false), new URLs are recorded but not
    /// fetched, and every edge is marked nofollow.
    pub fn admit_links(
        &self,
        from: UrlId,
        depth: u32,
        links: Vec<Link>,
        follow: bool,
    ) -> Vec<Edge> {
        let mut key = String::with_capacity(128);
        let mut edges = Vec::with_capacity(links.len());
        let mut fresh = Vec::new();
        for link in links {
            let mut url = link.url;
            url.set_fragment(None);
            let dst = self.admit_one(
                url,
                depth + 1,
                Some(from),
                None,
                follow,
                &mut key,
                &mut fresh,
            );
            edges.push(Edge {
                dst,
                kind: link.kind,
                nofollow: link.nofollow || !follow,
                anchor: link.anchor,
            });
        }
        self.frontier.push(fresh);
        edges
    }

    /// Admit a redirect target of `from`: same depth, queued ahead of its host's other
    /// URLs. The edge is always returned; the error, if any, belongs to `from`.
    pub fn admit_redirect(
        &self,
        from: &QueuedUrl,
        depth: u32,
        mut target: Url,
    ) -> (Edge, Result<(), RedirectError>) {
        target.set_fragment(None);
        let too_many = from.chain.len() as u32 >= self.limits.max_redirects;
        let forced = too_many.then_some(Some(SkipReason::MaxRedirects));
        let mut key = String::new();
        let mut fresh = Vec::new();
        let dst = self.admit_one(
            target,
            depth,
            Some(from.id),
            forced,
            true,
            &mut key,
            &mut fresh,
        );
        for mut item in fresh {
            item.chain = from.chain.clone();
            item.chain.push(from.id);
            self.frontier.push_front(item);
        }
        let edge = Edge {
            dst,
            kind: LinkKind::Redirect,
            nofollow: false,
            anchor: None,
        };
        let result = if dst == from.id || from.chain.contains(&dst) {
            Err(RedirectError::Loop)
        } else if too_many {
            Err(RedirectError::TooMany)
        } else {
            Ok(())
        };
        (edge, result)
    }

    /// The id of `url`, admitting it if new. `forced`: `Some(None)` admits without the
    /// scope check, `Some(Some(r))` records it as skipped for `r`. `follow` is false for
    /// links of a page that said `nofollow`: new URLs are recorded, not fetched.
    #[allow(clippy::too_many_arguments)]
    fn admit_one(
        &self,
        url: Url,
        depth: u32,
        referrer: Option<UrlId>,
        forced: Option<Option<SkipReason>>,
        follow: bool,
        key: &mut String,
        fresh: &mut Vec<QueuedUrl>,
    ) -> UrlId {
        self.key_of(&url, key);
        let hash = key_hash(key);
        if let Some(seen) = self.visited.get(hash) {
            if seen.news(depth, follow) {
                self.found_again(hash, url, depth, follow, fresh);
            }
            return seen.id;
        }
        let skip = match forced {
            Some(forced) => forced,
            None => self.rules.skip_reason(&url, key, depth, follow),
        };
        let mut queued = None;
        let (seen, _) = self.visited.get_or_admit(hash, || {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let host = self.host_id(&url);
            let skip = skip.or_else(|| self.spend_budget(host));
            self.pending.push_url(NewUrl {
                id,
                host,
                key: key.clone(),
                url: (url.as_str() != key.as_str()).then(|| url.as_str().to_owned()),
                depth,
                referrer,
                skip,
            });
            if skip.is_none() {
                queued = Some(host);
            }
            Seen {
                id,
                depth,
                held: match skip {
                    Some(SkipReason::MaxDepth) => Held::TooDeep,
                    Some(SkipReason::Nofollow) => Held::Nofollow,
                    _ => Held::No,
                },
            }
        });
        let id = seen.id;
        if let Some(host) = queued {
            fresh.push(QueuedUrl {
                id,
                url,
                depth,
                host,
                chain: Vec::new(),
                attempts: 0,
                guard: self.drain.admit(),
            });
        }
        id
    }

    fn key_of(&self, url: &Url, key: &mut String) {
        self.rules.key_of(url, key);
    }

    /// Count one more URL to fetch against `max-pages` and the host's budget; the reason
    /// to skip it when either is spent.
    fn spend_budget(&self, host: HostId) -> Option<SkipReason> {
        if self.limits.max_pages_per_host > 0 {
            let mut n = self.host_admitted.entry(host).or_insert(0);
            if *n >= self.limits.max_pages_per_host {
                return Some(SkipReason::HostBudget);
            }
            *n += 1;
        }
        if self.limits.max_pages > 0
            && self.admitted.fetch_add(1, Ordering::Relaxed) >= self.limits.max_pages
        {
            return Some(SkipReason::MaxPages);
        }
        None
    }

    /// A known URL was found again, along a shorter path or by a followed link.
    fn found_again(
        &self,
        hash: u128,
        url: Url,
        depth: u32,
        follow: bool,
        fresh: &mut Vec<QueuedUrl>,
    ) {
        match self
            .visited
            .found_again(hash, depth, follow, self.limits.max_depth)
        {
            Lowered::No => {}
            Lowered::Depth(id) => self.pending.push_depth(id, depth),
            Lowered::Requeue(id, depth) => {
                let host = self.host_id(&url);
                if self.spend_budget(host).is_some() {
                    self.pending.push_depth(id, depth);
                    return;
                }
                // The row update is pending before the URL can be dispatched.
                self.pending.push_requeue(id, depth);
                fresh.push(QueuedUrl {
                    id,
                    host,
                    url,
                    depth,
                    chain: Vec::new(),
                    attempts: 0,
                    guard: self.drain.admit(),
                });
            }
        }
    }

    fn host_id(&self, url: &Url) -> HostId {
        let name = host_key(url);
        if let Some(id) = self.hosts.get(&name) {
            return *id;
        }
        let entry = self.hosts.entry(name);
        let name = entry.key().clone();
        *entry.or_insert_with(|| {
            let id = self.next_host.fetch_add(1, Ordering::Relaxed);
            // Under the entry's lock, like URL rows: no URL row can name the host before
            // the host row is pending.
            self.pending.push_host(NewHost { id, name });
            id
        })
    }
}
