//! Micro-benchmarks of the per-page hot path (issue 4): link extraction in MB/s on
//! documentation-shaped pages, canonicalisation and admission in ns per link, and the
//! store writer in pages + edges per second into a real SQLite file.
//!
//! `cargo bench --bench hot_path` measures; `cargo bench --bench hot_path -- --test` runs
//! each benchmark once (a smoke test). Groups: `extract`, `canonical`, `admit`, `store`,
//! `visited`.
//!
//! The pages are generated, deterministic, and shaped like a real documentation site
//! (DESIGN.md "Where the time goes": ~21 KB and ~86 links per page): a head with styles,
//! scripts and a canonical link, a navigation tree of relative links, breadcrumbs,
//! sections with headerlinks, inline internal and external links, highlighted code
//! blocks (many spans, no links), entities, and a footer.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tokio::sync::Notify;
use url::Url;

use trawl::internals::{
    canonical_key_into, key_hash, Drain, Edge, EdgeSpec, Extractor, Frontier, Gate, Held,
    HostPolicy, Link, NewHost, NewUrl, Outlinks, PageRecord, Pending, Position, Rules, Scope, Seen,
    StoreWriter, Visited,
};
use trawl::store::{OpenMode, SqliteStore};
use trawl::ScopeMode;
use trawl::{CrawlConfig, LinkKind, PageResult};

/// Pages per benchmark pass; the site they come from has this many pages.
const PAGES: usize = 64;
const SITE_PAGES: u64 = 2000;
/// HTTP body chunks as a server sends them.
const CHUNK: usize = 16 << 10;

/// splitmix64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "crawler",
    "frontier",
    "the",
    "a",
    "of",
    "configuration",
    "request",
    "and",
    "is",
    "to",
    "page",
    "link",
    "store",
    "resume",
    "host",
    "with",
    "when",
    "every",
    "queue",
    "timeout",
    "robots",
    "sitemap",
    "canonical",
    "export",
    "graph",
    "in",
    "for",
    "option",
    "value",
];
const SECTIONS: &[&str] = &[
    "guide",
    "reference",
    "howto",
    "api",
    "tutorial",
    "internals",
];
const EXTERNAL: &[&str] = &[
    "https://github.com/example/trawl/issues/",
    "https://www.rfc-editor.org/rfc/rfc9309#section-",
    "https://docs.python.org/3/library/urllib.parse.html#",
    "http://example.com/wiki/Page_",
];

fn words(r: &mut Rng, n: usize, out: &mut String) {
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(r.pick(WORDS));
    }
}

fn page_path(i: u64) -> String {
    format!(
        "/en/latest/{}/page-{i}.html",
        SECTIONS[(i % SECTIONS.len() as u64) as usize]
    )
}

/// A documentation-shaped page of 20-30 KB with 50-90 links (most of them relative).
fn doc_page(i: u64) -> (Url, String) {
    let mut r = Rng(i.wrapping_mul(0x5851_F42D_4C95_7F2D) ^ 7);
    let base = Url::parse(&format!("https://docs.example.org{}", page_path(i))).unwrap();
    let target_size = 20_000 + r.below(10_000) as usize;
    let target_links = 50 + r.below(41) as usize;
    let mut links = 0;
    let mut h = String::with_capacity(32 << 10);
    let section = SECTIONS[(i % SECTIONS.len() as u64) as usize];
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\" data-content_root=\"../\"><head>\n\
         <meta charset=\"utf-8\" />\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0\" />\n\
         <title>Page {i} &mdash; trawl 0.1 documentation</title>\n\
         <link rel=\"stylesheet\" type=\"text/css\" href=\"../_static/pygments.css?v=80d5e7a1\" />\n\
         <link rel=\"stylesheet\" type=\"text/css\" href=\"../_static/css/theme.css?v=19f00094\" />\n\
         <link rel=\"canonical\" href=\"https://docs.example.org{}\" />\n\
         <link rel=\"index\" title=\"Index\" href=\"../genindex.html\" />\n\
         <script src=\"../_static/documentation_options.js?v=5929fcd5\"></script>\n\
         <script>window.dataLayer = window.dataLayer || []; function gtag(){{dataLayer.push(arguments);}}\n\
         if (a < b && b > c) {{ document.querySelector('.nav').classList.toggle('open'); }}</script>\n\
         </head>\n<body class=\"wy-body-for-nav\">\n<div class=\"wy-grid-for-nav\">\n\
         <nav data-toggle=\"wy-nav-shift\" class=\"wy-nav-side\"><div class=\"wy-side-scroll\">\n\
         <a href=\"../index.html\" class=\"icon icon-home\">trawl</a>\n\
         <div class=\"wy-menu wy-menu-vertical\" role=\"navigation\" aria-label=\"Navigation menu\">\n<ul class=\"current\">\n",
        page_path(i)
    );
    links += 5;
    // The navigation tree: the same on every page of a section, as on real sites.
    let nav = 28 + (i % 8) as usize;
    for k in 0..nav as u64 {
        let target = (k * 37 + i / 50 * 11) % SITE_PAGES;
        let s = SECTIONS[(target % SECTIONS.len() as u64) as usize];
        let href = if s == section {
            format!("page-{target}.html")
        } else {
            format!("../{s}/page-{target}.html")
        };
        let _ = write!(
            h,
            "<li class=\"toctree-l1\"><a class=\"reference internal\" href=\"{href}\">Topic {target}: "
        );
        words(&mut r, 3, &mut h);
        h.push_str("</a></li>\n");
        links += 1;
    }
    h.push_str("</ul>\n</div></div></nav>\n<section class=\"wy-nav-content-wrap\">\n");
    let _ = write!(
        h,
        "<div role=\"navigation\" aria-label=\"Page navigation\"><ul class=\"wy-breadcrumbs\">\
         <li><a href=\"../index.html\" class=\"icon icon-home\" aria-label=\"Home\"></a></li>\
         <li class=\"breadcrumb-item\"><a href=\"index.html\">{section}</a> &raquo;</li>\
         <li class=\"breadcrumb-item active\">Page {i}</li></ul><hr/></div>\n\
         <div role=\"main\" class=\"document\"><div itemprop=\"articleBody\">\n"
    );
    links += 2;
    let mut sec = 0;
    let footer_links = 4;
    while links + footer_links < target_links {
        sec += 1;
        let _ = write!(
            h,
            "<section id=\"section-{sec}\">\n<h2>Section {sec}<a class=\"headerlink\" href=\"#section-{sec}\" title=\"Link to this heading\">¶</a></h2>\n<p>"
        );
        links += 1;
        for _ in 0..3 + r.below(4) {
            let n = 12 + r.below(20) as usize;
            words(&mut r, n, &mut h);
            if links + footer_links < target_links {
                match r.below(6) {
                    0 => {
                        let _ = write!(
                            h,
                            " <a class=\"reference external\" href=\"{}{}\">see here</a> ",
                            r.pick(EXTERNAL),
                            r.below(500)
                        );
                    }
                    1 => {
                        let _ = write!(
                            h,
                            " <a class=\"reference internal\" href=\"../api/page-{}.html#trawl.Crawler.run\" title=\"trawl.Crawler.run\"><code class=\"xref py py-meth docutils literal notranslate\"><span class=\"pre\">Crawler.run()</span></code></a> ",
                            r.below(SITE_PAGES)
                        );
                    }
                    2 => {
                        let _ = write!(
                            h,
                            " <a href=\"../search.html?q=frontier&amp;check_keywords=yes&amp;area=default\">search</a> "
                        );
                    }
                    _ => {
                        let t = r.below(SITE_PAGES);
                        let _ = write!(
                            h,
                            " <a class=\"reference internal\" href=\"../{}/page-{t}.html#sec-{}\"><span class=\"std std-ref\">the ",
                            SECTIONS[(t % SECTIONS.len() as u64) as usize],
                            r.below(9)
                        );
                        words(&mut r, 2, &mut h);
                        h.push_str(" chapter</span></a> ");
                    }
                }
                links += 1;
            }
            h.push_str(" &amp; <code class=\"docutils literal notranslate\"><span class=\"pre\">--max-pages</span></code>. ");
        }
        h.push_str("</p>\n<div class=\"highlight-rust notranslate\"><div class=\"highlight\"><pre><span></span>");
        for _ in 0..1 + r.below(3) {
            let _ = writeln!(
                h,
                "<span class=\"kd\">let</span><span class=\"w\"> </span><span class=\"n\">x{}</span><span class=\"w\"> </span><span class=\"o\">=</span><span class=\"w\"> </span><span class=\"n\">crawler</span><span class=\"p\">.</span><span class=\"n\">run</span><span class=\"p\">(</span><span class=\"s\">&quot;{}&quot;</span><span class=\"p\">)</span><span class=\"o\">?</span><span class=\"p\">;</span>",
                r.below(100),
                r.pick(WORDS)
            );
        }
        h.push_str("</pre></div></div>\n</section>\n");
    }
    // Then prose without links up to the page's size.
    while h.len() < target_size - 900 {
        h.push_str("<p>");
        words(&mut r, 40, &mut h);
        h.push_str(" <em>see</em> <code class=\"docutils literal notranslate\"><span class=\"pre\">crawl.toml</span></code>.</p>\n");
    }
    let prev = (i + SITE_PAGES - 1) % SITE_PAGES;
    let next = (i + 1) % SITE_PAGES;
    let _ = write!(
        h,
        "</div></div>\n<footer><div class=\"rst-footer-buttons\" role=\"navigation\">\
         <a href=\"../{}/page-{prev}.html\" class=\"btn btn-neutral float-left\" rel=\"prev\">Previous</a>\
         <a href=\"../{}/page-{next}.html\" class=\"btn btn-neutral float-right\" rel=\"next\">Next</a></div>\n\
         <p>&#169; Copyright 2026, the trawl authors. Built with <a href=\"https://www.sphinx-doc.org/\" rel=\"nofollow\">Sphinx</a> \
         using a <a href=\"https://github.com/readthedocs/sphinx_rtd_theme\">theme</a>.</p></footer>\n\
         </section></div>\n</body></html>\n",
        SECTIONS[(prev % SECTIONS.len() as u64) as usize],
        SECTIONS[(next % SECTIONS.len() as u64) as usize],
    );
    (base, h)
}

fn pages() -> Vec<(Url, String)> {
    (0..PAGES as u64).map(|i| doc_page(i * 31 + 5)).collect()
}

fn extract_chunked(base: &Url, html: &str) -> Vec<Link> {
    let mut x = Extractor::new(base.clone(), Some("utf-8"));
    for chunk in html.as_bytes().chunks(CHUNK) {
        x.write(chunk).unwrap();
    }
    x.end().unwrap().links
}

fn bench_extract(c: &mut Criterion) {
    let pages = pages();
    let bytes: usize = pages.iter().map(|(_, h)| h.len()).sum();
    let links: usize = pages.iter().map(|(b, h)| extract_chunked(b, h).len()).sum();
    eprintln!(
        "extract: {PAGES} pages, {:.1} KB and {:.1} links per page",
        bytes as f64 / PAGES as f64 / 1e3,
        links as f64 / PAGES as f64
    );
    let mut g = c.benchmark_group("extract");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("doc_pages_16k_chunks", |b| {
        b.iter(|| {
            for (base, html) in &pages {
                black_box(extract_chunked(base, html));
            }
        })
    });
    g.finish();
}

/// The links of every page, as extraction yields them (absolute, fragment kept).
fn all_links() -> Vec<Url> {
    pages()
        .iter()
        .flat_map(|(b, h)| extract_chunked(b, h))
        .map(|l| l.url)
        .collect()
}

fn bench_canonical(c: &mut Criterion) {
    let links = all_links();
    let mut g = c.benchmark_group("canonical");
    g.throughput(Throughput::Elements(links.len() as u64));
    g.bench_function("key_and_hash_per_link", |b| {
        let mut key = String::with_capacity(128);
        b.iter(|| {
            for url in &links {
                canonical_key_into(url, &mut key);
                black_box(key_hash(&key));
            }
        })
    });
    g.finish();
}

fn gate() -> (Gate, Arc<Pending>) {
    let seed = Url::parse("https://docs.example.org/en/latest/").unwrap();
    let scope = Scope::new(&[seed], ScopeMode::Host, &[], &[]).unwrap();
    let pending = Arc::new(Pending::default());
    let wake = Arc::new(Notify::new());
    let frontier = Arc::new(Frontier::new(
        HostPolicy::concurrency_only(32),
        pending.clone(),
        wake.clone(),
    ));
    let config = CrawlConfig {
        max_path_segments: 64,
        ..CrawlConfig::default()
    };
    let rules = Arc::new(Rules::new(scope, &config, None));
    let gate = Gate::new(
        rules,
        Visited::new(),
        pending.clone(),
        frontier,
        Drain::new(0, wake),
    );
    (gate, pending)
}

/// A page's links found at `depth`, followed.
fn outlinks(depth: u32, links: Vec<Link>) -> Outlinks {
    Outlinks::Links {
        depth,
        follow: true,
        links,
    }
}

fn bench_admit(c: &mut Criterion) {
    let pages: Vec<Vec<Link>> = pages().iter().map(|(b, h)| extract_chunked(b, h)).collect();
    let n: usize = pages.iter().map(Vec::len).sum();
    let (gate, pending) = gate();
    // Every link known already: the common case (most links point at pages seen before).
    for (i, links) in pages.iter().enumerate() {
        gate.admit_outlinks(i as u64 + 1, outlinks(1, links.clone()));
    }
    drop(pending.take());
    let mut g = c.benchmark_group("admit");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("known_links_per_link", |b| {
        b.iter_batched(
            || pages.clone(),
            |pages| {
                for (i, links) in pages.into_iter().enumerate() {
                    black_box(gate.admit_outlinks(i as u64 + 1, outlinks(2, links)));
                }
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Pages per writer pass, edges and new URLs per page as on the documentation site.
const WRITER_PAGES: u64 = 2000;
const EDGES_PER_PAGE: u64 = 86;
const NEW_URLS_PER_PAGE: u64 = 2;

/// Send a crawl's worth of pages through a fresh writer; returns the time from the first
/// message to the last commit (opening the file is not counted).
fn write_crawl(dir: &std::path::Path, rt: &tokio::runtime::Runtime) -> Duration {
    let path = dir.join(format!("bench-{}.db", next_file_number()));
    let store = SqliteStore::open(&path, OpenMode::Crawl).unwrap();
    store
        .write_crawl(&["https://docs.example.org/".into()], "")
        .unwrap();
    let pending = Arc::new(Pending::default());
    let (thread, handle) = StoreWriter::spawn(store, pending.clone());
    let mut r = Rng(42);
    let start = Instant::now();
    rt.block_on(async {
        pending.push_host(NewHost {
            id: 1,
            name: "docs.example.org".into(),
        });
        let mut next_id = 1u64;
        for page in 0..WRITER_PAGES {
            let id = page + 1;
            // The rows a page's admission adds: itself (first seen one page earlier, here
            // at once) and its new targets.
            while next_id <= id + NEW_URLS_PER_PAGE {
                pending.push_url(NewUrl {
                    id: next_id,
                    host: 1,
                    key: format!("https://docs.example.org{}", page_path(next_id)),
                    url: None,
                    depth: 2,
                    referrer: Some(id.saturating_sub(1).max(1)),
                    skip: None,
                });
                next_id += 1;
            }
            let edges = (0..EDGES_PER_PAGE)
                .map(|k| Edge {
                    dst: 1 + r.below(next_id - 1),
                    spec: EdgeSpec {
                        kind: if k < 3 { LinkKind::Link } else { LinkKind::A },
                        nofollow: false,
                        anchor: (k >= 3).then(|| "Topic 17: the frontier queue".to_string()),
                        // Docs pages link to sections: one link in five has a fragment.
                        fragment: (k % 5 == 4).then(|| "method.push".to_string()),
                        at: Some(Position {
                            line: 40 + k as u32,
                            col: 9,
                        }),
                    },
                })
                .collect();
            handle
                .page(PageRecord {
                    id,
                    result: PageResult {
                        depth: 2,
                        attempts: 1,
                        status: Some(200),
                        content_type: Some("text/html; charset=utf-8".into()),
                        size: Some(24_000),
                        title: Some(format!("Page {id} — trawl 0.1 documentation")),
                        fetched_at: 1_780_000_000_000 + id as i64,
                        fetch_ms: 3,
                        ..PageResult::default()
                    },
                    edges,
                })
                .await
                .unwrap();
        }
        handle.flush().await.unwrap();
    });
    let elapsed = start.elapsed();
    drop(handle);
    thread.join().unwrap();
    let _ = std::fs::remove_file(&path);
    for suffix in ["-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    elapsed
}

fn next_file_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn bench_store(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("store");
    g.sample_size(10);
    g.throughput(Throughput::Elements(WRITER_PAGES * (1 + EDGES_PER_PAGE)));
    g.bench_function("writer_pages_plus_edges", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| write_crawl(dir.path(), &rt)).sum())
    });
    g.finish();
}

/// Lookups in a visited set of 500,000 URLs under a 1 MiB budget (35,000 URLs in
/// memory): a URL still in memory, one moved to disk, and one never seen (the Bloom
/// filters answer most of those without reading the disk).
fn bench_visited(c: &mut Criterion) {
    const N: u64 = 500_000;
    let dir = tempfile::tempdir().unwrap();
    let visited = Visited::with_budget(1 << 20, dir.path()).unwrap();
    let hash = |i: u64| xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes());
    for i in 0..N {
        visited.get_or_admit(hash(i), || Seen {
            id: i,
            depth: 1,
            held: Held::No,
        });
    }
    let mut g = c.benchmark_group("visited");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("known_in_memory", |b| {
        b.iter(|| {
            i = (i + 1) % 10_000;
            black_box(visited.get(hash(N - 1 - i)))
        })
    });
    g.bench_function("known_on_disk", |b| {
        b.iter(|| {
            i = (i + 7_919) % 400_000;
            black_box(visited.get(hash(i)))
        })
    });
    g.bench_function("never_seen", |b| {
        b.iter(|| {
            i += 1;
            black_box(visited.get(hash(N + i)))
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_extract,
    bench_canonical,
    bench_admit,
    bench_store,
    bench_visited
);
criterion_main!(benches);
