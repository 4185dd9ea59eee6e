//! The crawl side of link checking, on both stores: each link's `#fragment` and place in
//! its page, each HTML page's ids, and external links (another loopback address stands
//! for another host) checked once, never crawled: one GET for a page whose ids may be
//! wanted, HEAD for a named file (then GET where HEAD is refused or unreliable).

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};
use trawl::CrawlerBuilder;

/// The external host: every answer a link checker meets. `/gone` comes back once `back`.
async fn external(State(back): State<Arc<AtomicBool>>, req: Request) -> Response {
    let head = req.method() == Method::HEAD;
    let html = |body: &'static str| ([(header::CONTENT_TYPE, "text/html")], body).into_response();
    match req.uri().path() {
        "/ok" => html("<p id=here>fine <a href=/deeper>never crawled</a>"),
        "/page" => html("<h2 id=there>There</h2><a name=also-here></a>"),
        "/gone" if back.load(Ordering::Relaxed) => html("<p>back"),
        "/gone" => StatusCode::NOT_FOUND.into_response(),
        // Servers that refuse HEAD: GET says the link is fine.
        "/nohead" if head => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        "/nohead" => ([(header::CONTENT_TYPE, "text/plain")], "fine").into_response(),
        "/moved" => (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, "/final")],
        )
            .into_response(),
        "/final" => ([(header::CONTENT_TYPE, "text/plain")], "here").into_response(),
        "/file.pdf" => ([(header::CONTENT_TYPE, "application/pdf")], "%PDF-1.4 x").into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The site's front page, linking to `ext` (the external host's base). Built by lines so
/// the test knows where each link is.
fn front(ext: &str) -> String {
    [
        "<!doctype html><html><body>".to_string(),
        "<h1 id=\"intro\">Intro</h1>".to_string(),
        "  <p><a href=\"/doc#section-2\">ok</a> <a href=\"/doc#missing\">missing</a>".to_string(),
        "<a href=\"#intro\">self</a><a href=\"/doc#caf%C3%A9\">encoded</a>".to_string(),
        format!("<a href=\"{ext}/ok\">ok</a> <a href=\"{ext}/gone\">gone</a>"),
        format!("<a href=\"{ext}/nohead\">nohead</a> <a href=\"{ext}/moved\">moved</a>"),
        format!("<a href=\"{ext}/page#there\">there</a><a href=\"{ext}/page#nowhere\">x</a>"),
        format!("<a href=\"{ext}/file.pdf\">pdf</a>"),
        "</body></html>".to_string(),
    ]
    .join("\n")
}

async fn start_external() -> (Adhoc, Arc<AtomicBool>) {
    let back = Arc::new(AtomicBool::new(false));
    let app = Router::new().fallback(external).with_state(back.clone());
    (Adhoc::start_on("127.0.0.2", app).await, back)
}

/// The internal site: the front page (which a test may change) and `/doc`, whose ids some
/// links name.
async fn site(front: Arc<Mutex<String>>) -> Adhoc {
    let app = Router::new()
        .route(
            "/",
            axum::routing::get(move || {
                let front = front.lock().unwrap().clone();
                async move { ([(header::CONTENT_TYPE, "text/html")], front) }
            }),
        )
        .route(
            "/doc",
            axum::routing::get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html")],
                    "<h2 id=\"section-2\">Two</h2><a name=\"old\"></a><p id=\"caf&#xe9;\">",
                )
            }),
        );
    Adhoc::start(app).await
}

/// A page's stored ids as a set: they are kept in no order that matters.
fn id_set(ids: &str) -> std::collections::BTreeSet<String> {
    ids.lines().map(str::to_string).collect()
}

fn query<T: rusqlite::types::FromSql>(db: &Path, sql: &str) -> Vec<(String, T)> {
    support::db::pairs(db, sql)
}

/// Where each `<a` of `html` starts: (line, byte column), both from 1, in order.
fn places(html: &str) -> Vec<(i64, i64)> {
    html.match_indices("<a ")
        .map(|(at, _)| {
            let before = &html[..at];
            let line = before.matches('\n').count() as i64 + 1;
            let col = (at - before.rfind('\n').map_or(0, |n| n + 1)) as i64 + 1;
            (line, col)
        })
        .collect()
}

async fn fragments_and_places_are_stored(store: Backend) {
    let (ext, _) = start_external().await;
    let site = site(Arc::new(Mutex::new(front(&ext.base)))).await;
    store
        .crawl(store.builder("s").seed(format!("{}/", site.base)))
        .await;
    let db = store.db("s").await;
    let front_ids: Vec<(String, Option<String>)> = query(
        &db,
        "SELECT key, ids FROM urls WHERE state = 1 ORDER BY key",
    );
    let ids: BTreeMap<_, _> = front_ids
        .into_iter()
        .map(|(k, v)| (k, v.map(|v| id_set(&v))))
        .collect();
    assert_eq!(ids[&format!("{}/", site.base)], Some(id_set("intro")));
    assert_eq!(
        ids[&format!("{}/doc", site.base)],
        Some(id_set("section-2\nold\ncafé")),
        "ids and names, entities decoded"
    );
    // Every <a> of the front page, in document order, with its fragment and place.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT e.fragment, e.line, e.col FROM edges e JOIN urls s ON s.id = e.src
             WHERE s.key = ?1 AND e.kind = 0 ORDER BY e.rowid",
        )
        .unwrap();
    let edges: Vec<(Option<String>, i64, i64)> = st
        .query_map([format!("{}/", site.base)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let fragments: Vec<Option<&str>> = edges.iter().map(|e| e.0.as_deref()).collect();
    assert_eq!(
        fragments,
        [
            Some("section-2"),
            Some("missing"),
            Some("intro"),
            Some("caf%C3%A9"),
            None,
            None,
            None,
            None,
            Some("there"),
            Some("nowhere"),
            None
        ]
    );
    let at: Vec<(i64, i64)> = edges.iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(at, places(&front(&ext.base)));
    // Without check-external the external host is recorded, never asked.
    assert!(ext.all().is_empty(), "{:?}", ext.all());
    let skipped: Vec<(String, String)> = query(
        &db,
        "SELECT key, skip_reason FROM urls WHERE key LIKE 'http://127.0.0.2%'",
    );
    assert_eq!(skipped.len(), 6);
    assert!(skipped.iter().all(|(_, r)| r == "out-of-scope"));
}

/// Crawls the front page with `check-external` (fragments checked or not) and asserts
/// each check's stored status, the same whichever requests gave it.
async fn check_front(store: &Backend, fragments: bool) -> (Adhoc, Adhoc, PathBuf) {
    let (ext, _) = start_external().await;
    let site = site(Arc::new(Mutex::new(front(&ext.base)))).await;
    let builder = store
        .builder("s")
        .seed(format!("{}/", site.base))
        .check_external(true)
        .check_fragments(fragments)
        .max_attempts(1);
    store.crawl(builder).await;
    let db = store.db("s").await;
    let rows: Vec<(String, i64)> = query(
        &db,
        &format!(
            "SELECT substr(key, {}), status FROM urls WHERE checked = 1 ORDER BY key",
            ext.base.len() + 1
        ),
    );
    let expect = [
        ("/file.pdf", 200),
        ("/final", 200),
        ("/gone", 404),
        ("/moved", 301),
        ("/nohead", 200),
        ("/ok", 200),
        ("/page", 200),
    ];
    assert_eq!(rows, expect.map(|(p, s)| (p.to_string(), s)));
    (ext, site, db)
}

/// The external host's requests by path, in order, against what is expected.
fn assert_methods(ext: &Adhoc, expect: &[(&str, &[&str])]) {
    let mut asked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for hit in ext.all() {
        asked.entry(hit.path).or_default().push(hit.method);
    }
    let expect: BTreeMap<String, Vec<String>> = expect
        .iter()
        .map(|(p, m)| (p.to_string(), m.iter().map(|m| m.to_string()).collect()))
        .collect();
    assert_eq!(asked, expect);
}

async fn external_links_are_checked_once_never_crawled(store: Backend) {
    let (ext, site, db) = check_front(&store, true).await;
    // One GET each (the ids of any page may be wanted); HEAD for the named PDF. Nothing
    // else: no robots.txt, no sitemap, no link of a checked page.
    assert_methods(
        &ext,
        &[
            ("/file.pdf", &["HEAD"]),
            ("/final", &["GET"]),
            ("/gone", &["GET"]),
            ("/moved", &["GET"]),
            ("/nohead", &["GET"]),
            ("/ok", &["GET"]),
            ("/page", &["GET"]),
        ],
    );
    let ids: Vec<(String, Option<String>)> = query(
        &db,
        &format!(
            "SELECT key, ids FROM urls WHERE key = '{0}/page' OR key = '{0}/deeper'",
            ext.base
        ),
    );
    let ids: Vec<_> = ids
        .into_iter()
        .map(|(k, v)| (k, v.map(|v| id_set(&v))))
        .collect();
    assert_eq!(
        ids,
        [(
            format!("{}/page", ext.base),
            Some(id_set("there\nalso-here"))
        )],
        "a checked page's ids are kept, its links are not"
    );
    // The internal pages are crawled as before.
    let crawled: Vec<(String, i64)> = query(
        &db,
        "SELECT key, status FROM urls WHERE checked IS NULL AND state = 1 ORDER BY key",
    );
    let keys: Vec<&str> = crawled.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [format!("{}/", site.base), format!("{}/doc", site.base)]
    );
}

async fn without_fragments_a_check_is_head_first(store: Backend) {
    let (ext, _site, _db) = check_front(&store, false).await;
    // No ids wanted: HEAD says enough, except where it is refused or says 404 (GET may
    // contradict it).
    assert_methods(
        &ext,
        &[
            ("/file.pdf", &["HEAD"]),
            ("/final", &["HEAD"]),
            ("/gone", &["HEAD", "GET"]),
            ("/moved", &["HEAD"]),
            ("/nohead", &["HEAD", "GET"]),
            ("/ok", &["HEAD"]),
            ("/page", &["HEAD"]),
        ],
    );
}

/// The external host's requests, as (method, path).
fn asked(ext: &Adhoc) -> Vec<(String, String)> {
    ext.all().into_iter().map(|h| (h.method, h.path)).collect()
}

async fn checks_are_kept_for_the_next_recrawl(store: Backend) {
    let (ext, _) = start_external().await;
    let page = Arc::new(Mutex::new(front(&ext.base)));
    let site = site(page.clone()).await;
    let with = |b: CrawlerBuilder| {
        b.seed(format!("{}/", site.base))
            .check_external(true)
            .max_attempts(1)
    };
    store.crawl(with(store.builder("s"))).await;
    let first = asked(&ext);
    if store.is_redis() {
        // A new Redis crawl does not take over a file holding another crawl unasked.
        let err = store
            .build(with(store.again("s", 2)))
            .await
            .err()
            .expect("refused");
        assert!(err.is_usage(), "{err}");
        assert!(err.to_string().contains("add --recrawl"), "{err}");
    }
    // The site drops its link to /file.pdf: the next crawl asks the external host nothing,
    // links to the kept answers, and drops the one nobody links to any more.
    let without_pdf = front(&ext.base).replace(&format!("{}/file.pdf", ext.base), "/doc");
    *page.lock().unwrap() = without_pdf;
    store.crawl(with(store.again("s", 2)).recrawl(true)).await;
    assert_eq!(
        asked(&ext),
        first,
        "no check asked again within check-cache-age"
    );
    let db = store.results_file("s");
    let kept: Vec<(String, i64)> = query(
        &db,
        &format!(
            "SELECT substr(key, {}), status FROM urls WHERE checked = 2 ORDER BY key",
            ext.base.len() + 1
        ),
    );
    let paths: Vec<&str> = kept.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["/final", "/gone", "/moved", "/nohead", "/ok", "/page"]
    );
    let linked: Vec<(String, i64)> = query(
        &db,
        &format!(
            "SELECT substr(d.key, {}), count(*) FROM edges e JOIN urls d ON d.id = e.dst
             WHERE d.checked = 2 GROUP BY d.key ORDER BY d.key",
            ext.base.len() + 1
        ),
    );
    assert_eq!(
        linked,
        [
            ("/final", 1),
            ("/gone", 1),
            ("/moved", 1),
            ("/nohead", 1),
            ("/ok", 1),
            ("/page", 2)
        ]
        .map(|(p, n)| (p.to_string(), n)),
        "the new pages' links and the kept redirect"
    );
    // The file holds the new crawl, finished, as a local recrawl leaves it.
    let finished: Vec<(String, bool)> = query(
        &db,
        "SELECT 'finished', finished_at IS NOT NULL AND running_pid IS NULL FROM crawl",
    );
    assert_eq!(finished, [("finished".to_string(), true)]);
    // With check-cache-age 0 every check is asked again.
    let zero = std::time::Duration::ZERO;
    store
        .crawl(
            with(store.again("s", 3))
                .recrawl(true)
                .check_cache_age(zero),
        )
        .await;
    assert_eq!(
        asked(&ext).len(),
        2 * first.len() - 1,
        "all but /file.pdf, no longer linked"
    );
}

async fn recheck_failed_asks_only_what_failed(store: Backend) {
    let (ext, back) = start_external().await;
    let site = site(Arc::new(Mutex::new(front(&ext.base)))).await;
    let first_run = store
        .builder("s")
        .seed(format!("{}/", site.base))
        .check_external(true)
        .max_attempts(1);
    store.crawl(first_run).await;
    let first = asked(&ext).len();
    let site_asked = site.all().len();
    let before: Vec<(String, i64)> = query(
        &store.results_file("s"),
        "SELECT key, count(*) FROM urls GROUP BY key
         UNION ALL SELECT 'edges', count(*) FROM edges ORDER BY 1",
    );
    back.store(true, Ordering::Relaxed);
    // No seed given: the file's are the crawl's.
    let recheck = store
        .again("s", 2)
        .check_external(true)
        .max_attempts(1)
        .recheck_failed(true);
    store.crawl(recheck).await;
    assert_eq!(
        asked(&ext)[first..],
        [("GET".to_string(), "/gone".to_string())],
        "one GET for the failed check, and nothing else"
    );
    assert_eq!(
        site.all().len(),
        site_asked,
        "the site's pages are not asked"
    );
    let db = store.results_file("s");
    let gone: Vec<(String, i64)> = query(
        &db,
        &format!(
            "SELECT key, status FROM urls WHERE key = '{}/gone'",
            ext.base
        ),
    );
    assert_eq!(gone[0].1, 200);
    let after: Vec<(String, i64)> = query(
        &db,
        "SELECT key, count(*) FROM urls GROUP BY key
         UNION ALL SELECT 'edges', count(*) FROM edges ORDER BY 1",
    );
    assert_eq!(after, before, "the same URLs, each once, and edges");
    let finished: Vec<(String, Option<i64>)> = query(&db, "SELECT 'crawl', finished_at FROM crawl");
    assert!(
        finished[0].1.is_some(),
        "the recheck finished the crawl again"
    );
}

/// A second external host that is busy once, slow always, and fine otherwise.
async fn polite_external() -> Adhoc {
    let busy_once = Arc::new(AtomicBool::new(true));
    let app = Router::new().fallback(move |req: Request| {
        let busy = busy_once.swap(false, Ordering::Relaxed) && req.uri().path() == "/busy";
        async move {
            if busy {
                return (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "1")])
                    .into_response();
            }
            if req.uri().path() == "/slow" {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
            ([(header::CONTENT_TYPE, "text/plain")], "fine").into_response()
        }
    });
    Adhoc::start_on("127.0.0.3", app).await
}

async fn external_hosts_keep_their_politeness(store: Backend) {
    let ext = polite_external().await;
    let links: String = ["/busy", "/a", "/b", "/c", "/slow"]
        .iter()
        .map(|p| format!("<a href=\"{}{p}\">{p}</a>\n", ext.base))
        .collect();
    let site = site(Arc::new(Mutex::new(links))).await;
    let delay = std::time::Duration::from_millis(300);
    store
        .crawl(
            store
                .builder("s")
                .seed(format!("{}/", site.base))
                .check_external(true)
                .delay(delay)
                .max_attempts(2)
                .retry_backoff(std::time::Duration::from_millis(50))
                .timeout(std::time::Duration::from_millis(800)),
        )
        .await;
    let hits = ext.all();
    // One request at a time, spaced by `delay` (measured from each request's start; a
    // little early is the timer's slack).
    for pair in hits.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(
            gap >= delay - std::time::Duration::from_millis(30),
            "{gap:?} {hits:?}"
        );
    }
    let busy = ext.hits("/busy");
    assert_eq!(busy.len(), 2, "{hits:?}");
    assert!(
        busy[1] - busy[0] >= std::time::Duration::from_millis(950),
        "Retry-After held"
    );
    assert_eq!(ext.hits("/slow").len(), 2, "a timeout is retried");
    let db = store.db("s").await;
    let rows: Vec<(String, String)> = query(
        &db,
        &format!(
            "SELECT substr(key, {}), coalesce(error_kind, CAST(status AS TEXT)) FROM urls
             WHERE checked = 1 ORDER BY key",
            ext.base.len() + 1
        ),
    );
    let expect = [
        ("/a", "200"),
        ("/b", "200"),
        ("/busy", "200"),
        ("/c", "200"),
        ("/slow", "timeout"),
    ];
    assert_eq!(rows, expect.map(|(p, s)| (p.to_string(), s.to_string())));
}

both_stores!(
    external_hosts_keep_their_politeness,
    fragments_and_places_are_stored,
    external_links_are_checked_once_never_crawled,
    without_fragments_a_check_is_head_first,
    checks_are_kept_for_the_next_recrawl,
    recheck_failed_asks_only_what_failed
);
