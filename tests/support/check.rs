//! Checks shared by the crawl tests: what a crawl stored against what the site generator
//! knows, and how often the server saw each page.

use std::collections::BTreeMap;

use super::{db, Expected, SiteServer, NEVER_FETCHED};

/// Compare what was stored with what the site generator knows. Depths are compared only
/// when `depths` is set: with one worker trawl fetches in exact breadth-first order, with
/// several a URL's recorded depth is the depth at which it was first discovered, which
/// can be one more than the shortest path.
pub fn assert_matches(expected: &Expected, got: &db::Crawled, depths: bool) {
    assert_eq!(got.integrity, "ok");
    assert!(got.duplicate_keys.is_empty(), "{:?}", got.duplicate_keys);
    assert!(got.queued.is_empty(), "left queued: {:?}", got.queued);
    let want: BTreeMap<_, _> = expected
        .fetched
        .iter()
        .map(|(k, p)| {
            (
                k.clone(),
                (Some(p.status), if depths { p.depth } else { 0 }),
            )
        })
        .collect();
    let have: BTreeMap<_, _> = got
        .fetched
        .iter()
        .map(|(k, (s, d, _, _))| (k.clone(), (*s, if depths { *d } else { 0 })))
        .collect();
    let diff: Vec<_> = want
        .keys()
        .chain(have.keys())
        .filter(|k| want.get(*k) != have.get(*k))
        .map(|k| format!("{k}: want {:?} have {:?}", want.get(k), have.get(k)))
        .collect();
    assert!(
        diff.is_empty(),
        "fetched pages (status, depth) differ:\n{}",
        diff.join("\n")
    );
    let skipped: std::collections::BTreeSet<_> = got.skipped.keys().cloned().collect();
    assert_eq!(skipped, expected.skipped, "skipped URLs");
    assert_eq!(got.edges, expected.edges, "edge multiset");
}

pub fn assert_fetched_once(server: &SiteServer, expected: &Expected) {
    let base = server.base();
    let counts = server.hit_counts();
    for path in NEVER_FETCHED {
        assert_eq!(counts.get(*path), None, "{path} must never be fetched");
    }
    for key in expected.fetched.keys() {
        let path = key.strip_prefix(&base).unwrap();
        assert_eq!(counts.get(path), Some(&1), "{path} fetched once");
    }
    let total: usize = counts
        .iter()
        .filter(|(p, _)| !["/robots.txt", "/sitemap.xml"].contains(&p.as_str()))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        total,
        expected.fetched.len(),
        "no other requests: {counts:?}"
    );
}
