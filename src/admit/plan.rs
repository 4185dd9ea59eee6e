//! Planning: what a page led to (its links, a redirect, a sitemap's entries, the seeds)
//! turned into candidates to admit, and a redirect's errors, decided by key hash so both
//! stores decide them the same way.

use url::Url;

use super::{RedirectError, Rules, SkipReason};
use crate::extract::{Link, Position};
use crate::link::LinkKind;
use crate::result::ErrorKind;

/// How a candidate's skip reason is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// By [`Rules::skip_reason`].
    ByRules,
    /// Never skipped: a seed (the user asked for it).
    Admit,
    /// Always skipped for this reason (a sitemap document, a redirect past the limit).
    Skip(SkipReason),
}

/// The edge a candidate is the target of: what both stores record of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeSpec {
    /// Element or event that made it.
    pub kind: LinkKind,
    /// `rel=nofollow`, or the page said nofollow.
    pub nofollow: bool,
    /// The link's text (for `<a>`).
    pub anchor: Option<String>,
    /// The link's `#fragment` as written (percent-encoded, without `#`), if any: judged
    /// against the target's ids by `trawl report broken`.
    pub fragment: Option<String>,
    /// Where its element starts in the source page, when an element made it.
    pub at: Option<Position>,
}

impl EdgeSpec {
    /// An edge no element made (a redirect, a sitemap entry): no text, fragment or place.
    pub fn plain(kind: LinkKind) -> EdgeSpec {
        EdgeSpec {
            kind,
            nofollow: false,
            anchor: None,
            fragment: None,
            at: None,
        }
    }
}

/// A URL to admit: what it is, where it was found and how it is judged.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The URL, fragment removed.
    pub url: Url,
    /// Click depth it was found at.
    pub depth: u32,
    /// False when found on a page that said `nofollow`: recorded, not fetched.
    pub follow: bool,
    /// How its skip reason is decided.
    pub judged: Judged,
    /// For a redirect target: the hashes of the chain that led here (oldest first, the
    /// redirecting URL last), for loop detection; such a target is queued ahead of its
    /// host's other URLs. Empty otherwise.
    pub chain: Vec<u128>,
    /// The edge from the page that found it (`None` for a seed or a top-level sitemap).
    pub edge: Option<EdgeSpec>,
}

impl Candidate {
    fn new(mut url: Url, depth: u32, judged: Judged, edge: Option<EdgeSpec>) -> Candidate {
        url.set_fragment(None);
        Candidate {
            url,
            depth,
            follow: true,
            judged,
            chain: Vec::new(),
            edge,
        }
    }

    /// A seed: depth 0, never judged by scope.
    pub fn seed(url: Url) -> Candidate {
        Candidate::new(url, 0, Judged::Admit, None)
    }

    /// A sitemap document listed by robots.txt (or probed at `/sitemap.xml`) or by an index:
    /// stored as a URL of its own, never fetched as a page.
    pub fn sitemap_doc(url: Url, listed_by_index: bool) -> Candidate {
        let edge = listed_by_index.then(|| EdgeSpec::plain(LinkKind::Sitemap));
        Candidate::new(url, 0, Judged::Skip(SkipReason::SitemapDoc), edge)
    }

    /// A page a sitemap lists: depth 1, judged like a link.
    pub fn sitemap_entry(url: Url) -> Candidate {
        let edge = Some(EdgeSpec::plain(LinkKind::Sitemap));
        Candidate::new(url, 1, Judged::ByRules, edge)
    }

    /// Whether this is a redirect target (queued at the front of its host).
    pub fn is_redirect(&self) -> bool {
        !self.chain.is_empty()
    }
}

/// What a fetched page points at, planned before admission.
#[derive(Debug, Default)]
pub enum Outlinks {
    /// Nothing (a failure, a body that is not HTML).
    #[default]
    None,
    /// The links of an HTML page fetched at `depth`; `follow` is false when the page said
    /// `nofollow`.
    Links {
        /// The page's depth.
        depth: u32,
        /// The page allows its links to be followed.
        follow: bool,
        /// In document order.
        links: Vec<Link>,
    },
    /// One redirect hop.
    Redirect(Candidate),
}

impl Outlinks {
    /// How many edges the page gets.
    pub fn len(&self) -> usize {
        match self {
            Outlinks::None => 0,
            Outlinks::Links { links, .. } => links.len(),
            Outlinks::Redirect(_) => 1,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The candidates in document order: each link's target one level deeper, every edge
    /// marked nofollow when the page said so.
    pub fn candidates(self) -> impl Iterator<Item = Candidate> {
        let (links, redirect, depth, follow) = match self {
            Outlinks::None => (Vec::new(), None, 0, true),
            Outlinks::Links {
                depth,
                follow,
                links,
            } => (links, None, depth, follow),
            Outlinks::Redirect(c) => (Vec::new(), Some(c), 0, true),
        };
        redirect.into_iter().chain(links.into_iter().map(move |l| {
            let fragment = l.url.fragment().map(str::to_owned);
            let mut c = Candidate::new(
                l.url,
                depth + 1,
                Judged::ByRules,
                Some(EdgeSpec {
                    kind: l.kind,
                    nofollow: l.nofollow || !follow,
                    anchor: l.anchor,
                    fragment,
                    at: l.at,
                }),
            );
            c.follow = follow;
            c
        }))
    }
}

/// Plan a redirect hop from a URL whose key hashes to `own`, reached through `chain`, at
/// `depth`: the target's candidate (same depth; skipped past `max-redirects`) and the
/// error the redirecting URL gets, if any.
pub fn plan_redirect(
    rules: &Rules,
    own: u128,
    chain: &[u128],
    depth: u32,
    target: Url,
) -> (Candidate, Option<(ErrorKind, String)>) {
    let too_many = chain.len() as u32 >= rules.limits.max_redirects;
    let judged = if too_many {
        Judged::Skip(SkipReason::MaxRedirects)
    } else {
        Judged::ByRules
    };
    let mut c = Candidate::new(
        target,
        depth,
        judged,
        Some(EdgeSpec::plain(LinkKind::Redirect)),
    );
    let mut key = String::new();
    let hash = rules.hash_of(&c.url, &mut key);
    let error = if hash == own || chain.contains(&hash) {
        Some((
            RedirectError::Loop.kind(),
            format!("redirect loop back to {}", c.url),
        ))
    } else if too_many {
        Some((
            RedirectError::TooMany.kind(),
            format!("more than {} redirects", chain.len()),
        ))
    } else {
        None
    };
    c.chain = chain.to_vec();
    c.chain.push(own);
    (c, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CrawlConfig;
    use crate::url_norm::{Scope, ScopeMode};

    fn rules(max_redirects: u32) -> Rules {
        let seed = Url::parse("http://a.test/").unwrap();
        let scope = Scope::new(&[seed], ScopeMode::Host, &[], &[]).unwrap();
        let config = CrawlConfig {
            max_redirects,
            ..CrawlConfig::default()
        };
        Rules::new(scope, &config, None)
    }

    #[test]
    fn redirects_are_planned_by_key_hash() {
        let r = rules(2);
        let mut key = String::new();
        let a = Url::parse("http://a.test/a").unwrap();
        let own = r.hash_of(&a, &mut key);
        // A hop to a new URL: no error, the chain grows by the redirecting URL.
        let (c, err) = plan_redirect(&r, own, &[], 3, Url::parse("http://a.test/b#x").unwrap());
        assert!(err.is_none());
        assert_eq!((c.url.as_str(), c.depth), ("http://a.test/b", 3));
        assert_eq!(c.chain, vec![own]);
        assert!(c.is_redirect());
        // Back to itself (another spelling of the same key): a loop.
        let (_, err) = plan_redirect(&r, own, &[], 0, Url::parse("http://A.test/a").unwrap());
        assert_eq!(err.unwrap().0, ErrorKind::RedirectLoop);
        // Past the limit: the target is recorded as skipped, the hop fails.
        let (c, err) = plan_redirect(&r, own, &[1, 2], 0, Url::parse("http://a.test/z").unwrap());
        assert_eq!(err.unwrap().0, ErrorKind::RedirectLimit);
        assert_eq!(c.judged, Judged::Skip(SkipReason::MaxRedirects));
    }

    #[test]
    fn links_become_candidates_one_level_deeper() {
        let link = |u: &str, nofollow| Link {
            url: Url::parse(u).unwrap(),
            kind: LinkKind::A,
            nofollow,
            anchor: Some("x".into()),
            at: Some(Position { line: 3, col: 7 }),
        };
        let out = Outlinks::Links {
            depth: 2,
            follow: false,
            links: vec![
                link("http://a.test/p#f", false),
                link("http://b.test/", true),
            ],
        };
        assert_eq!(out.len(), 2);
        let c: Vec<Candidate> = out.candidates().collect();
        assert_eq!(c[0].url.as_str(), "http://a.test/p");
        let edge = c[0].edge.as_ref().unwrap();
        assert_eq!(
            edge.fragment.as_deref(),
            Some("f"),
            "the fragment stays on the edge"
        );
        assert_eq!(edge.at, Some(Position { line: 3, col: 7 }));
        assert_eq!(c[1].edge.as_ref().unwrap().fragment, None);
        assert!(c.iter().all(|c| c.depth == 3 && !c.follow));
        assert!(c.iter().all(|c| c.edge.as_ref().unwrap().nofollow));
        let r = rules(10);
        let mut key = String::new();
        r.key_of(&c[0].url, &mut key);
        assert_eq!(r.judge(&c[0], &key), Some(SkipReason::Nofollow));
        r.key_of(&c[1].url, &mut key);
        assert_eq!(r.judge(&c[1], &key), Some(SkipReason::OutOfScope));
    }
}
