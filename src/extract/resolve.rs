//! A page's links resolved against its base, once per distinct `href`: on link-dense pages
//! the same value comes back again and again (the Rust docs: 106 links a page, ~40 % of
//! them repeats of one already on the page, sidebars and `#method` anchors), and resolving
//! against the base is most of the cost of a link (BENCHMARKS.md, "A per-page memo of
//! resolved links").
//!
//! A value is remembered by its 128-bit hash (no copy of it, nor of its URL), with the
//! index of the page's first link it made, or as making none.

use url::Url;

use crate::url_norm::{key_hash, ByKeyHash};

/// `value` resolved against `base`, its query encoded in `query_encoding` (the document's,
/// when not UTF-8); `scratch` is reused from link to link.
pub(super) fn resolve(
    scratch: &mut String,
    base: &Url,
    query_encoding: Option<&'static encoding_rs::Encoding>,
    value: &str,
) -> Option<Url> {
    // `url` sizes the new URL's string by the length of its input, so a relative link
    // (`/p/12`) is reallocated twice as the base and then the path are copied in. Spaces
    // appended to the input make room for the base up front; the parser strips trailing
    // spaces (as the URL standard says), so the result is the same.
    let padded = scratch;
    padded.clear();
    padded.push_str(value);
    const SPACES: &str = match std::str::from_utf8(&[b' '; 256]) {
        Ok(s) => s,
        Err(_) => unreachable!(),
    };
    padded.push_str(&SPACES[..SPACES.len().min(base.as_str().len() + 8)]);
    let options = Url::options().base_url(Some(base));
    match query_encoding {
        None => options.parse(padded).ok(),
        Some(enc) => {
            fn with(
                enc: &'static encoding_rs::Encoding,
            ) -> impl for<'a> Fn(&'a str) -> std::borrow::Cow<'a, [u8]> {
                move |s| enc.encode(s).0
            }
            let encode = with(enc);
            options.encoding_override(Some(&encode)).parse(padded).ok()
        }
    }
}

/// Distinct values kept per page: a hostile page of unique links costs bounded memory,
/// and past this its links are resolved each time, as without the memo.
const MAX_ENTRIES: usize = 4096;

/// What a value resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    /// The link at this index of the page's links.
    Link(usize),
    /// No link (it does not parse, or its scheme is not crawled).
    Nothing,
}

/// The values seen on the page so far, against the base they were resolved with; cleared
/// when the base changes.
#[derive(Default)]
pub(super) struct Memo {
    seen: ByKeyHash<Seen>,
}

/// A value as the memo knows it: its hash, taken once per link.
#[derive(Debug, Clone, Copy)]
pub(super) struct Key(u128);

impl Key {
    pub(super) fn of(value: &str) -> Key {
        Key(key_hash(value))
    }
}

impl Memo {
    /// What the value `key` made before, if it was seen.
    pub(super) fn get(&self, key: Key) -> Option<Seen> {
        self.seen.get(&key.0).copied()
    }

    /// The value `key` made `seen`.
    pub(super) fn remember(&mut self, key: Key, seen: Seen) {
        if self.seen.len() < MAX_ENTRIES {
            self.seen.insert(key.0, seen);
        }
    }

    /// The base changed: what was resolved against the old one no longer holds.
    pub(super) fn clear(&mut self) {
        self.seen.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_remembered_until_cleared() {
        let mut memo = Memo::default();
        let key = Key::of;
        assert_eq!(memo.get(key("x/y")), None);
        memo.remember(key("x/y"), Seen::Link(3));
        memo.remember(key("javascript:x"), Seen::Nothing);
        assert_eq!(memo.get(key("x/y")), Some(Seen::Link(3)));
        assert_eq!(memo.get(key("javascript:x")), Some(Seen::Nothing));
        assert_eq!(memo.get(key("x/z")), None);
        memo.clear();
        assert_eq!(memo.get(key("x/y")), None);
    }

    #[test]
    fn it_stays_bounded() {
        let mut memo = Memo::default();
        for i in 0..MAX_ENTRIES + 10 {
            memo.remember(Key::of(&i.to_string()), Seen::Nothing);
        }
        assert_eq!(memo.seen.len(), MAX_ENTRIES);
        assert_eq!(memo.get(Key::of(&(MAX_ENTRIES + 5).to_string())), None);
    }
}
