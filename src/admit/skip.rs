//! Why a URL is not fetched: the reasons admission records, including those the scope and
//! the trap rules give.

use std::fmt;
use std::str::FromStr;

use crate::traps::Trap;
use crate::url_norm::Miss;

/// Why a URL is not fetched. [`SkipReason::as_str`] is the stable name stored in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Outside the scope mode's bounds.
    OutOfScope,
    /// Matched an `--exclude` pattern.
    Excluded,
    /// `--include` patterns were given and none matched.
    NotIncluded,
    /// Not http or https.
    UnsupportedScheme,
    /// Deeper than `--max-depth`.
    MaxDepth,
    /// Found after `--max-pages` was reached.
    MaxPages,
    /// A redirect target past `--max-redirects` hops.
    MaxRedirects,
    /// Disallowed by robots.txt (or robots.txt could not be read).
    Robots,
    /// Longer than `--max-url-length`.
    UrlTooLong,
    /// More path segments than `--max-path-segments`.
    TooManySegments,
    /// A path segment repeated more than `--max-repeated-segments` times.
    RepeatedSegment,
    /// The host's `--max-pages-per-host` budget was spent.
    HostBudget,
    /// Linked only from pages that said `nofollow` (meta robots or X-Robots-Tag).
    Nofollow,
    /// A sitemap document: read when its host is prepared, never fetched as a page (its
    /// row turns to done once read).
    SitemapDoc,
    /// Refused by the library user's link filter (`follow_if`).
    Filtered,
}

impl SkipReason {
    /// Every reason.
    pub const ALL: [SkipReason; 15] = [
        SkipReason::OutOfScope,
        SkipReason::Excluded,
        SkipReason::NotIncluded,
        SkipReason::UnsupportedScheme,
        SkipReason::MaxDepth,
        SkipReason::MaxPages,
        SkipReason::MaxRedirects,
        SkipReason::Robots,
        SkipReason::UrlTooLong,
        SkipReason::TooManySegments,
        SkipReason::RepeatedSegment,
        SkipReason::HostBudget,
        SkipReason::Nofollow,
        SkipReason::SitemapDoc,
        SkipReason::Filtered,
    ];

    /// The stable kebab-case name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::OutOfScope => "out-of-scope",
            SkipReason::Excluded => "excluded",
            SkipReason::NotIncluded => "not-included",
            SkipReason::UnsupportedScheme => "unsupported-scheme",
            SkipReason::MaxDepth => "max-depth",
            SkipReason::MaxPages => "max-pages",
            SkipReason::MaxRedirects => "max-redirects",
            SkipReason::Robots => "robots",
            SkipReason::UrlTooLong => "url-too-long",
            SkipReason::TooManySegments => "too-many-segments",
            SkipReason::RepeatedSegment => "repeated-segment",
            SkipReason::HostBudget => "max-pages-per-host",
            SkipReason::Nofollow => "nofollow",
            SkipReason::SitemapDoc => "sitemap",
            SkipReason::Filtered => "filtered",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SkipReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown skip reason {s:?}"))
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
                "filtered"
            ]
        );
        for reason in SkipReason::ALL {
            assert_eq!(reason.as_str().parse::<SkipReason>(), Ok(reason));
        }
        assert!("nope".parse::<SkipReason>().is_err());
    }
}
