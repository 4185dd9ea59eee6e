//! Sitemaps in a Redis crawl: read once per host for the whole crawl, by the process that
//! wins a claim in the host's state hash, when it first fetches from the host. What they
//! list is admitted like a link (depth 1, a `sitemap` edge from the sitemap document);
//! the documents are stored as URLs of their own, never fetched as pages, as in a local
//! crawl (`frontier::prepare`).
//!
//! The reading happens while the claiming process holds a lease on the host's first page,
//! and its admissions bump the generation before that lease completes, so the crawl
//! cannot be seen drained while a sitemap is being read.

use std::collections::HashMap;
use std::time::Duration;

use url::Url;

use super::queue::{Admission, Candidate, Lease, StoredEdges, StoredPage};
use super::worker::Worker;
use super::DistError;
use crate::link::LinkKind;
use crate::sitemap::{self, Sitemap};
use crate::url_norm::{host_key, SkipReason};

/// Sitemap documents read per host at most (an index may list many), as locally.
const MAX_SITEMAPS_PER_HOST: usize = 100;

impl Worker {
    /// Read `url`'s host's sitemaps if no process has: those robots.txt names, else
    /// `/sitemap.xml`.
    pub(super) async fn sitemaps_once(&self, url: &Url, host: &str) -> Result<(), DistError> {
        if !self.sitemaps || !self.queue.claim_sitemaps(host).await? {
            return Ok(());
        }
        let listed: Vec<Url> = self
            .robots
            .known(host)
            .map(|r| {
                r.sitemaps()
                    .iter()
                    .filter_map(|s| url.join(s.trim()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut todo: Vec<(Url, Option<String>)> = if listed.is_empty() {
            url.join("/sitemap.xml")
                .map(|u| vec![(u, None)])
                .unwrap_or_default()
        } else {
            listed.into_iter().map(|u| (u, None)).collect()
        };
        let mut read = 0;
        let mut admitted_any = false;
        while let Some((doc, parent)) = todo.pop() {
            if read >= MAX_SITEMAPS_PER_HOST {
                tracing::warn!(%doc, "too many sitemaps for one host; the rest are not read");
                break;
            }
            read += 1;
            if let Some((children, admitted)) = self.read_sitemap(&doc, parent).await? {
                admitted_any |= admitted;
                todo.extend(children);
            }
        }
        if admitted_any {
            self.queue.bump().await?;
        }
        Ok(())
    }

    /// Fetch, parse and store one sitemap document and admit what it lists. Returns the
    /// documents an index lists (with this one as their parent) and whether anything new
    /// was admitted; `None` when it is not a usable sitemap.
    #[allow(clippy::type_complexity)]
    async fn read_sitemap(
        &self,
        doc: &Url,
        parent: Option<String>,
    ) -> Result<Option<(Vec<(Url, Option<String>)>, bool)>, DistError> {
        let Some(fetched) = sitemap::fetch(&self.reader.fetcher, doc).await else {
            return Ok(None);
        };
        let (entries, index) = match &fetched.sitemap {
            Sitemap::UrlSet(u) => (u, false),
            Sitemap::Index(u) => (u, true),
        };
        let mut doc_url = doc.clone();
        doc_url.set_fragment(None);
        let mut doc_key = String::new();
        self.rules.key_of(&doc_url, &mut doc_key);
        let doc_host = host_key(&doc_url);
        let doc_candidate = Candidate {
            admission: Admission {
                url: (doc_url.as_str() != doc_key).then(|| doc_url.to_string()),
                depth: 0,
                referrer: parent.clone(),
                chain: Vec::new(),
            },
            key: doc_key.clone(),
            skip: Some(SkipReason::SitemapDoc.as_str()),
        };
        let is_new = self
            .queue
            .admit(&doc_host, std::slice::from_ref(&doc_candidate), false)
            .await?
            == 1;
        // A top-level document known already was read by an earlier run of the crawl.
        if !is_new && parent.is_none() {
            return Ok(None);
        }
        let mut groups: HashMap<String, Vec<Candidate>> = HashMap::new();
        let mut edges = Vec::new();
        let mut children = Vec::new();
        for entry in entries.iter().filter_map(|e| doc.join(e).ok()) {
            let mut entry = entry;
            entry.set_fragment(None);
            let mut key = String::new();
            self.rules.key_of(&entry, &mut key);
            let (depth, skip) = if index {
                children.push((entry.clone(), Some(doc_key.clone())));
                (0, Some(SkipReason::SitemapDoc))
            } else {
                (1, self.rules.skip_reason(&entry, &key, 1, true))
            };
            edges.push((key.clone(), LinkKind::Sitemap.code(), false, None));
            groups.entry(host_key(&entry)).or_default().push(Candidate {
                admission: Admission {
                    url: (entry.as_str() != key).then(|| entry.to_string()),
                    depth,
                    referrer: Some(doc_key.clone()),
                    chain: Vec::new(),
                },
                key,
                skip: skip.map(SkipReason::as_str),
            });
        }
        let calls = groups
            .iter()
            .map(|(host, urls)| self.queue.admit(host, urls, false));
        let mut admitted = is_new;
        for r in futures_util::future::join_all(calls).await {
            admitted |= r? > 0;
        }
        let page = StoredPage {
            depth: 0,
            attempts: 1,
            skip: Some(SkipReason::SitemapDoc.as_str().to_owned()),
            status: Some(fetched.status),
            content_type: fetched.content_type.clone(),
            size: Some(fetched.size),
            fetched_at: fetched.fetched_at,
            fetch_ms: fetched.fetch_ms,
            ..StoredPage::default()
        };
        let as_lease = Lease {
            host: doc_host,
            key: doc_key.clone(),
            admission: doc_candidate.admission,
            tries: 0,
            interval: Duration::ZERO,
        };
        let stored_edges = StoredEdges {
            src: doc_key,
            edges,
        };
        self.queue
            .complete(
                &as_lease,
                &page,
                (!stored_edges.edges.is_empty()).then_some(&stored_edges),
            )
            .await?;
        Ok(Some((children, admitted)))
    }
}
