//! Links as trawl records them: the kind of element (or event) that made one URL point
//! at another. Shared by extraction, the store and export, so the codes live in one place.

use url::Url;

use crate::names::stable_names;

stable_names! {
    /// Why one URL points at another. Stored as a small integer code in `edges.kind`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum LinkKind ("link kind") {
        /// `<a href>`
        A = "a",
        /// `<area href>`
        Area = "area",
        /// `<link href>` with any `rel` other than `canonical`
        Link = "link",
        /// `<iframe src>`
        Iframe = "iframe",
        /// `<frame src>`
        Frame = "frame",
        /// A 3xx response's `Location`, one edge per hop.
        Redirect = "redirect",
        /// `<link rel=canonical href>`
        Canonical = "canonical",
        /// A URL listed in a sitemap.
        Sitemap = "sitemap",
        /// A declarative refresh: `<meta http-equiv=refresh content="0; url=...">` or the
        /// `Refresh` response header.
        Refresh = "refresh",
    }
}

impl LinkKind {
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
        for &k in LinkKind::ALL {
            assert_eq!(LinkKind::from_code(k.code()), Some(k));
            assert_eq!(k.as_str().parse::<LinkKind>(), Ok(k));
        }
        assert_eq!(LinkKind::from_code(99), None);
    }
}
