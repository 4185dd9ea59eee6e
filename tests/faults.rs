//! Fault injection: trawl against a site that misbehaves on purpose (`support::faults`).
//!
//! One test per family of faults, each crawling `/family/NAME` (the family's fault URLs
//! plus five normal pages), and one crawl of `/`, every family at once. Each states a
//! bound the crawl must end within, and checks that every normal page was fetched exactly
//! once, that each faulted URL is stored with the right state and `error_kind`, and that
//! nothing panicked. The access log is the oracle for what was requested, and when.

use crate::support;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use support::backend::{both_stores, Backend};
use support::faults::{self, Family, FaultServer, OK_PAGES, SILENT, TRAPS};
use trawl::{CrawlerBuilder, Outcome, Summary};

const DONE: i64 = 1;
const FAILED: i64 = 2;
const SKIPPED: i64 = 3;

const MAX_BODY: u64 = 64 * 1024;
const READ_TIMEOUT: Duration = Duration::from_millis(300);
const TIMEOUT: Duration = Duration::from_secs(2);

/// The crawl each test makes (one per test, in the test's own store).
const CRAWL: &str = "faults";

/// A crawl of one family index (or of `/` when `family` is None), with short timeouts,
/// no robots.txt and no sitemaps, one attempt per URL.
fn builder(store: &Backend, server: &FaultServer, family: Option<Family>) -> CrawlerBuilder {
    let seed = match family {
        Some(f) => format!("{}/family/{}", server.base, f.name()),
        None => format!("{}/", server.base),
    };
    store
        .builder(CRAWL)
        .seed(seed)
        .ignore_robots(true)
        .sitemaps(false)
        .concurrency(8)
        .per_host(4)
        .max_body(MAX_BODY)
        .connect_timeout(Duration::from_millis(500))
        .read_timeout(READ_TIMEOUT)
        .timeout(TIMEOUT)
        .max_attempts(1)
        .retry_backoff(Duration::from_millis(10))
}

/// Run the crawl; it must end within `bound`. Its summary, how long it took, and the
/// SQLite file holding what it stored.
async fn crawl_within(
    store: &Backend,
    builder: CrawlerBuilder,
    bound: Duration,
) -> (Summary, Duration, std::path::PathBuf) {
    let started = Instant::now();
    let crawler = store.build(builder).await.unwrap();
    let summary = tokio::time::timeout(bound, crawler.run(std::future::pending()))
        .await
        .unwrap_or_else(|_| panic!("the crawl did not end within {bound:?}"))
        .unwrap();
    let took = started.elapsed();
    (summary, took, store.db(CRAWL).await)
}

/// One stored URL.
#[derive(Debug, Clone, PartialEq, Default)]
struct Row {
    state: i64,
    status: Option<i64>,
    error_kind: Option<String>,
    error: Option<String>,
    attempts: Option<i64>,
    size: Option<i64>,
    truncated: bool,
    content_type: Option<String>,
    title: Option<String>,
    fetch_ms: Option<i64>,
    skip_reason: Option<String>,
}

fn open(db: &Path) -> Connection {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// The row for `url` (a canonical key), if stored.
fn row(db: &Path, url: &str) -> Option<Row> {
    use rusqlite::OptionalExtension;
    open(db)
        .query_row(
            "SELECT state, status, error_kind, error, attempts, size, coalesce(truncated, 0),
                    content_type, title, fetch_ms, skip_reason
             FROM urls WHERE key = ?1",
            [url],
            |r| {
                Ok(Row {
                    state: r.get(0)?,
                    status: r.get(1)?,
                    error_kind: r.get(2)?,
                    error: r.get(3)?,
                    attempts: r.get(4)?,
                    size: r.get(5)?,
                    truncated: r.get::<_, i64>(6)? != 0,
                    content_type: r.get(7)?,
                    title: r.get(8)?,
                    fetch_ms: r.get(9)?,
                    skip_reason: r.get(10)?,
                })
            },
        )
        .optional()
        .unwrap()
}

fn stored(db: &Path, url: &str) -> Row {
    row(db, url).unwrap_or_else(|| panic!("{url} is not stored"))
}

fn count(db: &Path, sql: &str) -> i64 {
    open(db).query_row(sql, [], |r| r.get(0)).unwrap()
}

/// What every scenario must satisfy: the crawl finished, each normal page was fetched
/// exactly once and stored as a 200, nothing is left queued, nothing panicked, no trap
/// link was requested, and no key is stored twice.
fn common(server: &FaultServer, db: &Path, s: &Summary) {
    assert_eq!(s.outcome, Outcome::Finished);
    for ok in OK_PAGES {
        assert_eq!(
            server.hits(ok).len(),
            1,
            "{ok} fetched once; log: {:?}",
            faults::paths(&server.log)
        );
        let r = stored(db, &server.url(ok));
        assert_eq!((r.state, r.status), (DONE, Some(200)), "{ok}: {r:?}");
    }
    assert_eq!(count(db, "SELECT count(*) FROM urls WHERE state = 0"), 0);
    let panics: Vec<String> = {
        let conn = open(db);
        let mut st = conn
            .prepare(
                "SELECT key || ': ' || coalesce(error, '') FROM urls WHERE error_kind = 'panic'",
            )
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(panics.is_empty(), "panicked: {panics:?}");
    for trap in TRAPS {
        assert!(server.hits(trap).is_empty(), "{trap} was fetched");
    }
    assert_eq!(
        count(
            db,
            "SELECT count(*) FROM (SELECT key FROM urls GROUP BY key HAVING count(*) > 1)"
        ),
        0
    );
}

/// Body faults are transport errors: `body` (or `request` if the fault came before the
/// head was read), never `decode`, which means "could not decompress".
fn assert_transport_error(r: &Row, what: &str) {
    assert_eq!(r.state, FAILED, "{what}: {r:?}");
    assert!(
        matches!(r.error_kind.as_deref(), Some("body") | Some("request")),
        "{what}: want error_kind body (or request), got {:?} ({:?})",
        r.error_kind,
        r.error
    );
}

async fn broken_transports_end_in_errors_not_hangs(store: Backend) {
    let server = FaultServer::start().await;
    let bound = Duration::from_secs(10);
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Transport)),
        bound,
    )
    .await;
    common(&server, &db, &s);

    // A body dripping one byte a second is cut by the read timeout.
    let r = stored(&db, &server.url("/slowloris"));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (FAILED, Some(200), Some("timeout")),
        "{r:?}"
    );
    assert!(
        r.fetch_ms.unwrap() < 1_500,
        "cut by the read timeout: {r:?}"
    );
    assert_eq!(server.hits("/slowloris").len(), 1);

    // An endless body stops at the cap: stored, truncated, exactly the cap long.
    let r = stored(&db, &server.url("/endless"));
    assert_eq!(
        (
            r.state,
            r.status,
            r.size,
            r.truncated,
            r.error_kind.as_deref()
        ),
        (DONE, Some(200), Some(MAX_BODY as i64), true, None),
        "{r:?}"
    );

    // The silent host accepted a connection and never answered: a timeout within the
    // configured whole-request timeout.
    let r = stored(&db, &server.url(SILENT));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (FAILED, None, Some("timeout")),
        "{r:?}"
    );
    assert!(
        r.fetch_ms.unwrap() <= (TIMEOUT + Duration::from_millis(500)).as_millis() as i64,
        "{r:?}"
    );
    assert!(server.counters.silent_accepted.load(Ordering::SeqCst) >= 1);

    // The drip-fed and the endless bodies were abandoned: the server saw the hang-ups, and
    // the endless one wrote little more than the cap plus the socket buffers.
    let deadline = Instant::now() + Duration::from_secs(3);
    while !(server.counters.endless_hung_up.load(Ordering::SeqCst)
        && server.counters.slowloris_hung_up.load(Ordering::SeqCst))
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(server.counters.endless_hung_up.load(Ordering::SeqCst));
    assert!(server.counters.slowloris_hung_up.load(Ordering::SeqCst));
    let sent = server.counters.endless_sent.load(Ordering::SeqCst);
    assert!(sent < 32 << 20, "endless body: {sent} bytes sent");
}

async fn cut_and_malformed_bodies_are_body_errors(store: Backend) {
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Transport)),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);
    for path in ["/reset", "/short-length", "/bad-chunked"] {
        let r = stored(&db, &server.url(path));
        assert_transport_error(&r, path);
        assert_eq!(r.status, Some(200), "{path}: {r:?}");
    }
}

async fn cut_and_malformed_bodies_fail_promptly(store: Backend) {
    // What holds today whatever the error kind: each is a failure, none waits for a
    // timeout, none is stored as a success.
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Transport)),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);
    for path in ["/reset", "/short-length", "/bad-chunked"] {
        let r = stored(&db, &server.url(path));
        assert_eq!((r.state, r.status), (FAILED, Some(200)), "{path}: {r:?}");
        assert!(r.error_kind.is_some(), "{path}: {r:?}");
        assert_ne!(r.error_kind.as_deref(), Some("timeout"), "{path}: {r:?}");
        assert!(
            r.fetch_ms.unwrap() < READ_TIMEOUT.as_millis() as i64 + 200,
            "{path}: {r:?}"
        );
        assert_eq!(server.hits(path).len(), 1);
    }
}

async fn a_reset_mid_body_is_retried(store: Backend) {
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Transport)).max_attempts(2),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);
    for path in ["/reset", "/short-length"] {
        assert_eq!(server.hits(path).len(), 2, "{path} retried once");
        let r = stored(&db, &server.url(path));
        assert_eq!(r.attempts, Some(2), "{path}: {r:?}");
        assert_transport_error(&r, path);
    }
}

async fn redirect_loops_and_long_chains_are_cut(store: Backend) {
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Redirects)).max_redirects(10),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);

    // a -> b -> a: the hop that closes the loop carries the error; each fetched once.
    let a = stored(&db, &server.url("/redirect-loop"));
    assert_eq!(
        (a.state, a.status, a.error_kind.as_deref()),
        (DONE, Some(302), None)
    );
    let b = stored(&db, &server.url("/redirect-loop/b"));
    assert_eq!(
        (b.state, b.status, b.error_kind.as_deref()),
        (FAILED, Some(302), Some("redirect-loop")),
        "{b:?}"
    );
    assert_eq!(server.hits("/redirect-loop").len(), 1);
    assert_eq!(server.hits("/redirect-loop/b").len(), 1);

    // /chain/20 -> ... -> /chain/0: ten hops are followed (to /chain/10); the 11th hop,
    // /chain/10 -> /chain/9, is the one past the limit.
    for n in 11..=20 {
        let r = stored(&db, &server.url(&format!("/chain/{n}")));
        assert_eq!((r.state, r.status), (DONE, Some(302)), "/chain/{n}: {r:?}");
        assert_eq!(server.hits(&format!("/chain/{n}")).len(), 1);
    }
    let r = stored(&db, &server.url("/chain/10"));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (FAILED, Some(302), Some("redirect-limit")),
        "{r:?}"
    );
    let r = stored(&db, &server.url("/chain/9"));
    assert_eq!(
        (r.state, r.skip_reason.as_deref()),
        (SKIPPED, Some("max-redirects"))
    );
    for n in 0..=9 {
        assert!(server.hits(&format!("/chain/{n}")).is_empty(), "/chain/{n}");
    }
}

async fn storms_of_429_and_a_dated_503_are_honoured(store: Backend) {
    let server = FaultServer::start().await;
    let (s, elapsed, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Politeness))
            .max_attempts(2)
            .max_retry_after(Duration::from_secs(1)),
        Duration::from_secs(15),
    )
    .await;
    common(&server, &db, &s);
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");

    // Each storm URL: two attempts, both 429, stored as a 429 after the second.
    let storms: Vec<&str> = Family::Politeness
        .entries()
        .iter()
        .copied()
        .filter(|e| e.starts_with("/429-storm/"))
        .collect();
    for path in &storms {
        assert_eq!(server.hits(path).len(), 2, "{path}");
        let r = stored(&db, &server.url(path));
        assert_eq!(
            (r.state, r.status, r.attempts, r.error_kind.as_deref()),
            (DONE, Some(429), Some(2), None),
            "{path}: {r:?}"
        );
    }

    // After every 429 the host is left alone for a second; only requests already on
    // their way (arriving within the slack) may follow it.
    let all = server.all();
    let slack = Duration::from_millis(150);
    let pause = Duration::from_secs(1);
    for t in all
        .iter()
        .filter(|h| h.path.starts_with("/429-storm/"))
        .map(|h| h.at)
    {
        let early: Vec<_> = all
            .iter()
            .filter(|h| h.at > t + slack && h.at < t + pause - slack)
            .map(|h| (h.path.clone(), h.at - t))
            .collect();
        assert!(early.is_empty(), "requests during a 429 pause: {early:?}");
    }

    // The 503 names an HTTP-date one second after its Date: retried once, after it.
    let hits = server.hits("/503-date");
    assert_eq!(hits.len(), 2);
    assert!(
        hits[1] - hits[0] >= Duration::from_millis(900),
        "{:?}",
        hits[1] - hits[0]
    );
    let r = stored(&db, &server.url("/503-date"));
    assert_eq!(
        (r.state, r.status, r.attempts),
        (DONE, Some(200), Some(2)),
        "{r:?}"
    );
    // The same with the obsolete date forms (whole seconds: at least ~0 s, at most 1 s).
    for path in ["/503-rfc850", "/503-asctime"] {
        let hits = server.hits(path);
        assert_eq!(hits.len(), 2, "{path}: retried once");
        let r = stored(&db, &server.url(path));
        assert_eq!(
            (r.state, r.status, r.attempts),
            (DONE, Some(200), Some(2)),
            "{path}: {r:?}"
        );
    }
}

async fn wrong_lying_and_missing_charsets_are_survived(store: Backend) {
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Charsets)),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);

    // The header wins (UTF-8): the windows-1252 bytes become U+FFFD, the page is stored
    // and its links are read past them.
    let r = stored(&db, &server.url("/wrong-charset"));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (DONE, Some(200), None)
    );
    assert_eq!(
        r.title.as_deref(),
        Some("Caf\u{FFFD} M\u{FFFD}ller"),
        "{r:?}"
    );

    // The <meta> wins over the bytes (WHATWG order): the title is read as Shift_JIS.
    let r = stored(&db, &server.url("/lying-meta"));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (DONE, Some(200), None)
    );
    let (as_sjis, _) =
        encoding_rs::SHIFT_JIS.decode_without_bom_handling(faults::LYING_TITLE.as_bytes());
    assert_eq!(r.title.as_deref(), Some(&*as_sjis), "{r:?}");
    assert_ne!(
        as_sjis,
        faults::LYING_TITLE,
        "the oracle tells the two readings apart"
    );

    // No charset anywhere: detected as windows-1252 from the bytes.
    let r = stored(&db, &server.url("/no-charset"));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (DONE, Some(200), None)
    );
    assert_eq!(r.title.as_deref(), Some(faults::LATIN_TITLE), "{r:?}");

    for after in [
        "/landing/after-wrong-charset",
        "/landing/after-lying-meta",
        "/landing/after-no-charset",
    ] {
        assert_eq!(server.hits(after).len(), 1, "{after}");
    }
}

async fn malformed_html_and_non_html_bodies(store: Backend) {
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Markup)),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);

    let r = stored(&db, &server.url("/malformed"));
    assert_eq!(
        (r.state, r.status, r.error_kind.as_deref()),
        (DONE, Some(200), None)
    );
    assert_eq!(r.title.as_deref(), Some("Malformed"));
    for target in faults::MALFORMED_TARGETS {
        assert_eq!(server.hits(target).len(), 1, "{target}");
    }
    // Links in comments and scripts are not links: never fetched, never even stored.
    assert_eq!(
        count(&db, "SELECT count(*) FROM urls WHERE key LIKE '%/trap-%'"),
        0
    );

    // Non-HTML: recorded with type and size, not parsed (no title, no outgoing edges).
    for (path, ctype, size) in [
        ("/doc.pdf", "application/pdf", faults::pdf_body().len()),
        ("/image.png", "image/png", faults::png_body().len()),
        ("/data.json", "application/json", faults::json_body().len()),
    ] {
        let r = stored(&db, &server.url(path));
        assert_eq!(
            (
                r.state,
                r.status,
                r.content_type.as_deref(),
                r.size,
                r.title.as_deref(),
                r.error_kind
            ),
            (DONE, Some(200), Some(ctype), Some(size as i64), None, None),
            "{path}"
        );
        let out: i64 = open(&db)
            .query_row(
                "SELECT count(*) FROM edges e JOIN urls s ON s.id = e.src WHERE s.key = ?1",
                [server.url(path)],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(out, 0, "{path} was parsed");
    }
}

async fn calendars_deep_paths_and_session_ids_end(store: Backend) {
    const BUDGET: u64 = 40;
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Traps)).max_pages_per_host(BUDGET),
        Duration::from_secs(10),
    )
    .await;
    common(&server, &db, &s);
    assert_eq!(s.run.pages, BUDGET);
    assert_eq!(server.all().len() as u64, BUDGET);
    let reason = |r: &str| {
        open(&db)
            .query_row(
                "SELECT count(*) FROM urls WHERE state = 3 AND skip_reason = ?1",
                [r],
                |row| row.get::<_, i64>(0),
            )
            .unwrap()
    };
    assert_eq!(reason("max-pages-per-host"), 1, "the calendar stopped");
    assert_eq!(reason("repeated-segment"), 1, "/deep/ stopped");
    // /deep/, /deep/more/, /deep/more/more/, /deep/more/more/more/, then the trap.
    let deep = server
        .all()
        .iter()
        .filter(|h| h.path.starts_with("/deep/"))
        .count();
    assert_eq!(deep, 4);
    // Every /s?sid=N has the canonical key /s: one fetch, one row.
    let sessions: Vec<String> = server
        .all()
        .into_iter()
        .map(|h| h.path)
        .filter(|p| p.starts_with("/s?"))
        .collect();
    assert_eq!(sessions, vec!["/s?sid=1".to_string()]);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM urls WHERE key LIKE '%/s?%' OR key LIKE '%/s'"
        ),
        1
    );
}

async fn the_whole_fault_site_in_one_crawl(store: Backend) {
    let server = FaultServer::start().await;
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, None)
            .max_attempts(2)
            .max_retry_after(Duration::from_secs(1))
            .max_redirects(10)
            .max_pages_per_host(100),
        Duration::from_secs(30),
    )
    .await;
    common(&server, &db, &s);
    // Every fault URL ended stored as done or failed.
    for f in Family::ALL {
        for e in f.entries() {
            // Session IDs are not part of the key.
            let key = server.url(e).replace("/s?sid=1", "/s");
            let r = stored(&db, &key);
            assert!(r.state == DONE || r.state == FAILED, "{e}: {r:?}");
        }
    }
    let kind = |e: &str| stored(&db, &server.url(e)).error_kind;
    assert_eq!(kind("/slowloris").as_deref(), Some("timeout"));
    assert_eq!(kind(SILENT).as_deref(), Some("timeout"));
    assert_eq!(kind("/redirect-loop/b").as_deref(), Some("redirect-loop"));
    assert_eq!(kind("/chain/10").as_deref(), Some("redirect-limit"));
    assert!(stored(&db, &server.url("/endless")).truncated);
    assert_eq!(stored(&db, &server.url("/429-storm/1")).status, Some(429));
    assert_eq!(stored(&db, &server.url("/503-date")).status, Some(200));
    for target in faults::MALFORMED_TARGETS {
        assert_eq!(server.hits(target).len(), 1, "{target}");
    }
}

/// RFC 9309: no robots.txt response means nothing of the host is fetched; its URLs are
/// recorded as failed with the error the robots.txt fetch met, so the host's absence shows
/// in `report broken` and the summary rather than as a skip.
async fn a_host_whose_robots_txt_never_answers_fails_with_the_timeout(store: Backend) {
    let server = FaultServer::start().await;
    // Only the normal pages and the silent host: the other transport faults are not
    // what this is about.
    let (s, _, db) = crawl_within(
        &store,
        builder(&store, &server, Some(Family::Transport))
            .ignore_robots(false)
            .include(vec!["/ok/".into(), "/family/".into(), "/silent".into()]),
        Duration::from_secs(20),
    )
    .await;
    common(&server, &db, &s);
    // The site's own robots.txt is a 404: no rules, read once.
    assert_eq!(server.hits("/robots.txt").len(), 1);
    let r = stored(&db, &server.url(SILENT));
    assert_eq!(
        (r.state, r.error_kind.as_deref(), r.skip_reason.as_deref()),
        (FAILED, Some("timeout"), None),
        "{r:?}"
    );
    let error = r.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("robots.txt got no response: timed out"),
        "{error}"
    );
    assert!(server.counters.silent_accepted.load(Ordering::SeqCst) >= 3);
}

both_stores!(
    broken_transports_end_in_errors_not_hangs,
    cut_and_malformed_bodies_are_body_errors,
    cut_and_malformed_bodies_fail_promptly,
    a_reset_mid_body_is_retried,
    redirect_loops_and_long_chains_are_cut,
    storms_of_429_and_a_dated_503_are_honoured,
    wrong_lying_and_missing_charsets_are_survived,
    malformed_html_and_non_html_bodies,
    calendars_deep_paths_and_session_ids_end,
    the_whole_fault_site_in_one_crawl,
    a_host_whose_robots_txt_never_answers_fails_with_the_timeout
);
