//! Whether a link's `#fragment` names a part of its target page, as a browser looks for it
//! (the HTML standard's "select the indicated part" and "find a potential indicated
//! element"): the empty fragment is the top of the page; else an element whose `id` is
//! the fragment, or an `<a name>` with it; then the same with the fragment
//! percent-decoded (UTF-8, invalid bytes as U+FFFD); then `top` (ASCII case-insensitive,
//! decoded) is the top of the page. Anything else names nothing: the link is broken.
//!
//! The crawl stores a page's targets (`urls.ids`: every `id` and `<a name>`, one a line)
//! and each link's fragment as written in its URL (`edges.fragment`, percent-encoded);
//! this module only compares them. `id` and `name` are looked up alike: the standard tries
//! every id first, but a fragment either names some target or none, so the order does
//! not change the answer.

use std::borrow::Cow;
use std::collections::HashSet;

/// What a fragment comes to on its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fragment {
    /// The page has the part it names (or it names the top of the page).
    Found,
    /// The page was read and has no such part.
    Missing,
    /// Not judged: the page's targets were not collected (not HTML, fragment checks off,
    /// or more targets than the crawl keeps per page).
    Unknown,
}

/// A page's fragment targets, from `urls.ids`, ready for many lookups.
#[derive(Debug, Clone, Default)]
pub struct Ids {
    names: HashSet<Box<str>>,
}

impl Ids {
    /// The targets of `urls.ids` text: one per line.
    pub fn new(text: &str) -> Ids {
        Ids {
            names: text.split('\n').map(Box::from).collect(),
        }
    }

    /// Whether `fragment` (as stored: percent-encoded, without `#`) is one of the targets,
    /// as written or percent-decoded. The top of the page is [`judge`]'s business.
    fn names(&self, fragment: &str) -> bool {
        self.names.contains(fragment) || self.names.contains(decode(fragment).as_ref())
    }
}

/// The fragment percent-decoded, invalid UTF-8 as U+FFFD (the standard's "UTF-8 decode
/// without BOM").
fn decode(fragment: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(fragment).decode_utf8_lossy()
}

/// Whether `fragment` names the top of any page, ids or none: empty, or `top`.
fn is_top(fragment: &str) -> bool {
    fragment.is_empty() || decode(fragment).eq_ignore_ascii_case("top")
}

/// Judge `fragment` (as stored) against a page's targets (`None`: not collected). The top
/// of the page is always found.
pub fn judge(fragment: &str, ids: Option<&Ids>) -> Fragment {
    match ids {
        _ if is_top(fragment) => Fragment::Found,
        None => Fragment::Unknown,
        Some(ids) if ids.names(fragment) => Fragment::Found,
        Some(_) => Fragment::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "intro\nsection-2\ncafé\nold-name\nTop\n100%\na b\nüber";

    /// `fragment` judged on a page whose `urls.ids` is `ids`.
    fn find(fragment: &str, ids: Option<&str>) -> Fragment {
        judge(fragment, ids.map(Ids::new).as_ref())
    }

    fn on_page(fragment: &str) -> Fragment {
        find(fragment, Some(PAGE))
    }

    #[test]
    fn ids_and_names_are_found_as_written() {
        assert_eq!(on_page("intro"), Fragment::Found);
        assert_eq!(on_page("old-name"), Fragment::Found);
        // Case matters for ids, as in browsers.
        assert_eq!(on_page("Intro"), Fragment::Missing);
        assert_eq!(on_page("section"), Fragment::Missing);
    }

    #[test]
    fn percent_encoded_fragments_are_decoded() {
        assert_eq!(on_page("caf%C3%A9"), Fragment::Found);
        assert_eq!(on_page("caf%c3%a9"), Fragment::Found);
        assert_eq!(on_page("%C3%BCber"), Fragment::Found);
        assert_eq!(on_page("a%20b"), Fragment::Found);
        // Tried raw first: an id that is itself an escape matches as written...
        assert_eq!(find("100%25", Some("100%25")), Fragment::Found);
        // ...and decoded next.
        assert_eq!(on_page("100%25"), Fragment::Found);
        // Raw non-ASCII (a URL that kept it) matches too.
        assert_eq!(on_page("café"), Fragment::Found);
        // Invalid UTF-8 decodes to U+FFFD, which no id here is.
        assert_eq!(on_page("caf%E9"), Fragment::Missing);
        assert_eq!(find("caf%E9", Some("caf\u{fffd}")), Fragment::Found);
    }

    #[test]
    fn empty_and_top_are_the_top_of_the_page() {
        let no_ids = Some("");
        assert_eq!(find("", no_ids), Fragment::Found);
        assert_eq!(find("top", no_ids), Fragment::Found);
        assert_eq!(find("TOP", no_ids), Fragment::Found);
        assert_eq!(find("%74op", no_ids), Fragment::Found);
        assert_eq!(find("topp", no_ids), Fragment::Missing);
        // An id "Top" is an element of its own; "top" still means the top.
        assert_eq!(on_page("Top"), Fragment::Found);
    }

    #[test]
    fn pages_without_collected_ids_are_not_judged() {
        assert_eq!(find("anything", None), Fragment::Unknown);
        // The top needs no ids.
        assert_eq!(find("", None), Fragment::Found);
        assert_eq!(find("Top", None), Fragment::Found);
    }
}
