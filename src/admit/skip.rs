//! Why a URL is not fetched: the reasons admission records, including those the scope and
//! the trap rules give.

use crate::traps::Trap;
use crate::url_norm::Miss;

use crate::names::stable_names;

stable_names! {
    /// Why a URL is not fetched. [`SkipReason::as_str`] is the stable name stored in the database.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum SkipReason ("skip reason") {
        /// Outside the scope mode's bounds.
        OutOfScope = "out-of-scope",
        /// Matched an `--exclude` pattern.
        Excluded = "excluded",
        /// `--include` patterns were given and none matched.
        NotIncluded = "not-included",
        /// Not http or https.
        UnsupportedScheme = "unsupported-scheme",
        /// Deeper than `--max-depth`.
        MaxDepth = "max-depth",
        /// Found after `--max-pages` was reached.
        MaxPages = "max-pages",
        /// A redirect target past `--max-redirects` hops.
        MaxRedirects = "max-redirects",
        /// Disallowed by robots.txt (or robots.txt could not be read).
        Robots = "robots",
        /// Longer than `--max-url-length`.
        UrlTooLong = "url-too-long",
        /// More path segments than `--max-path-segments`.
        TooManySegments = "too-many-segments",
        /// A path segment repeated more than `--max-repeated-segments` times.
        RepeatedSegment = "repeated-segment",
        /// The host's `--max-pages-per-host` budget was spent.
        HostBudget = "max-pages-per-host",
        /// Linked only from pages that said `nofollow` (meta robots or X-Robots-Tag).
        Nofollow = "nofollow",
        /// A sitemap document: read when its host is prepared, never fetched as a page (its
        /// row turns to done once read).
        SitemapDoc = "sitemap",
        /// Refused by the library user's link filter (`follow_if`).
        Filtered = "filtered",
        /// Its path already had `--max-query-variants` URLs to fetch that differ only in
        /// the query (a calendar, an ever-growing query).
        QueryVariants = "max-query-variants",
    }
}

impl From<Miss> for SkipReason {
    fn from(m: Miss) -> SkipReason {
        match m {
            Miss::OutOfScope => SkipReason::OutOfScope,
            Miss::Excluded => SkipReason::Excluded,
            Miss::NotIncluded => SkipReason::NotIncluded,
            Miss::UnsupportedScheme => SkipReason::UnsupportedScheme,
        }
    }
}

impl From<Trap> for SkipReason {
    fn from(t: Trap) -> SkipReason {
        match t {
            Trap::UrlTooLong => SkipReason::UrlTooLong,
            Trap::TooManySegments => SkipReason::TooManySegments,
            Trap::RepeatedSegment => SkipReason::RepeatedSegment,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_reason_names() {
        let names: Vec<_> = SkipReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "out-of-scope",
                "excluded",
                "not-included",
                "unsupported-scheme",
                "max-depth",
                "max-pages",
                "max-redirects",
                "robots",
                "url-too-long",
                "too-many-segments",
                "repeated-segment",
                "max-pages-per-host",
                "nofollow",
                "sitemap",
                "filtered",
                "max-query-variants"
            ]
        );
        for &reason in SkipReason::ALL {
            assert_eq!(reason.as_str().parse::<SkipReason>(), Ok(reason));
        }
        assert!("nope".parse::<SkipReason>().is_err());
    }
}
