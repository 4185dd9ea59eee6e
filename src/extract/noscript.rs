//! `<noscript>` content, read as markup (see `handlers::noscript_handlers`): what is
//! collected of it, within bounds, and the extractor that reads it.

use url::Url;

use super::{lock, Extracted, Extractor};

/// The most `<noscript>` content read from one page, all elements together: a hostile page
/// could otherwise have every byte parsed twice.
const MAX_NOSCRIPT_BYTES: usize = 1 << 20;

/// The most `<noscript>` elements read from one page: each costs a parser of its own.
const MAX_NOSCRIPTS: u32 = 1000;

/// The page's `<noscript>` reading: the open element's content and what is left to spend.
pub(super) struct Noscript {
    /// `false` in a noscript's own extractor, so that reading nests one level only.
    enabled: bool,
    /// The content of the element open now.
    open: Option<String>,
    /// Where the open element starts in the page: the place of every link inside it.
    pub(super) opened_at: usize,
    bytes_left: usize,
    elements_left: u32,
}

impl Noscript {
    pub(super) fn new() -> Noscript {
        Noscript {
            enabled: true,
            open: None,
            opened_at: 0,
            bytes_left: MAX_NOSCRIPT_BYTES,
            elements_left: MAX_NOSCRIPTS,
        }
    }

    /// Whether a `<noscript>` starting now is read.
    pub(super) fn reads(&self) -> bool {
        self.enabled && self.bytes_left > 0 && self.elements_left > 0
    }

    pub(super) fn open(&mut self, at: usize) {
        self.elements_left -= 1;
        self.opened_at = at;
        self.open = Some(String::new());
    }

    /// More content of the open element, cut at the page's budget.
    pub(super) fn push(&mut self, text: &str) {
        let Some(buf) = &mut self.open else {
            return;
        };
        let mut end = text.len().min(self.bytes_left - buf.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        buf.push_str(&text[..end]);
    }

    /// The element ended (or the page did): its content, if it has any markup to read.
    pub(super) fn close(&mut self) -> Option<String> {
        let text = self.open.take()?;
        self.bytes_left -= text.len();
        text.contains('<').then_some(text)
    }
}

impl Extractor {
    /// Reads a `<noscript>`'s content, decoded to UTF-8 by the page's parser, against the
    /// page's base as it stands there. `None` if the parser gave up on it.
    pub(super) fn noscript(
        base: Url,
        query_encoding: Option<&'static encoding_rs::Encoding>,
        content: &str,
    ) -> Option<Extracted> {
        let mut inner = Extractor::new(base, Some("utf-8"));
        {
            let mut s = lock(&inner.state);
            s.query_encoding = query_encoding;
            // A `<base>` inside is too late to count, as it is in the page.
            s.base_seen = true;
            s.noscript.enabled = false;
        }
        inner.write(content.as_bytes()).ok()?;
        inner.end().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::{anchored, ex, link, urls};
    use crate::link::LinkKind;

    #[test]
    fn noscript_links_are_read_in_document_order() {
        let e = ex(
            r#"<head><noscript><meta http-equiv="refresh" content="0; url=/nojs">
            <link rel="stylesheet" href="/nojs.css"></noscript></head>
            <body><a href="/before">b</a>
            <noscript><a href="/inside?a=1&amp;b=2">In <i>side</i></a>
            <img src="/pixel"><iframe src="/frame"></iframe></noscript>
            <a href="/after">a</a></body>"#,
        );
        assert_eq!(
            e.links,
            vec![
                link("https://example.com/nojs", LinkKind::Refresh, false),
                link("https://example.com/nojs.css", LinkKind::Link, false),
                anchored(link("https://example.com/before", LinkKind::A, false), "b"),
                anchored(
                    link("https://example.com/inside?a=1&b=2", LinkKind::A, false),
                    "In side"
                ),
                link("https://example.com/frame", LinkKind::Iframe, false),
                anchored(link("https://example.com/after", LinkKind::A, false), "a"),
            ]
        );
    }

    #[test]
    fn the_page_base_counts_and_one_inside_does_not() {
        let got = urls(
            r#"<base href="/docs/"><noscript><base href="/elsewhere/">
            <a href="x">x</a></noscript><a href="y">y</a>"#,
        );
        assert_eq!(
            got,
            ["https://example.com/docs/x", "https://example.com/docs/y"]
        );
    }

    #[test]
    fn its_robots_meta_counts() {
        let e = ex(r#"<noscript><meta name="robots" content="nofollow"></noscript>"#);
        assert!(e.meta_nofollow);
    }

    #[test]
    fn an_unclosed_noscript_is_read_at_the_end() {
        assert_eq!(
            urls(r#"<a href="/1">1</a><noscript><a href="/2">2</a>"#),
            ["https://example.com/1", "https://example.com/2"]
        );
    }

    #[test]
    fn nested_noscript_content_is_read_one_level_deep() {
        // The outer element's raw text ends at the first `</noscript>`, so the inner start
        // tag never closes inside it; its content is not read a second time.
        let got = urls(r#"<noscript><a href="/1"><noscript><a href="/2"></noscript>"#);
        assert_eq!(got, ["https://example.com/1"]);
    }

    #[test]
    fn reading_stops_at_the_page_budget() {
        let one = r#"<noscript><a href="/x">x</a></noscript>"#;
        let page = one.repeat(MAX_NOSCRIPTS as usize + 5);
        assert_eq!(urls(&page).len(), MAX_NOSCRIPTS as usize);

        let mut n = Noscript::new();
        n.open(0);
        n.push(&"é".repeat(MAX_NOSCRIPT_BYTES));
        let read = n.close().unwrap_or_default();
        assert!(read.is_empty(), "no markup in it");
        assert!(!n.reads(), "the budget is spent");
    }
}
