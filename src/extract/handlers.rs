//! The lol_html element handlers, and what each element does to the page's [`State`].

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use lol_html::html_content::{EndTag, TextChunk};
use lol_html::send::{Element, ElementContentHandlers};
use lol_html::{HandlerResult, Selector};
use url::Url;

use super::entities::decode_entities;
use super::refresh::refresh_target;
use super::resolve::{self, Key, Seen};
use super::text::{trim_ascii_whitespace, TitleText, MAX_TITLE_RAW_BYTES};
use super::{ascii_compatible, lock, Link, Shared, State};
use crate::link::LinkKind;

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
    noscript: Selector,
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
        noscript: parse("noscript"),
    }
});

type Handlers = Vec<(Cow<'static, Selector>, ElementContentHandlers<'static>)>;

pub(super) fn handlers(state: &Shared) -> Handlers {
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
        (Cow::Borrowed(&s.noscript), noscript_handlers(state)),
    ]
}

fn link_handler(
    state: &Shared,
    attr: &'static str,
    kind: LinkKind,
) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        let [value, name, rel, xlink] = attributes(el, [attr, "name", "rel", "xlink:href"]);
        if kind == LinkKind::A {
            // `<a name>` is a fragment target too, with or without `href`.
            if let Some(name) = name {
                lock(&state).push_id(&name);
            }
        }
        let Some(value) = value.or_else(|| svg_link(&state, kind, xlink)) else {
            return Ok(());
        };
        let (mut kind, mut nofollow) = (kind, false);
        if matches!(kind, LinkKind::A | LinkKind::Area | LinkKind::Link) {
            if let Some(rel) = rel {
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
        s.push_link(&value, kind, nofollow, el.source_location().bytes().start);
        if kind == LinkKind::A && s.links.len() > before {
            // Its text is read from the page's bytes after the tag (see `anchor`).
            s.anchor_starts
                .push((before, el.source_location().bytes().end));
        }
        Ok(())
    })
}

/// SVG 1.1 links are `<a xlink:href>` (SVG 2 reads `href` too, which wins). Taken only for
/// an `<a>` without `href`, and only inside `<svg>`: on an HTML `<a>` browsers ignore it.
fn svg_link(state: &Shared, kind: LinkKind, xlink: Option<String>) -> Option<String> {
    if kind != LinkKind::A || lock(state).svg_depth == 0 {
        return None;
    }
    xlink
}

/// The values of the attributes `names` (lowercase) of `el`, read in one pass; the first
/// of a repeated attribute wins, as in HTML. lol_html's `get_attribute` lowercases and
/// re-encodes the name it is given and walks the attributes again on each call, three
/// calls per `<a>` (8.7 % of the instructions per page on the Rust docs); here a name is
/// lowercased only when its length, read from its place in the page, is one asked for
/// (`class` and `title` are not).
fn attributes<const N: usize>(el: &Element<'_, '_>, names: [&str; N]) -> [Option<String>; N] {
    let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
    for attr in el.attributes() {
        let len = attr.name_source_location().map(|at| at.bytes().len());
        if len.is_some_and(|len| names.iter().all(|n| n.len() != len)) {
            continue;
        }
        let name = attr.name();
        if let Some(i) = names.iter().position(|&n| n == name) {
            if found[i].is_none() {
                found[i] = Some(attr.value());
            }
        }
    }
    found
}

fn base_handler(state: &Shared) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        if let [Some(href)] = attributes(el, ["href"]) {
            lock(&state).set_base(&href);
        }
        Ok(())
    })
}

fn meta_handler(state: &Shared) -> ElementContentHandlers<'static> {
    let state = Arc::clone(state);
    ElementContentHandlers::default().element(move |el: &mut Element<'_, '_>| {
        let [name, content, equiv, charset] =
            attributes(el, ["name", "content", "http-equiv", "charset"]);
        let equiv = equiv.as_deref().map(trim_ascii_whitespace);
        let ours = name.is_some_and(|name| {
            let name = trim_ascii_whitespace(&name);
            name.eq_ignore_ascii_case("robots") || name.eq_ignore_ascii_case("trawl")
        });
        if ours {
            if let Some(content) = &content {
                lock(&state).read_robots_meta(content);
            }
        }
        if equiv.is_some_and(|equiv| equiv.eq_ignore_ascii_case("refresh")) {
            if let Some(content) = &content {
                let content = decode_entities(content, true);
                if let Some(target) = refresh_target(&content) {
                    let at = el.source_location().bytes().start;
                    lock(&state).push_decoded(target, LinkKind::Refresh, false, Some(at));
                }
            }
        }
        let mut s = lock(&state);
        if s.follow_meta_charset {
            // The same rule lol_html follows to switch its own decoding: the first `<meta>`
            // that names an ASCII-compatible encoding.
            let label = charset.or_else(|| {
                if !equiv?.eq_ignore_ascii_case("content-type") {
                    return None;
                }
                crate::charset::charset_of(content.as_deref()?).map(str::to_owned)
            });
            if let Some(encoding) = label.as_deref().and_then(ascii_compatible) {
                s.text_encoding = encoding.into();
                s.follow_meta_charset = false;
            }
        }
        Ok(())
    })
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

/// lol_html reads `<noscript>` content as raw text, as a browser running scripts does. A
/// crawler runs none, so the content is read as markup, as the HTML standard parses it
/// with scripting off (and as search engines do): collected while the element is open,
/// then read by an extractor of its own when it ends, its links joining the page's there.
fn noscript_handlers(state: &Shared) -> ElementContentHandlers<'static> {
    let on_element = Arc::clone(state);
    let on_text = Arc::clone(state);
    ElementContentHandlers::default()
        .element(move |el: &mut Element<'_, '_>| -> HandlerResult {
            {
                let mut s = lock(&on_element);
                if !s.noscript.reads() {
                    return Ok(());
                }
                s.noscript.open(el.source_location().bytes().start);
            }
            let on_end = Arc::clone(&on_element);
            // Fails for a self-closing `<noscript/>`, which is then read at the page's end.
            let _ = el.on_end_tag(Box::new(move |_: &mut EndTag<'_>| {
                read_noscript(&on_end);
                Ok(())
            }));
            Ok(())
        })
        .text(move |chunk: &mut TextChunk<'_>| {
            lock(&on_text).noscript.push(chunk.as_str());
            Ok(())
        })
}

/// Reads the open `<noscript>`'s content, if any, into the page's links.
pub(super) fn read_noscript(state: &Shared) {
    let (text, base, query_encoding, at) = {
        let mut s = lock(state);
        let Some(text) = s.noscript.close() else {
            return;
        };
        (text, s.base.clone(), s.query_encoding, s.noscript.opened_at)
    };
    // Outside the lock: the inner extractor has handlers of its own, on a state of its own.
    let Some(found) = super::Extractor::noscript(base, query_encoding, &text) else {
        return;
    };
    let mut s = lock(state);
    let first = s.links.len();
    s.links.extend(found.links);
    let placed = (first..s.links.len()).map(|i| (i, at));
    s.spots.extend(placed);
    s.meta_nofollow |= found.meta_nofollow;
    s.meta_noindex |= found.meta_noindex;
}

/// Schemes that are never crawlable, dropped before spending a URL parse on them.
const SKIPPED_SCHEMES: [&str; 4] = ["javascript", "mailto", "tel", "data"];

fn has_skipped_scheme(value: &str) -> bool {
    let bytes = value.as_bytes();
    SKIPPED_SCHEMES.iter().any(|scheme| {
        bytes.get(scheme.len()) == Some(&b':')
            && bytes[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())
    })
}

impl State {
    /// `value` resolved against the base, its query encoded in the document's encoding.
    fn resolve(&mut self, value: &str) -> Option<Url> {
        resolve::resolve(&mut self.scratch, &self.base, self.query_encoding, value)
    }

    /// The link `value` makes: resolved once per distinct value on the page.
    fn link_url(&mut self, value: &str) -> Option<Url> {
        let key = Key::of(value);
        match self.memo.get(key) {
            Some(Seen::Link(i)) => return self.links.get(i).map(|l| l.url.clone()),
            Some(Seen::Nothing) => return None,
            None => {}
        }
        // The URL parser drops tabs and newlines anywhere, so "java\tscript:" only shows
        // its scheme after parsing.
        let url = self
            .resolve(value)
            .filter(|url| !SKIPPED_SCHEMES.contains(&url.scheme()));
        let seen = match url {
            Some(_) => Seen::Link(self.links.len()),
            None => Seen::Nothing,
        };
        self.memo.remember(key, seen);
        url
    }

    /// The link in `raw` (an attribute value as written) of the element starting at byte
    /// `at` of the page.
    fn push_link(&mut self, raw: &str, kind: LinkKind, nofollow: bool, at: usize) {
        self.push_decoded(&decode_entities(raw, true), kind, nofollow, Some(at));
    }

    /// [`State::push_link`] for a value whose entities are decoded already.
    fn push_decoded(&mut self, decoded: &str, kind: LinkKind, nofollow: bool, at: Option<usize>) {
        let value = trim_ascii_whitespace(decoded);
        if value.is_empty() || has_skipped_scheme(value) {
            return;
        }
        let Some(url) = self.link_url(value) else {
            return;
        };
        if let Some(at) = at {
            self.spots.push((self.links.len(), at));
        }
        self.links.push(Link {
            url,
            kind,
            nofollow,
            anchor: None,
            at: None,
        });
    }

    /// A fragment target (an `id` or an `<a name>`, as written), when they are collected.
    pub(super) fn push_id(&mut self, raw: &str) {
        if let Some(ids) = &mut self.ids {
            ids.push(&decode_entities(raw, true));
        }
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
            self.memo.clear();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::{anchored, ex, link, urls};

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
    fn svg_links_by_xlink_href_or_href() {
        let got = urls(
            r##"<svg><a xlink:href="/old"><text>o</text></a><a href="/new" xlink:href="/no">
            <text>n</text></a></svg><a xlink:href="/html-ignores-it">h</a>"##,
        );
        assert_eq!(got, ["https://example.com/old", "https://example.com/new"]);
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
}
