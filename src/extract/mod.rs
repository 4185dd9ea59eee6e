//! Streaming link extraction.
//!
//! The worker feeds a page's body to an [`Extractor`] chunk by chunk as it arrives and gets
//! back the page's outlinks, resolved to absolute URLs, plus the few page facts the crawler
//! acts on (title, robots meta). There is never a whole document in memory nor a DOM tree:
//! lol_html tokenizes the stream and calls our element handlers; its rewritten output is
//! thrown away. The text of each `<a>` is read from the bytes after its start tag by a
//! small scanner (`extract/anchor.rs`) rather than through lol_html's text handlers, which
//! cost more.
//!
//! This runs once per fetched page, millions of times per crawl, so a link costs one
//! attribute string from lol_html, one parse into a [`Url`], one push, and nothing else: no
//! logging, no cloned base, no lower-cased copies.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lol_html::send::{HtmlRewriter, Settings};
use lol_html::{AsciiCompatibleEncoding, MemorySettings};
use url::Url;

use crate::link::LinkKind;

use handlers::handlers;
use id_scan::IdScan;
use ids::Ids;
use position::Lines;
pub use position::Position;
use text::{
    decode_text, finish_collapsed, finish_title, is_plain, TitleText, MAX_ANCHOR_CHARS,
    MAX_ANCHOR_COLLAPSED_BYTES,
};

// Reads anchor text from the raw bytes with its own small tokenizer: cheaper than lol_html's
// text handlers, and unlike anything else here.
mod anchor;
// Character references: HTML's tables and rules, needed by attribute values and text alike.
mod entities;
// The `id` attributes read from the page's bytes, cheaper than asking lol_html.
mod id_scan;
// A page's fragment targets (ids and `<a name>`s), collected within a per-page cap.
mod ids;
// Byte offsets in the page turned into lines and columns as it streams.
mod position;
// What lol_html calls per element: the only place that knows tag and attribute names.
mod handlers;
// `<noscript>` content, read as markup: its bounds and its extractor.
mod noscript;
// A page's links resolved against its base, once per distinct value.
mod resolve;
// The declarative refresh syntax, shared by `<meta http-equiv=refresh>` and the header.
pub(crate) mod refresh;
// Decoding, collapsing and cutting text: shared by titles and anchors, free of parser types.
mod text;

/// Hard cap on lol_html's buffers, so a hostile page (say an attribute value that never
/// ends) costs an error instead of the process.
const MAX_PARSER_MEMORY: usize = 16 << 20;

/// Why extraction failed. The page's links are lost; the fetch itself may still be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// lol_html refused to go on, most often because the page exceeded its memory limit.
    #[error("HTML parser gave up: {0}")]
    Parse(String),
}

/// One outlink found in a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Absolute, resolved against the effective base. The fragment is kept: the caller
    /// strips it.
    pub url: Url,
    /// The element that made the link.
    pub kind: LinkKind,
    /// The element's own `rel` has the token `nofollow`.
    pub nofollow: bool,
    /// For `<a>`: its text, entities decoded, whitespace collapsed, at most 256 chars.
    pub anchor: Option<String>,
    /// Where the element that made it starts in the page (for a link inside `<noscript>`,
    /// where the `<noscript>` starts).
    pub at: Option<Position>,
}

/// What one page yields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// Outlinks in document order.
    pub links: Vec<Link>,
    /// The first HTML `<title>`, entities decoded, whitespace runs collapsed to one space,
    /// trimmed, at most 1024 chars. `None` when absent or blank.
    pub title: Option<String>,
    /// `<meta name="robots|trawl">` says `nofollow` or `none`.
    pub meta_nofollow: bool,
    /// `<meta name="robots|trawl">` says `noindex` or `none`.
    pub meta_noindex: bool,
    /// The page's fragment targets, newline-separated, when asked for ([`Extractor::with_ids`])
    /// and within the cap.
    pub ids: Option<String>,
}

/// Link extraction over one page body fed in arbitrary chunks. `Send`, so it can live in a
/// task that awaits between chunks.
pub struct Extractor {
    /// `None` once lol_html has failed: it panics if used again after an error.
    rewriter: Option<HtmlRewriter<'static, Sink>>,
    state: Shared,
    /// Bytes fed before the current chunk: where it starts in the page.
    fed: usize,
    /// The anchor whose text runs past the bytes fed so far: its link and its scanner.
    open_anchor: Option<(usize, anchor::Scanner)>,
    /// Its raw text so far (one buffer, reused by every anchor of the page).
    anchor_text: Vec<u8>,
    /// The page's newlines, to place each link.
    lines: Lines,
    /// Reads the `id`s, when they are collected (`<a name>`s come from the `a` handler).
    id_scan: Option<IdScan>,
}

impl Extractor {
    /// Starts a page. `base` is the page's final URL. `encoding` is the charset label from
    /// Content-Type if known (e.g. "utf-8", "windows-1252", "shift_jis"); `None` or an unknown /
    /// non-ASCII-compatible label means UTF-8.
    ///
    /// With no label at all, a `<meta charset>` early in the page may switch the encoding, as
    /// in a browser; a label from the header always wins over the page.
    pub fn new(base: Url, encoding: Option<&str>) -> Extractor {
        Self::with_memory_limit(base, encoding, false, MAX_PARSER_MEMORY)
    }

    /// [`Extractor::new`], also collecting the page's fragment targets (every `id`, every
    /// `<a name>`) into [`Extracted::ids`], for `check-fragments`.
    pub fn with_ids(base: Url, encoding: Option<&str>) -> Extractor {
        Self::with_memory_limit(base, encoding, true, MAX_PARSER_MEMORY)
    }

    fn with_memory_limit(base: Url, encoding: Option<&str>, ids: bool, limit: usize) -> Extractor {
        let mut state = State::new(base);
        state.ids = ids.then(Ids::default);
        let declared = encoding.and_then(ascii_compatible);
        state.text_encoding = declared.map_or(encoding_rs::UTF_8, |e| e.into());
        state.follow_meta_charset = encoding.is_none();
        // Browsers encode a link's query in the document's encoding (the path is always
        // UTF-8), so a legacy page's `?q=café` reaches the server as the page meant it.
        state.query_encoding = encoding
            .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
            .filter(|e| *e != encoding_rs::UTF_8 && e.is_ascii_compatible());
        let state: Shared = Arc::new(Mutex::new(state));
        let settings = Settings {
            element_content_handlers: handlers(&state),
            encoding: declared.unwrap_or_else(AsciiCompatibleEncoding::utf_8),
            memory_settings: MemorySettings {
                max_allowed_memory_usage: limit,
                ..MemorySettings::new()
            },
            // Strict mode aborts on markup whose parse depends on the tree (e.g. `<select><xmp>`);
            // for link discovery a best-effort guess beats losing the whole page.
            strict: false,
            adjust_charset_on_meta_tag: encoding.is_none(),
            ..Settings::new_send()
        };
        let rewriter = HtmlRewriter::new(settings, discard as Sink);
        Extractor {
            rewriter: Some(rewriter),
            state,
            fed: 0,
            open_anchor: None,
            anchor_text: Vec::new(),
            lines: Lines::default(),
            id_scan: ids.then(IdScan::default),
        }
    }

    /// Feeds the next chunk of body bytes. Any split is fine: a chunk may end inside a tag, an
    /// attribute value or a multi-byte character.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), ExtractError> {
        let rewriter = self.rewriter.as_mut().ok_or_else(already_failed)?;
        self.lines.feed(self.fed, chunk);
        if let Err(e) = rewriter.write(chunk) {
            self.rewriter = None;
            return Err(ExtractError::Parse(e.to_string()));
        }
        self.place_links();
        self.read_anchors(chunk);
        self.read_ids(chunk);
        self.fed += chunk.len();
        Ok(())
    }

    fn read_ids(&mut self, chunk: &[u8]) {
        let Some(scan) = &mut self.id_scan else {
            return;
        };
        let mut state = lock(&self.state);
        let encoding = state.text_encoding;
        scan.feed(chunk, &mut |raw| state.push_id(&decode_text(raw, encoding)));
    }

    /// Gives the links the handlers found their line and column.
    fn place_links(&mut self) {
        let mut state = lock(&self.state);
        let State { links, spots, .. } = &mut *state;
        for &(link, offset) in spots.iter() {
            if let Some(l) = links.get_mut(link) {
                l.at = Some(self.lines.position(offset));
            }
        }
        spots.clear();
    }

    /// Reads the text of the anchors that `chunk` continues or starts, found by the
    /// handlers while lol_html read it.
    fn read_anchors(&mut self, chunk: &[u8]) {
        let mut state = lock(&self.state);
        // A start tag is reported once its `>` is read, so its text starts in this chunk,
        // or right at its start when the tag ended the chunk before.
        let text_from = |text_at: usize| text_at.saturating_sub(self.fed).min(chunk.len());
        if let Some((link, scanner)) = &mut self.open_anchor {
            // Up to the next anchor's text at most, whatever the scanner makes of the markup
            // before it.
            let until = state
                .anchor_starts
                .first()
                .map_or(chunk.len(), |&(_, at)| text_from(at));
            if scanner.feed(&chunk[..until], &mut self.anchor_text) == anchor::Fed::Ended {
                state.set_anchor(*link, &mut self.anchor_text);
                self.open_anchor = None;
            }
        }
        for i in 0..state.anchor_starts.len() {
            let (link, text_at) = state.anchor_starts[i];
            // A new anchor ends the one before, whatever the scanner made of the markup.
            if let Some((open, _)) = self.open_anchor.take() {
                state.set_anchor(open, &mut self.anchor_text);
            }
            let mut scanner = anchor::Scanner::new();
            match scanner.feed(&chunk[text_from(text_at)..], &mut self.anchor_text) {
                anchor::Fed::Ended => state.set_anchor(link, &mut self.anchor_text),
                anchor::Fed::More => self.open_anchor = Some((link, scanner)),
            }
        }
        state.anchor_starts.clear();
    }

    /// No more bytes: finishes the parse and returns what was found.
    pub fn end(mut self) -> Result<Extracted, ExtractError> {
        let rewriter = self.rewriter.take().ok_or_else(already_failed)?;
        rewriter
            .end()
            .map_err(|e| ExtractError::Parse(e.to_string()))?;
        // A `<noscript>` the page never closed has its content read all the same.
        handlers::read_noscript(&self.state);
        self.place_links();
        // Tags lol_html held back until the end start their anchors here, with no text.
        self.read_anchors(&[]);
        let mut state = lock(&self.state);
        // An anchor still open at the end of the page keeps the text it has.
        if let Some((link, _)) = self.open_anchor.take() {
            state.set_anchor(link, &mut self.anchor_text);
        }
        Ok(Extracted {
            links: std::mem::take(&mut state.links),
            title: state.title.as_ref().and_then(|t| finish_title(&t.text)),
            meta_nofollow: state.meta_nofollow,
            meta_noindex: state.meta_noindex,
            ids: state.ids.take().and_then(Ids::finish),
        })
    }
}

/// Convenience for tests and small inputs: one call over a whole document.
pub fn extract(base: &Url, encoding: Option<&str>, html: &[u8]) -> Result<Extracted, ExtractError> {
    let mut extractor = Extractor::new(base.clone(), encoding);
    extractor.write(html)?;
    extractor.end()
}

type Sink = fn(&[u8]);

fn discard(_: &[u8]) {}

fn already_failed() -> ExtractError {
    ExtractError::Parse("used again after an earlier error".into())
}

fn ascii_compatible(label: &str) -> Option<AsciiCompatibleEncoding> {
    AsciiCompatibleEncoding::new(encoding_rs::Encoding::for_label_no_replacement(
        label.as_bytes(),
    )?)
}

/// Shared between the handlers (which lol_html owns) and the [`Extractor`]. Handlers run
/// synchronously inside `write`, one at a time, so the lock is never contended; it is there
/// only because the `Send` rewriter needs `Send` handlers.
type Shared = Arc<Mutex<State>>;

#[inline]
fn lock(state: &Shared) -> MutexGuard<'_, State> {
    // Handlers don't panic while holding it; if one did, its partial state is still usable.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

struct State {
    /// The page URL until the first `<base href>` replaces it.
    base: Url,
    base_seen: bool,
    links: Vec<Link>,
    /// Set by the first HTML `<title>`, later ones are ignored.
    title: Option<TitleText>,
    title_open: bool,
    /// `<svg>` elements open around the current point.
    svg_depth: u32,
    meta_nofollow: bool,
    meta_noindex: bool,
    /// `<a href>` start tags reported by lol_html and not read yet: the index of their
    /// link and the position in the page right after the tag.
    anchor_starts: Vec<(usize, usize)>,
    /// Links found since the last chunk and not yet placed: their index and the byte
    /// offset of their element.
    spots: Vec<(usize, usize)>,
    /// The fragment targets so far, when collected.
    ids: Option<Ids>,
    /// What the page's bytes are in (for anchor text, which is read from them).
    text_encoding: &'static encoding_rs::Encoding,
    /// No encoding was given, so a `<meta charset>` sets it, as it does lol_html's.
    follow_meta_charset: bool,
    /// The document's encoding when it is not UTF-8, for query strings.
    query_encoding: Option<&'static encoding_rs::Encoding>,
    /// Reused by [`State::resolve`] for each link.
    scratch: String,
    /// What [`State::resolve`] gave for each value so far, against `base`.
    memo: resolve::Memo,
    noscript: noscript::Noscript,
}

impl State {
    fn new(base: Url) -> State {
        State {
            base,
            base_seen: false,
            // Pages have dozens of links: start past the first few doublings.
            links: Vec::with_capacity(32),
            title: None,
            title_open: false,
            svg_depth: 0,
            meta_nofollow: false,
            meta_noindex: false,
            anchor_starts: Vec::new(),
            spots: Vec::new(),
            ids: None,
            text_encoding: encoding_rs::UTF_8,
            follow_meta_charset: false,
            query_encoding: None,
            scratch: String::new(),
            memo: resolve::Memo::default(),
            noscript: noscript::Noscript::new(),
        }
    }

    /// The anchor of link `i` ended: `raw`, its text as in the page, becomes the link's
    /// anchor text. Leaves `raw` empty for the next anchor.
    fn set_anchor(&mut self, i: usize, raw: &mut Vec<u8>) {
        if raw.is_empty() {
            return;
        }
        let decoded = decode_text(raw, self.text_encoding);
        let anchor = if is_plain(&decoded) {
            // Most anchors are a few words already as stored: copied once, as they are.
            Some(decoded.into_owned())
        } else {
            let mut text = TitleText::default();
            text.push(&decoded, MAX_ANCHOR_COLLAPSED_BYTES);
            finish_collapsed(text.text, MAX_ANCHOR_CHARS)
        };
        if let Some(link) = self.links.get_mut(i) {
            link.anchor = anchor;
        }
        raw.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "https://example.com/dir/page.html";

    fn page() -> Url {
        Url::parse(PAGE).unwrap()
    }

    pub(super) fn ex(html: &str) -> Extracted {
        unplaced(extract(&page(), None, html.as_bytes()).unwrap())
    }

    pub(super) fn urls(html: &str) -> Vec<String> {
        ex(html)
            .links
            .into_iter()
            .map(|l| l.url.to_string())
            .collect()
    }

    pub(super) fn anchored(link: Link, text: &str) -> Link {
        Link {
            anchor: Some(text.into()),
            ..link
        }
    }

    pub(super) fn link(url: &str, kind: LinkKind, nofollow: bool) -> Link {
        Link {
            url: Url::parse(url).unwrap(),
            kind,
            nofollow,
            anchor: None,
            at: None,
        }
    }

    /// Links compared without their places (tests of what, not where).
    pub(super) fn unplaced(mut x: Extracted) -> Extracted {
        x.links.iter_mut().for_each(|l| l.at = None);
        x
    }

    #[test]
    fn anchor_text() {
        let base = Url::parse("http://a.example/").unwrap();
        let html = b"<a href=/1>  Caf&eacute; <b>menu</b>\n</a><a href=/2><img alt=x></a>\
                     <a href='javascript:x'>js</a><a href=/3>three</a>";
        let x = extract(&base, None, html).unwrap();
        let anchors: Vec<_> = x.links.iter().map(|l| l.anchor.as_deref()).collect();
        assert_eq!(anchors, vec![Some("Café menu"), None, Some("three")]);
        // Split at every byte: the same anchors.
        for cut in 1..html.len() {
            let mut e = Extractor::new(base.clone(), None);
            e.write(&html[..cut]).unwrap();
            e.write(&html[cut..]).unwrap();
            let y = e.end().unwrap();
            assert_eq!(y.links, x.links, "split at {cut}");
        }
    }

    #[test]
    fn anchor_text_ends_with_the_anchor() {
        let base = Url::parse("http://a.example/").unwrap();
        // Text between anchors, or in an anchor whose link was dropped, goes to no link;
        // an anchor left open at the end of the page keeps its text (joined as in
        // `textContent`).
        let html = b"<p><a href=/1>one</a> between <a href='javascript:x'>js</a> after\
                     <a href=/2>two &amp; more<p>still two";
        let x = extract(&base, None, html).unwrap();
        let anchors: Vec<_> = x.links.iter().map(|l| l.anchor.as_deref()).collect();
        assert_eq!(anchors, vec![Some("one"), Some("two & morestill two")]);
    }

    #[test]
    fn anchor_text_stops_at_the_next_anchor_lol_html_reports() {
        let base = Url::parse("http://a.example/").unwrap();
        let html: &[u8] = b"<a href=/1>one<!-->two<p><a href=/2>three</a>";
        let x = extract(&base, None, html).unwrap();
        let anchors: Vec<_> = x.links.iter().map(|l| l.anchor.as_deref()).collect();
        assert_eq!(anchors, vec![Some("onetwo"), Some("three")]);
        for cut in 1..html.len() {
            let mut e = Extractor::new(base.clone(), None);
            e.write(&html[..cut]).unwrap();
            e.write(&html[cut..]).unwrap();
            assert_eq!(e.end().unwrap().links, x.links, "split at {cut}");
        }
    }

    #[test]
    fn anchor_text_in_the_page_encoding() {
        let base = Url::parse("http://a.example/").unwrap();
        let x = extract(&base, Some("windows-1252"), b"<a href=/1>Caf\xe9</a>").unwrap();
        assert_eq!(x.links[0].anchor.as_deref(), Some("Café"));
        // No label: the page's <meta> decides, and the text is read byte by byte.
        let html = b"<meta charset=windows-1252><a href=/1>Caf\xe9 <i>cr\xe8me</i></a>";
        let mut e = Extractor::new(base.clone(), None);
        for byte in html.chunks(1) {
            e.write(byte).unwrap();
        }
        let links = e.end().unwrap().links;
        assert_eq!(links[0].anchor.as_deref(), Some("Café crème"));
        // UTF-8 cut inside a character by the cap keeps the whole characters.
        assert_eq!(
            decode_text("né".as_bytes().split_last().unwrap().1, encoding_rs::UTF_8),
            "n"
        );
    }

    #[test]
    fn each_link_knows_where_its_element_starts() {
        let base = Url::parse("http://a.example/").unwrap();
        let html = "<html>\n<body>\n  <p>x <a\nhref=/1>one</a></p>\n\
                    <noscript><a href=/2>two</a></noscript>  <a href=/3>é</a>\n\
                    <meta http-equiv=refresh content='0; url=/4'>";
        let x = extract(&base, None, html.as_bytes()).unwrap();
        let at: Vec<_> = x
            .links
            .iter()
            .map(|l| l.at.map(|p| (p.line, p.col)))
            .collect();
        assert_eq!(
            at,
            vec![Some((3, 8)), Some((5, 1)), Some((5, 42)), Some((6, 1))],
            "the noscript's links are placed at the <noscript>"
        );
        for cut in 1..html.len() {
            let mut e = Extractor::new(base.clone(), None);
            e.write(&html.as_bytes()[..cut]).unwrap();
            e.write(&html.as_bytes()[cut..]).unwrap();
            assert_eq!(e.end().unwrap().links, x.links, "split at {cut}");
        }
    }

    #[test]
    fn extractor_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Extractor>();
    }

    #[test]
    fn a_repeated_value_resolves_as_it_did_and_the_base_starts_afresh() {
        let got = urls(concat!(
            "<a href=x>1</a><a href=' x '>2</a><a href='java\tscript:go()'>j</a>",
            "<a href='java\tscript:go()'>j</a><base href=\"https://other.example/d/\">",
            "<a href=x>3</a><a href=x#f>4</a><a href=x>5</a>",
        ));
        assert_eq!(
            got,
            [
                "https://example.com/dir/x",
                "https://example.com/dir/x",
                "https://other.example/d/x",
                "https://other.example/d/x#f",
                "https://other.example/d/x",
            ]
        );
    }

    #[test]
    fn attributes_are_read_in_any_case_and_the_first_of_a_repeat_wins() {
        let x = ex(concat!(
            "<a class=c HREF=/1 href=/2 title=t REL='x NoFollow' rel=y>1</a>",
            "<a xlink:href=/not-svg>2</a><svg><a xlink:href=/svg1>3</a>",
            "<a xlink:href=/svg2 href=/svg2-wins>4</a></svg>",
            "<link rel=nofollow rel=canonical href=/nf>",
            "<meta HTTP-EQUIV=' Refresh ' content='0; url=/r' content='0; url=/no'>",
        ));
        let got: Vec<(String, bool)> = x
            .links
            .iter()
            .map(|l| (l.url.path().to_owned(), l.nofollow))
            .collect();
        let want = [
            ("/1", true),
            ("/svg1", false),
            ("/svg2-wins", false),
            ("/nf", true),
            ("/r", false),
        ];
        assert_eq!(got, want.map(|(p, n)| (p.to_owned(), n)));
        assert_eq!(x.links[3].kind, LinkKind::Link, "the first rel wins");
    }

    /// Every kind of split: inside tag names, attribute names, attribute values, entities
    /// and multi-byte characters (in text and in a URL).
    const CHUNKED_DOC: &str = concat!(
        "<!DOCTYPE html><html><head><title>Grüße – 日本 &amp; more</title>",
        "<base href=\"/base/\"><link rel=\"canonical\" href=\"https://example.com/canon\">",
        "<meta name=\"robots\" content=\"noindex\"></head><body>",
        "<a href=\"/straße\" rel=\"nofollow\">x</a><a href=\"rel?x=1&amp;y=2\">y</a>",
        "<!-- <a href=\"/comment\"> --><iframe src=\"//cdn.example.net/f\"></iframe>",
        "<area href=../up><a href='#top'>t</a></body></html>",
    );

    fn chunked(chunks: &[&[u8]]) -> Extracted {
        let mut x = Extractor::new(page(), Some("utf-8"));
        for chunk in chunks {
            x.write(chunk).unwrap();
        }
        x.end().unwrap()
    }

    #[test]
    fn chunk_boundaries_do_not_matter() {
        let doc = CHUNKED_DOC.as_bytes();
        let whole = chunked(&[doc]);
        assert_eq!(whole.title.as_deref(), Some("Grüße – 日本 & more"));
        assert!(whole.meta_noindex);
        assert_eq!(
            unplaced(whole.clone()).links,
            vec![
                link("https://example.com/canon", LinkKind::Canonical, false),
                anchored(
                    link("https://example.com/stra%C3%9Fe", LinkKind::A, true),
                    "x"
                ),
                anchored(
                    link("https://example.com/base/rel?x=1&y=2", LinkKind::A, false),
                    "y"
                ),
                link("https://cdn.example.net/f", LinkKind::Iframe, false),
                link("https://example.com/up", LinkKind::Area, false),
                anchored(
                    link("https://example.com/base/#top", LinkKind::A, false),
                    "t"
                ),
            ]
        );

        for at in 0..=doc.len() {
            let (head, tail) = doc.split_at(at);
            assert_eq!(chunked(&[head, tail]), whole, "split at byte {at}");
        }
        let bytes: Vec<&[u8]> = doc.chunks(1).collect();
        assert_eq!(chunked(&bytes), whole, "one byte per chunk");
    }

    #[test]
    fn windows_1252_from_header() {
        let e = extract(&page(), Some("windows-1252"), b"<title>caf\xe9</title>").unwrap();
        assert_eq!(e.title.as_deref(), Some("café"));
    }

    #[test]
    fn meta_charset_applies_only_without_header_label() {
        let html = b"<meta charset=\"windows-1252\"><title>caf\xe9</title>";
        let e = extract(&page(), None, html).unwrap();
        assert_eq!(e.title.as_deref(), Some("café"));
        let e = extract(&page(), Some("utf-8"), html).unwrap();
        assert_eq!(e.title.as_deref(), Some("caf\u{FFFD}"));
    }

    #[test]
    fn unknown_or_unsupported_label_means_utf8() {
        for label in ["no-such-charset", "utf-16le", "replacement"] {
            let e = extract(&page(), Some(label), "<title>Grüße</title>".as_bytes()).unwrap();
            assert_eq!(e.title.as_deref(), Some("Grüße"), "label {label}");
        }
    }

    #[test]
    fn memory_limit_is_an_error() {
        // A smaller limit than production keeps the debug-build test quick; the code path is
        // the same.
        const LIMIT: usize = 1 << 20;
        let mut x = Extractor::with_memory_limit(page(), None, false, LIMIT);
        x.write(b"<a href=\"").unwrap();
        let chunk = vec![b'x'; 64 << 10];
        let mut failed = false;
        for _ in 0..(4 * LIMIT / chunk.len()) {
            if x.write(&chunk).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "a 4x-limit attribute value was accepted");
        assert!(x.write(b"\">").is_err());
        assert!(x.end().is_err());
    }
}
