//! A deterministic generated web site and the oracle for crawling it.
//!
//! [`Site::generate`] turns a [`SiteSpec`] into an in-memory set of resources (HTML pages,
//! redirects, error pages, a stylesheet, a PDF). The same spec always gives byte-identical
//! content. [`Site::expected`] walks the generated link graph the way a correct crawl does
//! (breadth first from `/`) and says what must be fetched, what must be recorded as out of
//! scope, and which edges must exist. Nothing in the expectation is hard-coded: it comes from
//! the same link lists the HTML is rendered from.
//!
//! Bodies that mention the server's own address hold a placeholder that the server replaces
//! when it answers (see [`Site::render`]), so a site can be generated before the port is known.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use url::Url;

/// Replaced by the server's base with the scheme upper-cased: `HTTP://127.0.0.1:PORT`.
const BASE_UPPER: &str = "{{BASE_UPPER}}";
/// Replaced by the server's base: `http://127.0.0.1:PORT`.
const BASE: &str = "{{BASE}}";

/// Paths the server answers (200) but that a correct crawler must never request: they are
/// only "linked" from an HTML comment and from a string inside `<script>`.
pub const NEVER_FETCHED: &[&str] = &["/secret-comment", "/secret-script"];

pub const HTML: &str = "text/html; charset=utf-8";
pub const CSS: &str = "text/css";
pub const PDF: &str = "application/pdf";

/// What to generate.
#[derive(Debug, Clone)]
pub struct SiteSpec {
    /// PRNG seed: the same spec gives a byte-identical site.
    pub seed: u64,
    /// Number of HTML pages `/p/0` ... `/p/{pages-1}`; `/` is a separate start page.
    pub pages: usize,
    /// Random `<a href="/p/M">` links per page (duplicates allowed), besides the link to
    /// `/p/{N+1}` every page has and besides the extras.
    pub links_per_page: usize,
    /// Sleep before each response.
    pub latency: Duration,
    /// Add the special cases (duplicate spellings, external links, redirects, errors, ...).
    /// Needs at least 12 pages.
    pub extras: bool,
}

impl SiteSpec {
    /// Seed 7, 60 pages, 5 links per page, no latency, extras on.
    pub fn small() -> SiteSpec {
        SiteSpec {
            seed: 7,
            pages: 60,
            links_per_page: 5,
            latency: Duration::ZERO,
            extras: true,
        }
    }
}

/// splitmix64: tiny, fast, and good enough to pick link targets and filler words.
struct Prng(u64);

impl Prng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-enough index in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// One link as written in a document: the raw attribute value (may hold a placeholder)
/// and the kind trawl records it as.
#[derive(Debug, Clone)]
struct Link {
    href: String,
    kind: &'static str,
}

/// One thing the server can answer.
#[derive(Debug, Clone)]
pub(super) struct Resource {
    pub(super) status: u16,
    /// `None`: no Content-Type header.
    pub(super) content_type: Option<&'static str>,
    /// Location header (may hold a placeholder).
    pub(super) location: Option<String>,
    /// Body (may hold a placeholder when `templated`).
    pub(super) body: Bytes,
    pub(super) templated: bool,
    /// `<base href>` of an HTML document.
    base_href: Option<String>,
    /// Links of an HTML document, in document order (including mailto:, javascript: and
    /// out-of-scope ones; excluding anything inside comments or scripts).
    links: Vec<Link>,
}

/// Builds an HTML document and records its links as it goes, so the rendered HTML and the
/// link list the oracle uses cannot disagree.
struct Doc {
    head: String,
    body: String,
    base_href: Option<String>,
    links: Vec<Link>,
}

impl Doc {
    fn new() -> Doc {
        Doc {
            head: String::new(),
            body: String::new(),
            base_href: None,
            links: Vec::new(),
        }
    }

    fn base(&mut self, href: &str) {
        self.head.push_str(&format!("<base href=\"{href}\">\n"));
        self.base_href = Some(href.to_owned());
    }

    fn stylesheet(&mut self, href: &str) {
        self.head
            .push_str(&format!("<link rel=\"stylesheet\" href=\"{href}\">\n"));
        self.link(href, "link");
    }

    fn a(&mut self, href: &str, text: &str) {
        self.body
            .push_str(&format!("<p><a href=\"{href}\">{text}</a></p>\n"));
        self.link(href, "a");
    }

    fn a_nofollow(&mut self, href: &str, text: &str) {
        self.body.push_str(&format!(
            "<p><a rel=\"nofollow\" href=\"{href}\">{text}</a></p>\n"
        ));
        self.link(href, "a");
    }

    fn area(&mut self, href: &str) {
        self.body.push_str(&format!(
            "<map name=\"m\"><area shape=\"rect\" coords=\"0,0,10,10\" href=\"{href}\" alt=\"area\"></map>\n"
        ));
        self.link(href, "area");
    }

    fn iframe(&mut self, src: &str) {
        self.body.push_str(&format!(
            "<iframe src=\"{src}\" title=\"embed\"></iframe>\n"
        ));
        self.link(src, "iframe");
    }

    /// Markup that is not a link (comments, scripts, filler).
    fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    fn link(&mut self, href: &str, kind: &'static str) {
        self.links.push(Link {
            href: href.to_owned(),
            kind,
        });
    }

    fn finish(self, status: u16, title: &str) -> Resource {
        let html = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n{}</head>\n<body>\n<h1>{title}</h1>\n{}</body>\n</html>\n",
            self.head, self.body
        );
        let templated = html.contains("{{");
        Resource {
            status,
            content_type: Some(HTML),
            location: None,
            body: Bytes::from(html),
            templated,
            base_href: self.base_href,
            links: self.links,
        }
    }
}

/// The special cases, each a way to add itself to a document.
#[derive(Debug, Clone, Copy)]
enum Extra {
    Fragment,
    DotSegment,
    DotDotSegment,
    PercentDigit,
    UpperScheme,
    ExternalHttps,
    ExternalQuery,
    Mailto,
    Javascript,
    Stylesheet,
    Iframe,
    Pdf,
    Area,
    Missing,
    Gone,
    RedirectChain,
    RedirectLoop,
    CommentLink,
    ScriptLink,
}

impl Extra {
    /// On the start page (the nofollow and `<base>` cases live on `/p/8` and `/p/2`).
    const ALL: [Extra; 19] = [
        Extra::Fragment,
        Extra::DotSegment,
        Extra::DotDotSegment,
        Extra::PercentDigit,
        Extra::UpperScheme,
        Extra::ExternalHttps,
        Extra::ExternalQuery,
        Extra::Mailto,
        Extra::Javascript,
        Extra::Stylesheet,
        Extra::Iframe,
        Extra::Pdf,
        Extra::Area,
        Extra::Missing,
        Extra::Gone,
        Extra::RedirectChain,
        Extra::RedirectLoop,
        Extra::CommentLink,
        Extra::ScriptLink,
    ];

    /// Sprinkled on a few random pages too.
    const SPRINKLED: [Extra; 12] = [
        Extra::Fragment,
        Extra::DotSegment,
        Extra::DotDotSegment,
        Extra::PercentDigit,
        Extra::UpperScheme,
        Extra::ExternalHttps,
        Extra::ExternalQuery,
        Extra::Mailto,
        Extra::Pdf,
        Extra::Missing,
        Extra::RedirectChain,
        Extra::CommentLink,
    ];

    fn add_to(self, doc: &mut Doc) {
        match self {
            Extra::Fragment => doc.a("/p/3#top", "three, top"),
            Extra::DotSegment => doc.a("/p/./3", "three, dot"),
            Extra::DotDotSegment => doc.a("/p/x/../3", "three, dot dot"),
            Extra::PercentDigit => doc.a("/p/%33", "three, escaped"),
            Extra::UpperScheme => doc.a(&format!("{BASE_UPPER}/p/3"), "three, absolute"),
            Extra::ExternalHttps => doc.a("https://external.example/", "external"),
            Extra::ExternalQuery => doc.a("http://other.example/page?x=1", "other"),
            Extra::Mailto => doc.a("mailto:x@example.org", "mail"),
            Extra::Javascript => doc.a("javascript:void(0)", "script"),
            Extra::Stylesheet => doc.stylesheet("/static/site.css"),
            Extra::Iframe => doc.iframe("/embed"),
            Extra::Pdf => doc.a("/files/report.pdf", "report"),
            Extra::Area => doc.area("/p/5"),
            Extra::Missing => doc.a("/missing", "missing"),
            Extra::Gone => doc.a("/gone", "gone"),
            Extra::RedirectChain => doc.a("/r/3", "redirect chain"),
            Extra::RedirectLoop => doc.a("/loop/a", "redirect loop"),
            Extra::CommentLink => {
                doc.raw("<!-- old navigation: <a href=\"/secret-comment\">secret</a> -->\n")
            }
            Extra::ScriptLink => doc.raw(
                "<script>var tpl = '<a href=\"/secret-script\">secret</a>'; var u = \"/secret-script\";</script>\n",
            ),
        }
    }
}

const WORDS: [&str; 32] = [
    "lorem", "ipsum", "dolor", "sit", "amet", "crawler", "frontier", "graph", "edge", "vertex",
    "harbour", "river", "lantern", "copper", "meadow", "quartz", "signal", "window", "orchard",
    "pebble", "thunder", "velvet", "walnut", "zephyr", "anchor", "basil", "cinder", "delta",
    "ember", "fable", "granite", "hollow",
];

/// About `bytes` of plain words in paragraphs.
fn filler(rng: &mut Prng, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 64);
    while out.len() < bytes {
        out.push_str("<p>");
        for _ in 0..40 {
            out.push_str(WORDS[rng.below(WORDS.len())]);
            out.push(' ');
        }
        out.push_str("</p>\n");
    }
    out
}

fn plain(status: u16, content_type: &'static str, body: Vec<u8>) -> Resource {
    Resource {
        status,
        content_type: Some(content_type),
        location: None,
        body: Bytes::from(body),
        templated: false,
        base_href: None,
        links: Vec::new(),
    }
}

fn redirect(status: u16, location: &str) -> Resource {
    Resource {
        status,
        content_type: None,
        location: Some(location.to_owned()),
        body: Bytes::new(),
        templated: false,
        base_href: None,
        links: Vec::new(),
    }
}

fn html_without_links(status: u16, title: &str) -> Resource {
    let mut doc = Doc::new();
    doc.raw("<p>Nothing to see here.</p>\n");
    doc.finish(status, title)
}

/// A few hundred bytes that start like a PDF.
fn fake_pdf(rng: &mut Prng) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n1 0 obj << /Type /Catalog >> endobj\n".to_vec();
    while out.len() < 400 {
        out.extend_from_slice(format!("% {:016x}\n", rng.next_u64()).as_bytes());
    }
    out.extend_from_slice(b"%%EOF\n");
    out
}

struct Inner {
    spec: SiteSpec,
    /// By request path and query, exactly as the server compares them.
    resources: HashMap<String, Resource>,
    not_found: Resource,
}

/// A generated site, cheap to clone (shared).
#[derive(Clone)]
pub struct Site(Arc<Inner>);

/// What a correct crawl of a site must produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Every URL the crawler must fetch, by canonical URL.
    pub fetched: BTreeMap<String, ExpectedPage>,
    /// URLs that are linked but out of scope (other hosts): stored, never fetched.
    pub skipped: BTreeSet<String>,
    /// (from canonical URL, to canonical URL, kind) -> number of occurrences.
    pub edges: BTreeMap<(String, String, String), usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedPage {
    pub status: u16,
    /// Fewest links from the start page; redirect hops do not add depth.
    pub depth: u32,
    /// The Content-Type header as served; empty when the response has none (redirects).
    pub content_type: String,
}

impl Site {
    pub fn generate(spec: &SiteSpec) -> Site {
        assert!(spec.pages >= 1, "a site needs at least one page");
        assert!(
            !spec.extras || spec.pages >= 12,
            "extras link to pages up to /p/11: need at least 12 pages"
        );
        let mut rng = Prng(spec.seed);
        let mut resources = HashMap::new();

        // Which random pages get a sprinkling of extras, and which ones.
        let mut sprinkles: HashMap<usize, Vec<Extra>> = HashMap::new();
        if spec.extras {
            for _ in 0..4 {
                let page = rng.below(spec.pages);
                for _ in 0..3 {
                    let extra = Extra::SPRINKLED[rng.below(Extra::SPRINKLED.len())];
                    sprinkles.entry(page).or_default().push(extra);
                }
            }
        }

        // The start page.
        let mut start = Doc::new();
        start.a("/p/0", "first page");
        if spec.extras {
            for extra in Extra::ALL {
                extra.add_to(&mut start);
            }
        }
        start.raw(&filler(&mut rng, 1000));
        resources.insert("/".to_owned(), start.finish(200, "Start"));

        for n in 0..spec.pages {
            let mut doc = Doc::new();
            if spec.extras && n == 2 {
                // Every relative link in this page resolves against /p/sub/.
                doc.base("/p/sub/");
            }
            doc.raw(&filler(&mut rng, 1500));
            doc.raw("<ul>\n");
            for _ in 0..spec.links_per_page {
                let m = rng.below(spec.pages);
                doc.raw("<li>");
                doc.a(&format!("/p/{m}"), &format!("Page {m}"));
                doc.raw("</li>\n");
            }
            doc.raw("</ul>\n");
            if n + 1 < spec.pages {
                doc.a(&format!("/p/{}", n + 1), "next");
            }
            if spec.extras {
                if n == 2 {
                    doc.a("../11", "eleven, through base");
                }
                if n == 8 {
                    // /p/8 links to /p/9 anyway, so whether a crawler follows nofollow links
                    // changes neither what is fetched nor any depth.
                    doc.a_nofollow("/p/9", "nine, nofollow");
                }
                for extra in sprinkles.get(&n).into_iter().flatten() {
                    extra.add_to(&mut doc);
                }
            }
            doc.raw(&filler(&mut rng, 1500));
            resources.insert(format!("/p/{n}"), doc.finish(200, &format!("Page {n}")));
        }

        if spec.extras {
            resources.insert(
                "/static/site.css".to_owned(),
                plain(
                    200,
                    CSS,
                    b"body { font-family: sans-serif; }\nh1 { color: #333; }\n".to_vec(),
                ),
            );
            let mut embed = Doc::new();
            embed.a("/", "home");
            resources.insert("/embed".to_owned(), embed.finish(200, "Embedded"));
            resources.insert(
                "/files/report.pdf".to_owned(),
                plain(200, PDF, fake_pdf(&mut rng)),
            );
            resources.insert("/missing".to_owned(), html_without_links(404, "Not Found"));
            resources.insert("/gone".to_owned(), html_without_links(410, "Gone"));
            // Root-relative, then relative, then absolute Location values.
            resources.insert("/r/3".to_owned(), redirect(301, "/r/2"));
            resources.insert("/r/2".to_owned(), redirect(302, "1"));
            resources.insert("/r/1".to_owned(), redirect(307, &format!("{BASE}/p/7")));
            resources.insert("/loop/a".to_owned(), redirect(301, "b"));
            resources.insert(
                "/loop/b".to_owned(),
                redirect(301, &format!("{BASE}/loop/a")),
            );
            for path in NEVER_FETCHED {
                resources.insert((*path).to_owned(), html_without_links(200, "Secret"));
            }
        }

        Site(Arc::new(Inner {
            spec: spec.clone(),
            resources,
            not_found: html_without_links(404, "Not Found"),
        }))
    }

    pub fn spec(&self) -> &SiteSpec {
        &self.0.spec
    }

    /// Every path the server answers with something other than the generic 404, sorted.
    pub fn paths(&self) -> Vec<&str> {
        let mut paths: Vec<&str> = self.0.resources.keys().map(String::as_str).collect();
        paths.sort_unstable();
        paths
    }

    /// The stored body for a path, before placeholders are replaced.
    pub fn body_template(&self, path_and_query: &str) -> Option<&[u8]> {
        self.0.resources.get(path_and_query).map(|r| &r.body[..])
    }

    /// The resource for a request path (with query); unknown paths get the generic 404.
    pub(super) fn resource(&self, path_and_query: &str) -> &Resource {
        self.0
            .resources
            .get(path_and_query)
            .unwrap_or(&self.0.not_found)
    }

    /// Body and Location of `res` as served from `base` (`http://host:port`).
    pub(super) fn render(res: &Resource, base: &str) -> (Bytes, Option<String>) {
        let body = if res.templated {
            let text = std::str::from_utf8(&res.body).expect("templated bodies are UTF-8");
            Bytes::from(fill(text, base))
        } else {
            res.body.clone()
        };
        (body, res.location.as_deref().map(|l| fill(l, base)))
    }

    /// Status, body and Location served for `path_and_query` from `base`, as a client
    /// receives them (placeholders filled).
    pub fn served(&self, path_and_query: &str, base: &str) -> (u16, Bytes, Option<String>) {
        let res = self.resource(path_and_query);
        let (body, location) = Site::render(res, base);
        (res.status, body, location)
    }

    /// What a correct crawl of `base` + "/" (base like "http://127.0.0.1:41234", no trailing
    /// slash) must store.
    pub fn expected(&self, base: &str) -> Expected {
        let base = base.trim_end_matches('/');
        let start = canonical(&Url::parse(&format!("{base}/")).expect("base is a URL"));
        let origin = start.origin();

        let mut fetched = BTreeMap::new();
        let mut skipped = BTreeSet::new();
        let mut edges: BTreeMap<(String, String, String), usize> = BTreeMap::new();

        // 0-1 BFS: links cost one level of depth, redirect hops none. The first time a URL
        // leaves the queue its depth is final.
        let mut depth: HashMap<String, u32> = HashMap::new();
        let mut queue: VecDeque<(Url, u32)> = VecDeque::new();
        depth.insert(start.to_string(), 0);
        queue.push_back((start, 0));

        while let Some((url, d)) = queue.pop_front() {
            let key = url.to_string();
            if fetched.contains_key(&key) {
                continue;
            }
            let res = self.resource(&path_and_query(&url));
            fetched.insert(
                key.clone(),
                ExpectedPage {
                    status: res.status,
                    depth: d,
                    content_type: res.content_type.unwrap_or("").to_owned(),
                },
            );

            let mut out: Vec<(Url, &'static str)> = Vec::new();
            if (300..400).contains(&res.status) {
                if let Some(to) = res
                    .location
                    .as_deref()
                    .and_then(|l| resolve(&url, &fill(l, base)))
                {
                    out.push((to, "redirect"));
                }
            }
            if res
                .content_type
                .is_some_and(|ct| ct.starts_with("text/html"))
            {
                let doc_base = match &res.base_href {
                    Some(b) => url.join(b).expect("base href resolves"),
                    None => url.clone(),
                };
                for link in &res.links {
                    if let Some(to) = resolve(&doc_base, &fill(&link.href, base)) {
                        out.push((to, link.kind));
                    }
                }
            }

            for (to, kind) in out {
                let to_key = to.to_string();
                *edges
                    .entry((key.clone(), to_key.clone(), kind.to_owned()))
                    .or_default() += 1;
                if to.origin() != origin {
                    skipped.insert(to_key);
                    continue;
                }
                let cost = if kind == "redirect" { 0 } else { 1 };
                let nd = d + cost;
                if depth.get(&to_key).is_none_or(|&old| nd < old) {
                    depth.insert(to_key, nd);
                    if cost == 0 {
                        queue.push_front((to, nd));
                    } else {
                        queue.push_back((to, nd));
                    }
                }
            }
        }

        Expected {
            fetched,
            skipped,
            edges,
        }
    }
}

impl Expected {
    /// Number of edges (counting duplicates) leaving `from`.
    pub fn out_degree(&self, from: &str) -> usize {
        self.edges
            .iter()
            .filter(|((f, _, _), _)| f == from)
            .map(|(_, n)| n)
            .sum()
    }

    /// Occurrences of the edge `(from, to, kind)`; 0 when absent.
    pub fn edge_count(&self, from: &str, to: &str, kind: &str) -> usize {
        self.edges
            .get(&(from.to_owned(), to.to_owned(), kind.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

fn fill(template: &str, base: &str) -> String {
    if !template.contains("{{") {
        return template.to_owned();
    }
    let upper = match base.split_once("://") {
        Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_uppercase()),
        None => base.to_owned(),
    };
    template.replace(BASE_UPPER, &upper).replace(BASE, base)
}

/// The request target a crawler sends for `url`.
pub(super) fn path_and_query(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}

/// Resolve `href` against `base` and canonicalise; `None` for what is not a web link
/// (mailto:, javascript:, unparsable).
fn resolve(base: &Url, href: &str) -> Option<Url> {
    let url = base.join(href.trim()).ok()?;
    matches!(url.scheme(), "http" | "https").then(|| canonical(&url))
}

/// Canonical form, independent of trawl's own code: the url crate already lower-cases scheme
/// and host, resolves dot segments and drops default ports; on top, drop the fragment and
/// decode percent-escapes of unreserved characters in path and query.
fn canonical(url: &Url) -> Url {
    let mut url = url.clone();
    url.set_fragment(None);
    let path = decode_unreserved(url.path());
    let query = url.query().map(decode_unreserved);
    url.set_path(&path);
    url.set_query(query.as_deref());
    // Decoding may have produced new dot segments (`%2E`): parse once more to resolve them.
    Url::parse(url.as_str()).expect("canonical URL parses")
}

fn decode_unreserved(s: &str) -> String {
    // Input is a serialised URL component, so ASCII only.
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let (hi, lo) = (bytes[i + 1], bytes[i + 2]);
            if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() {
                let b = (hex_value(hi) << 4) | hex_value(lo);
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                    out.push(b as char);
                    i += 3;
                    continue;
                }
            }
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

fn hex_value(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}
