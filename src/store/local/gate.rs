//! The local store's admission: each candidate (see `admit`) passes here once.
//!
//! For each: build the canonical key, hash it, look it up in the visited set. A URL seen
//! before costs one hash and one map read and yields its id. A new URL gets an id, is
//! judged by the crawl's rules and limits, has its row written to the pending buffer
//! (while its visited-set entry is locked, see `visited`), and, if it is to be fetched,
//! is queued in the frontier with a drain guard. A page's new URLs reach the frontier in
//! one push, so the frontier lock is taken once per page.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use url::Url;

use super::drain::Drain;
use super::frontier::{Frontier, QueuedUrl};
use super::pending::{Edge, HostId, NewHost, NewUrl, Pending, UrlId};
use super::sqlite::KnownUrl;
use super::visited::{Footprint, Held, Lowered, Seen, Visited};
use crate::admit::{Candidate, Outlinks, Rules, SkipReason};
use crate::traps::query_group;
use crate::url_norm::{host_key, key_hash};

/// See the module doc.
pub struct Gate {
    rules: Arc<Rules>,
    /// URLs admitted for fetching per host, for `max-pages-per-host`.
    host_admitted: DashMap<HostId, u64>,
    /// URLs with a query admitted for fetching, per host and hash of the URL without
    /// the query, for `max-query-variants`. Only paths that have queries take room.
    query_variants: DashMap<(HostId, u64), u64>,
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
    /// A gate judging by `rules` over `visited`; a resumed crawl is then filled with
    /// [`Gate::restore_url`] and [`Gate::restore_host`].
    pub fn new(
        rules: Arc<Rules>,
        visited: Visited,
        pending: Arc<Pending>,
        frontier: Arc<Frontier>,
        drain: Arc<Drain>,
    ) -> Gate {
        Gate {
            rules,
            host_admitted: DashMap::new(),
            query_variants: DashMap::new(),
            visited,
            hosts: DashMap::new(),
            next_host: AtomicU32::new(1),
            next_id: AtomicU64::new(1),
            admitted: AtomicU64::new(0),
            pending,
            frontier,
            drain,
        }
    }

    /// Record a URL known from the store (resume).
    pub fn restore_url(&self, url: KnownUrl<'_>) {
        if url.skip_reason.is_none() {
            self.count_query_variant(url.host, url.key);
        }
        self.visited.insert_known(
            key_hash(url.key),
            Seen {
                id: url.id,
                depth: url.depth,
                held: match url.skip_reason {
                    Some(r) if r == SkipReason::MaxDepth.as_str() => Held::TooDeep,
                    Some(r) if r == SkipReason::Nofollow.as_str() => Held::Nofollow,
                    _ => Held::No,
                },
            },
        );
        self.next_id.fetch_max(url.id + 1, Ordering::Relaxed);
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

    /// The shallowest depth known for the URL whose key hashes to `hash`.
    pub fn depth_of(&self, hash: u128) -> Option<u32> {
        self.visited.get(hash).map(|s| s.depth)
    }

    /// The id of `url`, if known.
    pub fn id_of(&self, url: &Url) -> Option<UrlId> {
        let mut key = String::new();
        self.visited
            .get(self.rules.hash_of(url, &mut key))
            .map(|s| s.id)
    }

    /// Whether `url` is known to the crawl.
    pub fn is_known(&self, url: &Url) -> bool {
        self.id_of(url).is_some()
    }

    /// Admit seeds.
    pub fn admit_seeds(&self, seeds: &[Url]) {
        let mut key = String::new();
        let mut fresh = Vec::new();
        for seed in seeds {
            self.admit(Candidate::seed(seed.clone()), None, &mut key, &mut fresh);
        }
        self.frontier.push(fresh);
    }

    /// Admit what the page `from` links to; returns its edges in link order. A redirect
    /// target is queued ahead of its host's other URLs.
    pub fn admit_outlinks(&self, from: UrlId, links: Outlinks) -> Vec<Edge> {
        let mut key = String::with_capacity(128);
        let mut edges = Vec::with_capacity(links.len());
        let mut fresh = Vec::new();
        let redirect = matches!(links, Outlinks::Redirect(_));
        for mut c in links.candidates() {
            // Taken, not cloned: the anchor text is the one allocation an edge has.
            let edge = c.edge.take();
            let dst = self.admit(c, Some(from), &mut key, &mut fresh);
            if let Some(spec) = edge {
                edges.push(Edge { dst, spec });
            }
        }
        if redirect {
            for item in fresh {
                self.frontier.push_front(item);
            }
        } else {
            self.frontier.push(fresh);
        }
        edges
    }

    /// Record a sitemap document read at `url` (listed by the index `parent`, if any) and
    /// admit what it lists: pages (depth 1) for a URL set, further sitemap documents for
    /// an index. Returns the document's id and its `sitemap` edges; `None` when a
    /// top-level document is already known (read in an earlier run).
    pub fn admit_sitemap(
        &self,
        url: &Url,
        parent: Option<UrlId>,
        entries: &[Url],
        index: bool,
    ) -> Option<(UrlId, Vec<Edge>)> {
        let mut key = String::new();
        let mut fresh = Vec::new();
        let doc = Candidate::sitemap_doc(url.clone(), parent.is_some());
        if parent.is_none() && self.is_known(&doc.url) {
            return None;
        }
        let id = self.admit(doc, parent, &mut key, &mut fresh);
        let mut edges = Vec::with_capacity(entries.len());
        for entry in entries {
            let c = if index {
                Candidate::sitemap_doc(entry.clone(), true)
            } else {
                Candidate::sitemap_entry(entry.clone())
            };
            let spec = c.edge.clone().expect("entries have an edge");
            let dst = self.admit(c, Some(id), &mut key, &mut fresh);
            edges.push(Edge { dst, spec });
        }
        self.frontier.push(fresh);
        Some((id, edges))
    }

    /// The id of candidate `c`, admitting it if new (found on the page `referrer`). New URLs
    /// to fetch are added to `fresh`; `key` is scratch space for the canonical key.
    fn admit(
        &self,
        c: Candidate,
        referrer: Option<UrlId>,
        key: &mut String,
        fresh: &mut Vec<QueuedUrl>,
    ) -> UrlId {
        let hash = self.rules.hash_of(&c.url, key);
        if let Some(seen) = self.visited.get(hash) {
            if seen.news(c.depth, c.follow) {
                self.found_again(hash, key, c.url, c.depth, c.follow, fresh);
            }
            return seen.id;
        }
        let skip = self.rules.judge(&c, key);
        let mut queued = None;
        let (seen, _) = self.visited.get_or_admit(hash, || {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let host = self.host_id(&c.url);
            let skip = skip.or_else(|| self.spend_budget(host, key));
            self.pending.push_url(NewUrl {
                id,
                host,
                key: key.clone(),
                url: (c.url.as_str() != key.as_str()).then(|| c.url.as_str().to_owned()),
                depth: c.depth,
                referrer,
                skip,
            });
            if skip.is_none() {
                queued = Some(host);
            }
            Seen {
                id,
                depth: c.depth,
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
                url: c.url,
                depth: c.depth,
                host,
                chain: c.chain,
                attempts: 0,
                validators: None,
                guard: self.drain.admit(),
            });
        }
        id
    }

    /// Count one more URL to fetch, whose canonical key is `key`, against its path's query
    /// variants, the host's budget and `max-pages`; the reason to skip it when one is spent.
    fn spend_budget(&self, host: HostId, key: &str) -> Option<SkipReason> {
        let cap = self.rules.traps.max_query_variants;
        if cap > 0 && self.count_query_variant(host, key) > cap {
            return Some(SkipReason::QueryVariants);
        }
        let limits = &self.rules.limits;
        if limits.max_pages_per_host > 0 {
            let mut n = self.host_admitted.entry(host).or_insert(0);
            if *n >= limits.max_pages_per_host {
                return Some(SkipReason::HostBudget);
            }
            *n += 1;
        }
        if limits.max_pages > 0 && self.admitted.fetch_add(1, Ordering::Relaxed) >= limits.max_pages
        {
            return Some(SkipReason::MaxPages);
        }
        None
    }

    /// Count the URL with canonical key `key` as one more variant of its path on `host`,
    /// if it has a query; how many there are now (0 for none).
    fn count_query_variant(&self, host: HostId, key: &str) -> u64 {
        let Some(group) = query_group(key) else {
            return 0;
        };
        let mut n = self
            .query_variants
            .entry((host, key_hash(group) as u64))
            .or_insert(0);
        *n += 1;
        *n
    }

    /// A known URL was found again, along a shorter path or by a followed link.
    fn found_again(
        &self,
        hash: u128,
        key: &str,
        url: Url,
        depth: u32,
        follow: bool,
        fresh: &mut Vec<QueuedUrl>,
    ) {
        let max_depth = self.rules.limits.max_depth;
        match self.visited.found_again(hash, depth, follow, max_depth) {
            Lowered::No => {}
            Lowered::Depth(id) => self.pending.push_depth(id, depth),
            Lowered::Requeue(id, depth) => {
                let host = self.host_id(&url);
                if self.spend_budget(host, key).is_some() {
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
                    validators: None,
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
