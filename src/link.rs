//! Links as trawl records them: the kind of element (or event) that made one URL point
//! at another. Shared by extraction, the store and export, so the codes live in one place.

use std::fmt;
use std::str::FromStr;

use url::Url;

/// Why one URL points at another. Stored as a small integer code in `edges.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkKind {
    /// `<a href>`
    A,
    /// `<area href>`
    Area,
    /// `<link href>` with any `rel` other than `canonical`
    Link,
    /// `<iframe src>`
    Iframe,
    /// `<frame src>`
    Frame,
    /// A 3xx response's `Location`, one edge per hop.
    Redirect,
    /// `<link rel=canonical href>`
    Canonical,
    /// A URL listed in a sitemap.
    Sitemap,
}

impl LinkKind {
    /// Every kind, in code order.
    pub const ALL: [LinkKind; 8] = [
        LinkKind::A,
        LinkKind::Area,
        LinkKind::Link,
        LinkKind::Iframe,
        LinkKind::Frame,
        LinkKind::Redirect,
        LinkKind::Canonical,
        LinkKind::Sitemap,
    ];

    /// The name used in exports and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::A => "a",
            LinkKind::Area => "area",
            LinkKind::Link => "link",
            LinkKind::Iframe => "iframe",
            LinkKind::Frame => "frame",
            LinkKind::Redirect => "redirect",
            LinkKind::Canonical => "canonical",
            LinkKind::Sitemap => "sitemap",
        }
    }

    /// The integer stored in `edges.kind` (see `migrations/`).
    pub fn code(self) -> i64 {
        self as i64
    }

    /// Inverse of [`LinkKind::code`].
    pub fn from_code(code: i64) -> Option<LinkKind> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }
}

impl fmt::Display for LinkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LinkKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown link kind {s:?}"))
    }
}

/// One link out of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outlink {
    /// Absolute URL, fragment removed.
    pub url: Url,
    /// The element or event that made it.
    pub kind: LinkKind,
    /// `rel=nofollow`, or the page said nofollow.
    pub nofollow: bool,
    /// The link's text (for `<a>`).
    pub anchor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for k in LinkKind::ALL {
            assert_eq!(LinkKind::from_code(k.code()), Some(k));
            assert_eq!(k.as_str().parse::<LinkKind>(), Ok(k));
        }
        assert_eq!(LinkKind::from_code(99), None);
    }
}
