//! trawl-bench-site: a generated site served from memory on 127.0.0.1.
//!
//! Every page body is produced on request, deterministically, from the page number (a
//! splitmix64 stream seeded by it), so the same options always give the same link graph
//! and nothing large is pre-rendered. Padding text is one shared pre-generated block
//! copied in slices. Request accounting uses flat atomic arrays indexed by page number
//! (and a bitset for the unique `/u/<page>/<slot>` URLs), never a map of strings.
//!
//! Paths:
//! - `/` is page 0, `/p/<i>` is page i (0 < i < pages);
//! - `/u/<page>/<slot>` a unique leaf URL (exists only where page <page> links to it);
//! - `/robots.txt` permissive with `--robots`, else 404;
//! - `/stats` JSON counters (not itself counted).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[derive(Parser, Debug, Clone)]
#[command(name = "trawl-bench-site", about = "Serve a generated site on 127.0.0.1 for crawler benchmarks")]
struct Opts {
    /// Number of real pages (page 0 is `/`, the others `/p/<i>`).
    #[arg(long, default_value_t = 1000)]
    pages: u32,
    /// Links per page (slot 0 links to the next page, so every page is reachable).
    #[arg(long, default_value_t = 50)]
    links: u32,
    /// Approximate HTML body size in bytes (padded with text).
    #[arg(long, default_value_t = 30000)]
    page_size: usize,
    /// Share (0..1) of the random link slots pointing at never-repeated URLs `/u/<page>/<slot>`.
    #[arg(long, default_value_t = 0.0)]
    unique_share: f64,
    /// Delay before each response, in milliseconds (a timer, no thread blocked).
    #[arg(long, default_value_t = 0)]
    latency: u64,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serve a permissive robots.txt (default: 404).
    #[arg(long)]
    robots: bool,
    /// Tokio worker threads for the server.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Print the ideal-crawler floor for concurrency C as one JSON line, then exit.
    #[arg(long, value_name = "C")]
    print_floor: Option<u32>,
    /// Seed mixed into every page's generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// One outgoing link of a page.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Link {
    Page(u32),
    Unique { page: u32, slot: u32 },
}

struct SplitMix(u64);
impl SplitMix {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The links of page `i`, in order, passed to `f`. The single source of truth for the
/// link graph: the renderer and the floor simulation both call it.
#[inline]
fn links_of(o: &Opts, i: u32, mut f: impl FnMut(Link)) {
    let n = o.pages as u64;
    let mut rng = SplitMix(o.seed.wrapping_mul(0x1000_0000_01B3) ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    // unique_share as a threshold on a 53-bit uniform draw
    let thresh = (o.unique_share.clamp(0.0, 1.0) * (1u64 << 53) as f64) as u64;
    for slot in 0..o.links {
        if slot == 0 && (i as u64) + 1 < n {
            f(Link::Page(i + 1));
            continue;
        }
        let r = rng.next();
        if (r >> 11) < thresh {
            f(Link::Unique { page: i, slot });
        } else {
            f(Link::Page((rng.next() % n) as u32));
        }
    }
}

/// ~64 KiB of pseudo-words, sliced to pad pages.
fn padding_block() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "lorem", "ipsum", "crawl", "frontier", "harbour", "quartz", "meadow", "signal", "lattice",
        "amber", "vector", "ridge", "copper", "willow", "static", "orbit", "tunnel", "granite",
        "pixel", "echo", "marble", "sparrow", "delta", "canyon",
    ];
    let mut rng = SplitMix(42);
    let mut v = Vec::with_capacity(66_000);
    while v.len() < 65_536 {
        v.extend_from_slice(WORDS[(rng.next() % WORDS.len() as u64) as usize].as_bytes());
        v.push(if rng.next() % 13 == 0 { b'.' } else { b' ' });
    }
    v
}

fn push_u32(buf: &mut Vec<u8>, mut x: u32) {
    let mut tmp = [0u8; 10];
    let mut k = tmp.len();
    loop {
        k -= 1;
        tmp[k] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[k..]);
}

fn render_page(o: &Opts, pad: &[u8], i: u32, cap_hint: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(cap_hint);
    b.extend_from_slice(b"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Page ");
    push_u32(&mut b, i);
    b.extend_from_slice(b"</title></head><body>\n<h1>Page ");
    push_u32(&mut b, i);
    b.extend_from_slice(b"</h1>\n<ul>\n");
    links_of(o, i, |l| {
        match l {
            Link::Page(0) => b.extend_from_slice(b"<li><a href=\"/\">"),
            Link::Page(p) => {
                b.extend_from_slice(b"<li><a href=\"/p/");
                push_u32(&mut b, p);
                b.extend_from_slice(b"\">");
            }
            Link::Unique { page, slot } => {
                b.extend_from_slice(b"<li><a href=\"/u/");
                push_u32(&mut b, page);
                b.push(b'/');
                push_u32(&mut b, slot);
                b.extend_from_slice(b"\">");
            }
        }
        b.extend_from_slice(b"link</a></li>\n");
    });
    b.extend_from_slice(b"</ul>\n");
    // pad with text paragraphs up to page_size
    let tail = b"</body></html>\n";
    let mut off = (i as usize).wrapping_mul(7919) % (pad.len() / 2);
    while b.len() + tail.len() + 8 < o.page_size {
        let want = (o.page_size - b.len() - tail.len() - 8).min(2000);
        b.extend_from_slice(b"<p>");
        b.extend_from_slice(&pad[off..off + want]);
        b.extend_from_slice(b"</p>\n");
        off = (off + want) % (pad.len() / 2);
    }
    b.extend_from_slice(tail);
    b
}

/// Request accounting. `pages[i]` counts fetches of page i (saturating is unnecessary
/// at u32); `uniq` is two bits per unique slot (seen once, seen twice).
struct Stats {
    requests: AtomicU64,
    page_hits: Vec<AtomicU32>,
    uniq: Vec<AtomicU64>,
    uniq_requests: AtomicU64,
    uniq_distinct: AtomicU64,
    dup_paths: AtomicU64,
    dup_fetches: AtomicU64,
    not_found: AtomicU64,
    robots: AtomicU64,
    bytes: AtomicU64,
}

impl Stats {
    fn new(o: &Opts) -> Self {
        let uniq_slots = if o.unique_share > 0.0 { o.pages as u64 * o.links as u64 } else { 0 };
        // two bits per slot, 32 slots per word; the zeroed vector is not touched until used
        let words = uniq_slots.div_ceil(32) as usize;
        Stats {
            requests: AtomicU64::new(0),
            page_hits: (0..o.pages).map(|_| AtomicU32::new(0)).collect(),
            uniq: (0..words).map(|_| AtomicU64::new(0)).collect(),
            uniq_requests: AtomicU64::new(0),
            uniq_distinct: AtomicU64::new(0),
            dup_paths: AtomicU64::new(0),
            dup_fetches: AtomicU64::new(0),
            not_found: AtomicU64::new(0),
            robots: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    fn hit_page(&self, i: u32) {
        match self.page_hits[i as usize].fetch_add(1, Relaxed) {
            0 => {}
            1 => {
                self.dup_paths.fetch_add(1, Relaxed);
                self.dup_fetches.fetch_add(1, Relaxed);
            }
            _ => {
                self.dup_fetches.fetch_add(1, Relaxed);
            }
        }
    }

    fn hit_unique(&self, idx: u64) {
        self.uniq_requests.fetch_add(1, Relaxed);
        let w = &self.uniq[(idx / 32) as usize];
        let shift = (idx % 32) * 2;
        let first = 1u64 << shift;
        let second = 2u64 << shift;
        let prev = w.fetch_or(first, Relaxed);
        if prev & first == 0 {
            self.uniq_distinct.fetch_add(1, Relaxed);
            return;
        }
        self.dup_fetches.fetch_add(1, Relaxed);
        let prev = w.fetch_or(second, Relaxed);
        if prev & second == 0 {
            self.dup_paths.fetch_add(1, Relaxed);
        }
    }

    fn json(&self, o: &Opts) -> String {
        let mut distinct = 0u64;
        let mut page_requests = 0u64;
        for h in &self.page_hits {
            let v = h.load(Relaxed) as u64;
            page_requests += v;
            distinct += (v > 0) as u64;
        }
        format!(
            concat!(
                "{{\"requests\":{},\"pages_total\":{},\"page_requests\":{},\"pages_fetched\":{},",
                "\"pages_missing\":{},\"unique_requests\":{},\"unique_fetched\":{},",
                "\"dup_paths\":{},\"dup_fetches\":{},\"not_found\":{},\"robots\":{},\"bytes\":{}}}\n"
            ),
            self.requests.load(Relaxed),
            o.pages,
            page_requests,
            distinct,
            o.pages as u64 - distinct,
            self.uniq_requests.load(Relaxed),
            self.uniq_distinct.load(Relaxed),
            self.dup_paths.load(Relaxed),
            self.dup_fetches.load(Relaxed),
            self.not_found.load(Relaxed),
            self.robots.load(Relaxed),
            self.bytes.load(Relaxed),
        )
    }
}

struct Site {
    o: Opts,
    pad: Vec<u8>,
    stats: Stats,
    /// Pre-rendered bodies when the site is small (pages * page_size <= 64 MiB).
    cache: Option<Vec<Bytes>>,
    tiny: Bytes,
}

enum Route {
    Page(u32),
    Unique(u32, u32),
    Robots,
    Stats,
    NotFound,
}

fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn route(o: &Opts, path: &str) -> Route {
    match path {
        "/" => return Route::Page(0),
        "/robots.txt" => return Route::Robots,
        "/stats" => return Route::Stats,
        _ => {}
    }
    if let Some(rest) = path.strip_prefix("/p/") {
        if let Some(i) = parse_u32(rest) {
            if i > 0 && i < o.pages {
                return Route::Page(i);
            }
        }
    } else if let Some(rest) = path.strip_prefix("/u/") {
        if let Some((a, b)) = rest.split_once('/') {
            if let (Some(p), Some(s)) = (parse_u32(a), parse_u32(b)) {
                if p < o.pages && s < o.links && o.unique_share > 0.0 {
                    return Route::Unique(p, s);
                }
            }
        }
    }
    Route::NotFound
}

fn html(body: Bytes) -> Response<Full<Bytes>> {
    Response::builder()
        .header("content-type", "text/html; charset=utf-8")
        .body(Full::new(body))
        .unwrap()
}

async fn handle(site: Arc<Site>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let o = &site.o;
    let r = route(o, req.uri().path());
    if !matches!(r, Route::Stats) {
        site.stats.requests.fetch_add(1, Relaxed);
        if o.latency > 0 {
            tokio::time::sleep(Duration::from_millis(o.latency)).await;
        }
    }
    let resp = match r {
        Route::Page(i) => {
            site.stats.hit_page(i);
            let body = match &site.cache {
                Some(c) => c[i as usize].clone(),
                None => Bytes::from(render_page(o, &site.pad, i, o.page_size + 64)),
            };
            site.stats.bytes.fetch_add(body.len() as u64, Relaxed);
            html(body)
        }
        Route::Unique(p, s) => {
            site.stats.hit_unique(p as u64 * o.links as u64 + s as u64);
            site.stats.bytes.fetch_add(site.tiny.len() as u64, Relaxed);
            html(site.tiny.clone())
        }
        Route::Robots if o.robots => {
            site.stats.robots.fetch_add(1, Relaxed);
            Response::builder()
                .header("content-type", "text/plain")
                .body(Full::new(Bytes::from_static(b"User-agent: *\nAllow: /\n")))
                .unwrap()
        }
        Route::Stats => Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(site.stats.json(o))))
            .unwrap(),
        Route::Robots | Route::NotFound => {
            if matches!(r, Route::Robots) {
                site.stats.robots.fetch_add(1, Relaxed);
            } else {
                site.stats.not_found.fetch_add(1, Relaxed);
            }
            Response::builder()
                .status(StatusCode::NOT_FOUND)
                .header("content-type", "text/plain")
                .body(Full::new(Bytes::from_static(b"not found\n")))
                .unwrap()
        }
    };
    Ok(resp)
}

/// The ideal crawler: zero CPU cost, `c` requests in flight, each taking exactly one
/// latency unit, a URL requestable only once a page linking to it has been fetched,
/// discovered URLs taken first-in first-out. With a fixed latency everything started
/// together ends together, so the crawl is a sequence of rounds of at most `c` fetches.
/// Returns (rounds, urls fetched, real pages reached).
fn floor_rounds(o: &Opts, c: u32) -> (u64, u64, u64) {
    floor_rounds_of(o.pages, c, |p, f| links_of(o, p, f))
}

fn floor_rounds_of(pages: u32, c: u32, links: impl Fn(u32, &mut dyn FnMut(Link))) -> (u64, u64, u64) {
    const UNIQUE: u32 = u32::MAX;
    let c = c.max(1) as usize;
    let mut seen = vec![false; pages as usize];
    let mut q: VecDeque<u32> = VecDeque::new();
    seen[0] = true;
    q.push_back(0);
    let (mut rounds, mut fetched, mut reached) = (0u64, 0u64, 1u64);
    let mut batch = Vec::with_capacity(c);
    while !q.is_empty() {
        rounds += 1;
        batch.clear();
        for _ in 0..c.min(q.len()) {
            batch.push(q.pop_front().unwrap());
        }
        for &p in &batch {
            fetched += 1;
            if p == UNIQUE {
                continue;
            }
            links(p, &mut |l| match l {
                Link::Page(t) => {
                    if !seen[t as usize] {
                        seen[t as usize] = true;
                        reached += 1;
                        q.push_back(t);
                    }
                }
                Link::Unique { .. } => q.push_back(UNIQUE),
            });
        }
    }
    (rounds, fetched, reached)
}

fn main() {
    let o = Opts::parse();
    assert!(o.pages >= 1, "--pages must be at least 1");
    assert!(o.links >= 1, "--links must be at least 1");

    if let Some(c) = o.print_floor {
        let (rounds, urls, pages) = floor_rounds(&o, c);
        let lat = o.latency as f64 / 1000.0;
        println!(
            "{{\"concurrency\":{},\"latency_s\":{},\"rounds\":{},\"urls\":{},\"pages_reachable\":{},\"floor_s\":{:.3},\"floor_excl_root_s\":{:.3}}}",
            c,
            lat,
            rounds,
            urls,
            pages,
            rounds as f64 * lat,
            rounds.saturating_sub(1) as f64 * lat
        );
        return;
    }

    let pad = padding_block();
    let cache = if (o.pages as u64) * (o.page_size as u64) <= 64 << 20 {
        Some((0..o.pages).map(|i| Bytes::from(render_page(&o, &pad, i, o.page_size + 64))).collect())
    } else {
        None
    };
    let tiny = Bytes::from_static(b"<!doctype html><html><head><title>leaf</title></head><body>leaf</body></html>\n");
    let site = Arc::new(Site { stats: Stats::new(&o), o: o.clone(), pad, cache, tiny });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], o.port))).await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "listening on http://127.0.0.1:{}", addr.port()).ok();
            out.flush().ok();
        }
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            stream.set_nodelay(true).ok();
            let site = site.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| handle(site.clone(), req));
                let _ = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(args: &[&str]) -> Opts {
        let mut v = vec!["trawl-bench-site"];
        v.extend_from_slice(args);
        Opts::parse_from(v)
    }

    #[test]
    fn flat_list_floor() {
        // A root linking to 1,000 leaf pages, concurrency 100: the root, then 10 rounds.
        let (rounds, urls, pages) = floor_rounds_of(1001, 100, |p, f| {
            if p == 0 {
                (1..=1000).for_each(|t| f(Link::Page(t)));
            }
        });
        assert_eq!((rounds, urls, pages), (11, 1001, 1001)); // 5.5 s at 0.5 s, 5.0 s without the root
        // the generated graph reaches every page through the i -> i+1 links
        let o = opts(&["--pages", "1000", "--links", "50", "--latency", "500"]);
        let (rounds, _, pages) = floor_rounds(&o, 100);
        assert_eq!(pages, 1000);
        assert!(rounds >= 11, "{rounds}");
    }

    #[test]
    fn deterministic_and_sized() {
        let o = opts(&["--pages", "50", "--links", "20", "--page-size", "5000"]);
        let pad = padding_block();
        let a = render_page(&o, &pad, 7, 0);
        let b = render_page(&o, &pad, 7, 0);
        assert_eq!(a, b);
        assert!(a.len() >= 4900 && a.len() <= 5100, "{}", a.len());
        assert!(String::from_utf8(a).unwrap().contains("href=\"/p/8\""));
    }

    #[test]
    fn unique_links_route() {
        let o = opts(&["--pages", "10", "--links", "10", "--unique-share", "1"]);
        let mut n = 0;
        links_of(&o, 3, |l| {
            if let Link::Unique { page, slot } = l {
                assert_eq!(page, 3);
                assert!(matches!(route(&o, &format!("/u/{page}/{slot}")), Route::Unique(3, _)));
                n += 1;
            }
        });
        assert_eq!(n, 9);
        assert!(matches!(route(&o, "/u/3/10"), Route::NotFound));
        assert!(matches!(route(&o, "/p/10"), Route::NotFound));
        assert!(matches!(route(&o, "/p/01x"), Route::NotFound));
    }
}
