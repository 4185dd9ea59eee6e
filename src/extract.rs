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

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use lol_html::html_content::{EndTag, TextChunk};
use lol_html::send::{Element, ElementContentHandlers, HtmlRewriter, Settings};
use lol_html::{AsciiCompatibleEncoding, HandlerResult, MemorySettings, Selector};
use url::Url;

use crate::link::LinkKind;

mod anchor;

/// Hard cap on lol_html's buffers, so a hostile page (say an attribute value that never
/// ends) costs an error instead of the process.
const MAX_PARSER_MEMORY: usize = 16 << 20;

/// Longest title kept, in chars.
const MAX_TITLE_CHARS: usize = 1024;

/// Raw title text buffered before decoding. Well above what [`MAX_TITLE_CHARS`] needs even
/// when every char is spelled as an entity, and small enough not to matter per worker.
const MAX_TITLE_RAW_BYTES: usize = 16 << 10;
/// Longest anchor text kept, in characters, and bytes of it collapsed before the cut.
const MAX_ANCHOR_CHARS: usize = 256;
const MAX_ANCHOR_COLLAPSED_BYTES: usize = 2 << 10;

/// Schemes that are never crawlable, dropped before spending a URL parse on them.
const SKIPPED_SCHEMES: [&str; 4] = ["javascript", "mailto", "tel", "data"];

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
}

impl Extractor {
    /// Starts a page. `base` is the page's final URL. `encoding` is the charset label from
    /// Content-Type if known (e.g. "utf-8", "windows-1252", "shift_jis"); `None` or an unknown /
    /// non-ASCII-compatible label means UTF-8.
    ///
    /// With no label at all, a `<meta charset>` early in the page may switch the encoding, as
    /// in a browser; a label from the header always wins over the page.
    pub fn new(base: Url, encoding: Option<&str>) -> Extractor {
        Self::with_memory_limit(base, encoding, MAX_PARSER_MEMORY)
    }

    fn with_memory_limit(base: Url, encoding: Option<&str>, limit: usize) -> Extractor {
        let mut state = State::new(base);
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
        }
    }

    /// Feeds the next chunk of body bytes. Any split is fine: a chunk may end inside a tag, an
    /// attribute value or a multi-byte character.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), ExtractError> {
        let rewriter = self.rewriter.as_mut().ok_or_else(already_failed)?;
        if let Err(e) = rewriter.write(chunk) {
            self.rewriter = None;
            return Err(ExtractError::Parse(e.to_string()));
        }
        self.read_anchors(chunk);
        self.fed += chunk.len();
        Ok(())
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
    /// What the page's bytes are in (for anchor text, which is read from them).
    text_encoding: &'static encoding_rs::Encoding,
    /// No encoding was given, so a `<meta charset>` sets it, as it does lol_html's.
    follow_meta_charset: bool,
    /// The document's encoding when it is not UTF-8, for query strings.
    query_encoding: Option<&'static encoding_rs::Encoding>,
    /// Reused by [`State::resolve`] for each link.
    scratch: String,
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
            text_encoding: encoding_rs::UTF_8,
            follow_meta_charset: false,
            query_encoding: None,
            scratch: String::new(),
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

    /// `value` resolved against the base, its query encoded in the document's encoding.
    fn resolve(&mut self, value: &str) -> Option<Url> {
        // `url` sizes the new URL's string by the length of its input, so a relative link
        // (`/p/12`) is reallocated twice as the base and then the path are copied in. Spaces
        // appended to the input make room for the base up front; the parser strips trailing
        // spaces (as the URL standard says), so the result is the same.
        let padded = &mut self.scratch;
        padded.clear();
        padded.push_str(value);
        const SPACES: &str = match std::str::from_utf8(&[b' '; 256]) {
            Ok(s) => s,
            Err(_) => unreachable!(),
        };
        padded.push_str(&SPACES[..SPACES.len().min(self.base.as_str().len() + 8)]);
        let options = Url::options().base_url(Some(&self.base));
        match self.query_encoding {
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

    fn push_link(&mut self, raw: &str, kind: LinkKind, nofollow: bool) {
        let decoded = decode_entities(raw, true);
        let value = trim_ascii_whitespace(&decoded);
        if value.is_empty() || has_skipped_scheme(value) {
            return;
        }
        let Some(url) = self.resolve(value) else {
            return;
        };
        // The URL parser drops tabs and newlines anywhere, so "java\tscript:" only shows its
        // scheme after parsing.
        if SKIPPED_SCHEMES.contains(&url.scheme()) {
            return;
        }
        self.links.push(Link {
            url,
            kind,
            nofollow,
            anchor: None,
        });
    }

    /// Only the first `<base href>` counts, as in browsers, even if its href is unusable.
    ///
    /// Browsers resolve every link in the page against that base, including links that come
    /// before it. A streaming parser can't know the future, so links before the `<base>` are
    /// resolved against the page URL. Pages put `<base>` at the top of `<head>`, so this
    /// differs only on malformed pages.
    fn set_base(&mut self, raw: &str) {
        if std::mem::replace(&mut self.base_seen, true) {
            return;
        }
        let decoded = decode_entities(raw, true);
        if let Some(base) = self.resolve(trim_ascii_whitespace(&decoded)) {
            self.base = base;
        }
    }

    fn read_robots_meta(&mut self, content: &str) {
        let content = decode_entities(content, true);
        let tokens = content.split(|c: char| c == ',' || c.is_ascii_whitespace());
        for token in tokens {
            if token.eq_ignore_ascii_case("none") {
                self.meta_nofollow = true;
                self.meta_noindex = true;
            } else if token.eq_ignore_ascii_case("nofollow") {
                self.meta_nofollow = true;
            } else if token.eq_ignore_ascii_case("noindex") {
                self.meta_noindex = true;
            }
        }
    }
}

struct Selectors {
    a: Selector,
    area: Selector,
    link: Selector,
    iframe: Selector,
    frame: Selector,
    base: Selector,
    meta: Selector,
    svg: Selector,
    title: Selector,
}

/// Parsed once per process, borrowed by every rewriter. Tag names only: the handlers look
/// for the attribute anyway, and an attribute test in the selector is compiled per page
/// and run per element besides.
static SELECTORS: LazyLock<Selectors> = LazyLock::new(|| {
    let parse = |s: &str| s.parse::<Selector>().expect("static selector is valid");
    Selectors {
        a: parse("a"),
        area: parse("area"),
        link: parse("link"),
        iframe: parse("iframe"),
        frame: parse("frame"),
        base: parse("base"),
        meta: parse("meta"),
        svg: parse("svg"),
        title: parse("title"),
    }
});

type Handlers = Vec<(Cow<'static, Selector>, ElementContentHandlers<'static>)>;

fn handlers(state: &Shared) -> Handlers {
    let s = &*SELECTORS;
    vec![
        (
            Cow::Borrowed(&s.a),
            link_handler(state, "href", LinkKind::A),
        ),
        (
            Cow::Borrowed(&s.area),
            link_handler(state, "href", LinkKind::Area),
        ),
        (
            Cow::Borrowed(&s.link),
            link_handler(state, "href", LinkKind::Link),
        ),
        (
            Cow::Borrowed(&s.iframe),
            link_handler(state, "src", LinkKind::Iframe),
        ),
        (
            Cow::Borrowed(&s.frame),
            link_handler(state, "src", LinkKind::Frame),
        ),
        (Cow::Borrowed(&s.base), base_handler(state)),
        (Cow::Borrowed(&s.meta), meta_handler(state)),
        (Cow::Borrowed(&s.svg), svg_handler(state)),
        (Cow::Borrowed(&s.title), title_handlers(state)),
    ]
}

fn link_handler(
    state: &Shared,
    attr: &'static str,
    kind: LinkKind,
) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        let Some(value) = el.get_attribute(attr) else {
            return Ok(());
        };
        let (mut kind, mut nofollow) = (kind, false);
        if matches!(kind, LinkKind::A | LinkKind::Area | LinkKind::Link) {
            if let Some(rel) = el.get_attribute("rel") {
                for token in decode_entities(&rel, true).split_ascii_whitespace() {
                    if token.eq_ignore_ascii_case("nofollow") {
                        nofollow = true;
                    } else if kind == LinkKind::Link && token.eq_ignore_ascii_case("canonical") {
                        kind = LinkKind::Canonical;
                    }
                }
            }
        }
        let mut s = lock(&state);
        let before = s.links.len();
        s.push_link(&value, kind, nofollow);
        if kind == LinkKind::A && s.links.len() > before {
            // Its text is read from the page's bytes after the tag (see `anchor`).
            s.anchor_starts
                .push((before, el.source_location().bytes().end));
        }
        Ok(())
    })
}

fn base_handler(state: &Shared) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        if let Some(href) = el.get_attribute("href") {
            lock(&state).set_base(&href);
        }
        Ok(())
    })
}

fn meta_handler(state: &Shared) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        let ours = el.get_attribute("name").is_some_and(|name| {
            let name = trim_ascii_whitespace(&name);
            name.eq_ignore_ascii_case("robots") || name.eq_ignore_ascii_case("trawl")
        });
        if ours {
            if let Some(content) = el.get_attribute("content") {
                lock(&state).read_robots_meta(&content);
            }
        }
        let mut s = lock(&state);
        if s.follow_meta_charset {
            // The same rule lol_html follows to switch its own decoding: the first `<meta>`
            // that names an ASCII-compatible encoding.
            let label = el.get_attribute("charset").or_else(|| {
                let equiv = el.get_attribute("http-equiv")?;
                if !equiv.trim().eq_ignore_ascii_case("content-type") {
                    return None;
                }
                let content = el.get_attribute("content")?;
                crate::page::charset_of(&content).map(str::to_owned)
            });
            if let Some(encoding) = label.as_deref().and_then(ascii_compatible) {
                s.text_encoding = encoding.into();
                s.follow_meta_charset = false;
            }
        }
        Ok(())
    })
}

/// Text that decoding, collapsing and cutting would leave as it is: no character
/// reference, single spaces between words, nothing to cut.
fn is_plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= MAX_ANCHOR_CHARS
        && *first != b' '
        && *last != b' '
        && !bytes.windows(2).any(|w| w == b"  ")
        && !bytes
            .iter()
            .any(|&b| b == b'&' || (b.is_ascii_whitespace() && b != b' '))
}

/// `raw`, text in `encoding` as the page has it, as a string. A char cut short at the end
/// (anchor text is capped in bytes) is dropped.
fn decode_text<'a>(raw: &'a [u8], encoding: &'static encoding_rs::Encoding) -> Cow<'a, str> {
    if encoding != encoding_rs::UTF_8 {
        return encoding.decode_without_bom_handling(raw).0;
    }
    match std::str::from_utf8(raw) {
        Ok(text) => Cow::Borrowed(text),
        Err(e) if e.error_len().is_none() => {
            Cow::Borrowed(std::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or_default())
        }
        Err(_) => String::from_utf8_lossy(raw),
    }
}

/// An SVG `<title>` is a tooltip, not the page's title. lol_html can't tell: it reports the
/// element in the HTML namespace, as SVG's `<title>` holds HTML content. So open `<svg>`
/// elements are counted, and the `title` handler ignores titles inside one. (A `svg
/// title` descendant selector would do it too, at a cost on every element of every page:
/// 1.5 % of the instructions per page, measured.) An `<svg>` never closed hides the titles
/// after it, as the descendant selector would.
fn svg_handler(state: &Shared) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        let on_end = Arc::clone(&state);
        // Fails for a self-closing `<svg/>`, which has nothing inside.
        if el
            .on_end_tag(Box::new(move |_: &mut EndTag<'_>| {
                let mut s = lock(&on_end);
                s.svg_depth = s.svg_depth.saturating_sub(1);
                Ok(())
            }))
            .is_ok()
        {
            lock(&state).svg_depth += 1;
        }
        Ok(())
    })
}

/// The title's text arrives in pieces that may split an entity, so it is buffered raw and
/// decoded once the element ends. The end tag, rather than the end of the first text node,
/// closes it, so that an empty first title can't adopt a later title's text.
fn title_handlers(state: &Shared) -> ElementContentHandlers<'static> {
    let on_element = Arc::clone(state);
    let on_text = Arc::clone(state);
    ElementContentHandlers::default()
        .element(move |el: &mut Element<'_, '_>| -> HandlerResult {
            {
                let mut s = lock(&on_element);
                if s.svg_depth > 0 || s.title.is_some() {
                    return Ok(());
                }
                s.title = Some(TitleText::default());
                s.title_open = true;
            }
            let on_end = Arc::clone(&on_element);
            // Fails only for elements that can't have content, which <title> always can; a
            // failure would just leave the title open until the end of the page.
            let _ = el.on_end_tag(Box::new(move |_: &mut EndTag<'_>| {
                lock(&on_end).title_open = false;
                Ok(())
            }));
            Ok(())
        })
        .text(move |chunk: &mut TextChunk<'_>| {
            let mut s = lock(&on_text);
            if s.title_open {
                if let Some(title) = s.title.as_mut() {
                    title.push(chunk.as_str(), MAX_TITLE_RAW_BYTES);
                }
            }
            Ok(())
        })
}

/// Text with ASCII whitespace runs collapsed to one space and trimmed as it is appended, so
/// padding doesn't eat into the size cap.
#[derive(Default)]
struct TitleText {
    text: String,
    pending_space: bool,
}

impl TitleText {
    /// Appends word by word rather than char by char (every `<a>`'s text passes here).
    /// A char is kept while the text is shorter than `max_bytes` before it, so the text
    /// may end up to one char past the cap, as when this went char by char.
    fn push(&mut self, s: &str, max_bytes: usize) {
        let mut rest = s;
        while !rest.is_empty() {
            if self.text.len() >= max_bytes {
                return;
            }
            let ws = rest.bytes().take_while(u8::is_ascii_whitespace).count();
            if ws > 0 {
                self.pending_space = true;
                rest = &rest[ws..];
                continue;
            }
            let len = rest
                .bytes()
                .position(|b| b.is_ascii_whitespace())
                .unwrap_or(rest.len());
            let (word, after) = rest.split_at(len);
            if self.pending_space && !self.text.is_empty() {
                self.text.push(' ');
            }
            self.pending_space = false;
            if self.text.len() + word.len() <= max_bytes {
                self.text.push_str(word);
            } else {
                // The first char was allowed by the check above, space or no space.
                let first = word.chars().next().expect("words are not empty");
                self.text.push(first);
                self.push_chars(&word[first.len_utf8()..], max_bytes);
            }
            rest = after;
        }
    }

    fn push_chars(&mut self, s: &str, max_bytes: usize) {
        for c in s.chars() {
            if self.text.len() >= max_bytes {
                return;
            }
            if c.is_ascii_whitespace() {
                self.pending_space = true;
                continue;
            }
            if self.pending_space && !self.text.is_empty() {
                self.text.push(' ');
            }
            self.pending_space = false;
            self.text.push(c);
        }
    }
}

fn finish_title(raw: &str) -> Option<String> {
    finish_text(raw, MAX_TITLE_CHARS)
}

/// [`finish_text`] of text already collapsed by [`TitleText`], reusing it when it holds no
/// character reference (the common case: most anchors are plain words).
fn finish_collapsed(text: String, max_chars: usize) -> Option<String> {
    if text.contains('&') {
        return finish_text(&text, max_chars);
    }
    cut_to(text, max_chars)
}

/// Decoded, collapsed text cut to `max_chars` characters; `None` when blank.
fn finish_text(raw: &str, max_chars: usize) -> Option<String> {
    // Decoding can produce whitespace (`&#10;`), so collapse once more afterwards.
    let mut title = TitleText::default();
    title.push(&decode_entities(raw, false), usize::MAX);
    cut_to(title.text, max_chars)
}

/// Collapsed text cut to `max_chars` characters (no space left at the cut); `None` when
/// blank.
fn cut_to(mut text: String, max_chars: usize) -> Option<String> {
    if let Some((cut, _)) = text.char_indices().nth(max_chars) {
        text.truncate(cut);
        text.truncate(text.trim_end_matches(' ').len());
    }
    (!text.is_empty()).then_some(text)
}

/// HTML's definition of whitespace (tab, LF, FF, CR, space), not Unicode's.
fn trim_ascii_whitespace(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii_whitespace())
}

fn has_skipped_scheme(value: &str) -> bool {
    let bytes = value.as_bytes();
    SKIPPED_SCHEMES.iter().any(|scheme| {
        bytes.get(scheme.len()) == Some(&b':')
            && bytes[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())
    })
}

// Character references. lol_html hands out attribute values and text exactly as written,
// entities included, so `href="?a=1&amp;b=2"` would otherwise become a different URL.
//
// This follows the HTML tokenizer's rules for numeric references and for the legacy names
// that may appear without a `;` (which, inside attribute values, stay literal before `=` or
// an alphanumeric, so `?a=1&copy=2` is left alone). Named references cover the Latin-1 set
// plus common punctuation, not HTML's full 2,231-name table: an unknown name stays verbatim,
// which costs a stray `&name;` in a rare title or URL, not a dependency and a 30 KB table.

/// Decodes character references in `s`; borrows when there are none, as in most URLs.
fn decode_entities(s: &str, in_attribute: bool) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        match decode_reference(after, in_attribute) {
            Some((c, consumed)) => {
                out.push(c);
                rest = &after[consumed..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The char referenced at the start of `s` (just past a `&`) and how many bytes spell it.
fn decode_reference(s: &str, in_attribute: bool) -> Option<(char, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() == Some(&b'#') {
        let (radix, start) = match bytes.get(1) {
            Some(b'x' | b'X') => (16, 2),
            _ => (10, 1),
        };
        let digits = bytes[start..]
            .iter()
            .take_while(|b| char::from(**b).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        let code = u32::from_str_radix(&s[start..start + digits], radix).unwrap_or(u32::MAX);
        let end = start + digits;
        let end = if bytes.get(end) == Some(&b';') {
            end + 1
        } else {
            end
        };
        return Some((numeric_reference(code), end));
    }

    let name_len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if bytes.get(name_len) == Some(&b';') {
        if let Some((c, _)) = named_reference(&s[..name_len]) {
            return Some((c, name_len + 1));
        }
    }
    // Without `;` only legacy names count, the longest one that prefixes the name.
    for len in (2..=name_len.min(MAX_LEGACY_NAME_LEN)).rev() {
        if let Some((c, true)) = named_reference(&s[..len]) {
            let next = bytes.get(len).copied();
            if in_attribute && next.is_some_and(|b| b == b'=' || b.is_ascii_alphanumeric()) {
                return None;
            }
            return Some((c, len));
        }
    }
    None
}

fn numeric_reference(code: u32) -> char {
    // Numeric references in 0x80..=0x9F mean windows-1252, for compatibility with old pages.
    const C1: [u16; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    let code = match code {
        0x80..=0x9F => u32::from(C1[(code - 0x80) as usize]),
        _ => code,
    };
    match code {
        0 => char::REPLACEMENT_CHARACTER,
        _ => char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
    }
}

const MAX_LEGACY_NAME_LEN: usize = 6;

/// Names of U+00A0..=U+00FF in order; all of them are legacy (valid without `;`).
const LATIN1_NAMES: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

/// Other names: (name, char, legacy).
const OTHER_NAMES: [(&str, char, bool); 45] = [
    ("amp", '&', true),
    ("AMP", '&', true),
    ("lt", '<', true),
    ("LT", '<', true),
    ("gt", '>', true),
    ("GT", '>', true),
    ("quot", '"', true),
    ("QUOT", '"', true),
    ("COPY", '©', true),
    ("REG", '®', true),
    ("apos", '\'', false),
    ("ndash", '\u{2013}', false),
    ("mdash", '\u{2014}', false),
    ("lsquo", '\u{2018}', false),
    ("rsquo", '\u{2019}', false),
    ("sbquo", '\u{201A}', false),
    ("ldquo", '\u{201C}', false),
    ("rdquo", '\u{201D}', false),
    ("bdquo", '\u{201E}', false),
    ("lsaquo", '\u{2039}', false),
    ("rsaquo", '\u{203A}', false),
    ("hellip", '\u{2026}', false),
    ("bull", '\u{2022}', false),
    ("dagger", '\u{2020}', false),
    ("Dagger", '\u{2021}', false),
    ("permil", '\u{2030}', false),
    ("prime", '\u{2032}', false),
    ("euro", '\u{20AC}', false),
    ("trade", '\u{2122}', false),
    ("OElig", '\u{0152}', false),
    ("oelig", '\u{0153}', false),
    ("Scaron", '\u{0160}', false),
    ("scaron", '\u{0161}', false),
    ("Yuml", '\u{0178}', false),
    ("fnof", '\u{0192}', false),
    ("circ", '\u{02C6}', false),
    ("tilde", '\u{02DC}', false),
    ("ensp", '\u{2002}', false),
    ("emsp", '\u{2003}', false),
    ("thinsp", '\u{2009}', false),
    ("zwnj", '\u{200C}', false),
    ("zwj", '\u{200D}', false),
    ("minus", '\u{2212}', false),
    ("larr", '\u{2190}', false),
    ("rarr", '\u{2192}', false),
];

/// The char for a reference name and whether the name is legacy.
fn named_reference(name: &str) -> Option<(char, bool)> {
    if let Some(i) = LATIN1_NAMES.iter().position(|n| *n == name) {
        return char::from_u32(0xA0 + i as u32).map(|c| (c, true));
    }
    OTHER_NAMES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, c, legacy)| (c, legacy))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "https://example.com/dir/page.html";

    fn page() -> Url {
        Url::parse(PAGE).unwrap()
    }

    fn ex(html: &str) -> Extracted {
        extract(&page(), None, html.as_bytes()).unwrap()
    }

    fn urls(html: &str) -> Vec<String> {
        ex(html)
            .links
            .into_iter()
            .map(|l| l.url.to_string())
            .collect()
    }

    fn anchored(link: Link, text: &str) -> Link {
        Link {
            anchor: Some(text.into()),
            ..link
        }
    }

    fn link(url: &str, kind: LinkKind, nofollow: bool) -> Link {
        Link {
            url: Url::parse(url).unwrap(),
            kind,
            nofollow,
            anchor: None,
        }
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
    fn extractor_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Extractor>();
    }

    #[test]
    fn every_element_kind_in_document_order() {
        let e = ex(r#"<html><head>
            <link rel="stylesheet" href="/style.css">
            <link rel="Canonical" href="/canon">
            </head><body>
            <a href="/a">a</a> <a name="no-href">x</a> <img src="/img.png">
            <map><area href="/area"></map>
            <iframe src="/iframe"></iframe>
            <frameset><frame src="/frame"></frameset>
            </body></html>"#);
        assert_eq!(
            e.links,
            vec![
                link("https://example.com/style.css", LinkKind::Link, false),
                link("https://example.com/canon", LinkKind::Canonical, false),
                anchored(link("https://example.com/a", LinkKind::A, false), "a"),
                link("https://example.com/area", LinkKind::Area, false),
                link("https://example.com/iframe", LinkKind::Iframe, false),
                link("https://example.com/frame", LinkKind::Frame, false),
            ]
        );
    }

    #[test]
    fn rel_nofollow_tokens() {
        let e = ex(r#"
            <a href="/1" rel="nofollow">
            <a href="/2" rel="NoFollow noopener">
            <a href="/3" rel="noopener&#9;nofollow">
            <a href="/4" rel="nofollowed">
            <a href="/5" rel="">
            <area href="/6" rel=" nofollow ">
            <link href="/7" rel="canonical nofollow">
            <iframe src="/8" rel="nofollow"></iframe>"#);
        let got: Vec<_> = e
            .links
            .iter()
            .map(|l| (l.url.path(), l.kind, l.nofollow))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/1", LinkKind::A, true),
                ("/2", LinkKind::A, true),
                ("/3", LinkKind::A, true),
                ("/4", LinkKind::A, false),
                ("/5", LinkKind::A, false),
                ("/6", LinkKind::Area, true),
                ("/7", LinkKind::Canonical, true),
                // rel means nothing on an iframe.
                ("/8", LinkKind::Iframe, false),
            ]
        );
    }

    #[test]
    fn canonical_only_on_link_elements() {
        let e = ex(r#"<a href="/x" rel="canonical">"#);
        assert_eq!(e.links[0].kind, LinkKind::A);
    }

    #[test]
    fn absolute_base() {
        assert_eq!(
            urls(r#"<base href="https://cdn.example.org/root/"><a href="x">"#),
            ["https://cdn.example.org/root/x"]
        );
    }

    #[test]
    fn relative_base_resolves_against_page() {
        assert_eq!(
            urls(r#"<base href="../other/"><a href="x"><a href="/abs">"#),
            ["https://example.com/other/x", "https://example.com/abs"]
        );
    }

    #[test]
    fn links_before_base_use_page_url() {
        assert_eq!(
            urls(r#"<a href="before"><base href="/b/"><a href="after">"#),
            [
                "https://example.com/dir/before",
                "https://example.com/b/after"
            ]
        );
    }

    #[test]
    fn only_first_base_counts() {
        assert_eq!(
            urls(r#"<base target="_top"><base href="/first/"><base href="/second/"><a href="x">"#),
            ["https://example.com/first/x"]
        );
    }

    #[test]
    fn unparsable_base_is_ignored() {
        assert_eq!(
            urls(r#"<base href="http://[bad"><a href="x">"#),
            ["https://example.com/dir/x"]
        );
    }

    #[test]
    fn entities_in_attributes_are_decoded() {
        let e = ex(
            r#"<a href="/a?x=1&amp;y=2"><a href="/b?x=1&#38;y=2&#x26;z=3"><a href="/c?a=1&copy=2&lang=en">"#,
        );
        assert_eq!(e.links[0].url.query(), Some("x=1&y=2"));
        assert_eq!(e.links[1].url.query(), Some("x=1&y=2&z=3"));
        // Legacy names before `=` stay literal inside attributes, as in browsers.
        assert_eq!(e.links[2].url.query(), Some("a=1&copy=2&lang=en"));
    }

    #[test]
    fn attribute_whitespace_is_trimmed() {
        assert_eq!(urls("<a href=\"  /a \n\">"), ["https://example.com/a"]);
        assert_eq!(urls("<a href=\"\t\r\n \">"), Vec::<String>::new());
    }

    #[test]
    fn skipped_schemes() {
        let got = urls(
            "<a href=\"javascript:void(0)\">
             <a href=\"JavaScript:go()\">
             <a href=\"  javascript:go()\">
             <a href=\"java\tscript:go()\">
             <a href=\"mailto:someone@example.com\">
             <a href=\"TEL:+1555\">
             <a href=\"data:text/html,hi\">
             <a href=\"\">
             <a href=\"http://[::1\">
             <a href=\"ftp://files.example.com/x\">
             <a href=\"javascript.html\">",
        );
        assert_eq!(
            got,
            [
                "ftp://files.example.com/x",
                "https://example.com/dir/javascript.html"
            ]
        );
    }

    #[test]
    fn relative_references() {
        assert_eq!(
            urls(
                r##"<a href="../x"><a href="?q"><a href="//other.host/x"><a href="#frag"><a href="y">"##
            ),
            [
                "https://example.com/x",
                "https://example.com/dir/page.html?q",
                "https://other.host/x",
                "https://example.com/dir/page.html#frag",
                "https://example.com/dir/y",
            ]
        );
    }

    #[test]
    fn links_in_comments_scripts_styles_and_text_are_not_links() {
        let got = urls(
            r#"<!-- <a href="/comment"> -->
            <script>document.write('<a href="/script">');</script>
            <style>/* <a href="/style"> */</style>
            <textarea><a href="/textarea"></textarea>
            <p>see https://example.com/plain</p>
            <a href="/real">"#,
        );
        assert_eq!(got, ["https://example.com/real"]);
    }

    #[test]
    fn title_is_decoded_and_collapsed() {
        let e = ex(
            "<title>\n  Tom &amp; Jerry&nbsp;&#8211;   the\t\tcartoons &notit; &bogus; </title>",
        );
        assert_eq!(
            e.title.as_deref(),
            Some("Tom & Jerry\u{a0}\u{2013} the cartoons \u{ac}it; &bogus;")
        );
    }

    #[test]
    fn first_html_title_wins() {
        let e = ex("<svg><title>tooltip</title></svg><title>Real</title><title>Later</title>");
        assert_eq!(e.title.as_deref(), Some("Real"));
        let e = ex("<svg><g><title>tooltip</title></g></svg><p>text</p>");
        assert_eq!(e.title, None);
        // Nested and self-closing `<svg>`: only titles outside every one count.
        let e = ex("<svg/><svg><svg></svg><title>t</title></svg><title>Real</title>");
        assert_eq!(e.title.as_deref(), Some("Real"));
        assert_eq!(ex("<title></title><title>Later</title>").title, None);
        assert_eq!(ex("<title>  \n </title>").title, None);
        assert_eq!(ex("<p>no title</p>").title, None);
    }

    #[test]
    fn long_title_is_cut_on_a_char_boundary() {
        let html = format!("<title>{}</title>", "é".repeat(5000));
        let title = ex(&html).title.unwrap();
        assert_eq!(title.chars().count(), MAX_TITLE_CHARS);
        assert!(title.chars().all(|c| c == 'é'));
    }

    proptest::proptest! {
        /// Word-at-a-time collapsing keeps exactly what char-at-a-time did, cap included,
        /// however the text is split into chunks.
        #[test]
        fn text_collapsing_matches_char_by_char(
            parts in proptest::collection::vec("[ a\\té\n]{0,12}", 0..6),
            max in 0usize..40,
        ) {
            let mut fast = TitleText::default();
            let mut slow = TitleText::default();
            for p in &parts {
                fast.push(p, max);
                slow.push_chars(p, max);
            }
            proptest::prop_assert_eq!(fast.text, slow.text);
        }

        #[test]
        fn plain_text_is_what_collapsing_leaves(text in "( ?[aé]{1,8}){0,60}[ \t&a]?") {
            if is_plain(&text) {
                let mut t = TitleText::default();
                t.push(&text, MAX_ANCHOR_COLLAPSED_BYTES);
                proptest::prop_assert_eq!(
                    finish_collapsed(t.text, MAX_ANCHOR_CHARS),
                    Some(text.clone())
                );
            }
        }
    }

    #[test]
    fn numeric_references() {
        let d = |s: &str| decode_entities(s, false).into_owned();
        assert_eq!(d("&#x41;&#X42;&#67"), "ABC");
        assert_eq!(d("&#0;&#xD800;&#99999999999;"), "\u{FFFD}\u{FFFD}\u{FFFD}");
        assert_eq!(d("&#128;&#x99;"), "\u{20AC}\u{2122}");
        assert_eq!(d("&#; &#x; & &&amp"), "&#; &#x; & &&");
    }

    #[test]
    fn meta_robots() {
        let e = ex(r#"<meta name="ROBOTS" content="NOINDEX, follow">"#);
        assert!(e.meta_noindex && !e.meta_nofollow);
        let e = ex(r#"<meta name="robots" content="none">"#);
        assert!(e.meta_noindex && e.meta_nofollow);
        let e = ex(r#"<meta name="Trawl" content="nofollow">"#);
        assert!(!e.meta_noindex && e.meta_nofollow);
        let e = ex(r#"<meta name="robots" content="noindex,nofollow">"#);
        assert!(e.meta_noindex && e.meta_nofollow);
        let e = ex(
            r#"<meta name="googlebot" content="none"><meta name="description" content="noindex">"#,
        );
        assert!(!e.meta_noindex && !e.meta_nofollow);
        let e = ex(r#"<meta name="robots" content="index, follow, noarchive">"#);
        assert!(!e.meta_noindex && !e.meta_nofollow);
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
            whole.links,
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
        let mut x = Extractor::with_memory_limit(page(), None, LIMIT);
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
