//! Crawler traps, nofollow and session IDs against a local server: endless calendars and
//! ever-deeper relative links end within the limits; nofollow pages add edges but no
//! fetches; session IDs do not multiply a page.

use crate::support;

use axum::extract::{Path, Query};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};
use trawl::Outcome;

fn query<T: rusqlite::types::FromSql>(db: &std::path::Path, sql: &str, key: &str) -> T {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(sql, [key], |r| r.get(0))
        .unwrap()
}

fn reasons(db: &std::path::Path) -> std::collections::BTreeMap<String, i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT skip_reason, count(*) FROM urls WHERE state = 3 GROUP BY 1")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

async fn endless_calendars_and_nesting_paths_end_within_the_limits(store: Backend) {
    let app = Router::new()
        .route(
            "/",
            get(|| async { Html("<a href=/cal/2026/12>cal</a><a href=/deep/>deep</a>") }),
        )
        // Every month links to the next one, for ever.
        .route(
            "/cal/{y}/{m}",
            get(|Path((y, m)): Path<(u32, u32)>| async move {
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                Html(format!("<a href=/cal/{ny}/{nm}>next</a>"))
            }),
        )
        // A relative link that nests one level deeper at every click.
        .route("/deep/", get(|| async { Html("<a href=more/>more</a>") }))
        .route(
            "/deep/{*rest}",
            get(|| async { Html("<a href=more/>more</a>") }),
        );
    let server = Adhoc::start(app).await;
    let path = "traps";
    let s = store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .max_pages_per_host(60),
        )
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    let r = reasons(&store.db(path).await);
    assert_eq!(r.get("repeated-segment"), Some(&1), "{r:?}");
    assert_eq!(r.get("max-pages-per-host"), Some(&1), "{r:?}");
    assert_eq!(s.run.pages, 60);
    // /deep/, /deep/more/ ... /deep/more/more/more/ (three "more"), then the trap.
    let deep = server
        .all()
        .iter()
        .filter(|h| h.path.starts_with("/deep"))
        .count();
    assert_eq!(deep, 4);
}

async fn nofollow_pages_record_edges_but_discover_nothing(store: Backend) {
    let app = Router::new()
        .route(
            "/",
            get(|| async { Html("<a href=/nf>nf</a><a href=/xr>xr</a><a href=/p1>p1</a>") }),
        )
        .route(
            "/nf",
            get(|| async {
                Html(
                    "<meta name=robots content='noindex, nofollow'>\
                     <a href=/only-nf>o</a><a href=/revive>r</a>",
                )
            }),
        )
        .route(
            "/xr",
            get(|| async {
                (
                    [("x-robots-tag", "nofollow")],
                    Html("<a href=/only-xr>o</a>"),
                )
                    .into_response()
            }),
        )
        // Found later through a followed link: must be fetched after all.
        .route("/p1", get(|| async { Html("<a href=/revive>r</a>") }))
        .route("/revive", get(|| async { Html("ok") }))
        .route("/only-nf", get(|| async { Html("never") }))
        .route("/only-xr", get(|| async { Html("never") }));
    let server = Adhoc::start(app).await;
    let path = "nf";
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .concurrency(1),
        )
        .await;
    let b = &server.base;
    assert!(server.hits("/only-nf").is_empty());
    assert!(server.hits("/only-xr").is_empty());
    assert_eq!(
        server.hits("/revive").len(),
        1,
        "revived by a followed link"
    );
    let db = store.db(path).await;
    let reason: Option<String> = query(
        &db,
        "SELECT skip_reason FROM urls WHERE key = ?1",
        &format!("{b}/only-nf"),
    );
    assert_eq!(reason.as_deref(), Some("nofollow"));
    let nofollow_edges: i64 = query(
        &db,
        "SELECT count(*) FROM edges e JOIN urls s ON s.id = e.src WHERE s.key = ?1 AND e.nofollow = 1",
        &format!("{b}/nf"),
    );
    assert_eq!(nofollow_edges, 2);
    let noindex: Option<i64> = query(
        &db,
        "SELECT noindex FROM urls WHERE key = ?1",
        &format!("{b}/nf"),
    );
    assert_eq!(noindex, Some(1));
    let state: i64 = query(
        &db,
        "SELECT state FROM urls WHERE key = ?1",
        &format!("{b}/revive"),
    );
    assert_eq!(state, 1);
}

async fn session_ids_do_not_multiply_a_page(store: Backend) {
    let app = Router::new()
        .route(
            "/",
            get(|| async {
                Html("<a href='/s?sid=1'>1</a><a href='/s?sid=2&PHPSESSID=x'>2</a><a href='/s;jsessionid=AB'>3</a><a href='/s?page=2&sid=9'>4</a>")
            }),
        )
        .route("/s", get(|| async { Html("s") }));
    let server = Adhoc::start(app).await;
    let path = "sid";
    store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true),
        )
        .await;
    let fetched: Vec<String> = server
        .all()
        .into_iter()
        .map(|h| h.path)
        .filter(|p| p != "/sitemap.xml")
        .collect();
    // One fetch for /s (whichever spelling came first) and one for /s?page=2.
    assert_eq!(fetched.len(), 3, "{fetched:?}");
    let keys: i64 = query(
        &store.db(path).await,
        "SELECT count(*) FROM urls WHERE key LIKE ?1",
        "%/s%",
    );
    assert_eq!(keys, 2);
}

/// A calendar day that links to the next, for ever.
async fn next_day(q: Query<HashMap<String, u32>>) -> Html<String> {
    Html(format!("<a href='/cal?d={}'>next</a>", q["d"] + 1))
}

/// An endless `?d=` calendar on one path ends at `max-query-variants`; a paginated list on
/// another path, with fewer variants, is crawled whole.
async fn query_variants_of_one_path_end_at_the_limit(store: Backend) {
    let app = Router::new()
        .route(
            "/",
            get(|| async { Html("<a href='/cal?d=0'>cal</a><a href='/list?page=1'>list</a>") }),
        )
        .route("/cal", get(next_day))
        .route(
            "/list",
            get(|q: Query<HashMap<String, u32>>| async move {
                let p = q["page"];
                let next = if p < 15 {
                    format!("<a href='/list?page={}'>next</a>", p + 1)
                } else {
                    String::new()
                };
                Html(next)
            }),
        );
    let server = Adhoc::start(app).await;
    let path = "variants";
    let s = store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true)
                .max_query_variants(20),
        )
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    let r = reasons(&store.db(path).await);
    assert_eq!(r.get("max-query-variants"), Some(&1), "{r:?}");
    let hits = server.all();
    let count = |prefix: &str| hits.iter().filter(|h| h.path.starts_with(prefix)).count();
    assert_eq!(count("/cal?"), 20);
    assert_eq!(count("/list?"), 15);
    let skipped: String = query(
        &store.db(path).await,
        "SELECT key FROM urls WHERE skip_reason = ?1",
        "max-query-variants",
    );
    assert!(skipped.ends_with("/cal?d=20"), "{skipped}");
}

/// Under the defaults an endless `?d=` calendar ends at 1000 variants, while a shop's
/// faceted, paginated listing (4 categories x 25 pages x 2 sort orders: 200 query variants
/// of one path) is crawled whole.
async fn under_the_defaults_a_calendar_ends_and_facets_are_crawled_whole(store: Backend) {
    let app = Router::new()
        .route(
            "/",
            get(|| async {
                Html(
                    (0..4)
                        .map(|c| format!("<a href='/shop?cat={c}&page=1'>c</a>"))
                        .collect::<String>(),
                )
            }),
        )
        .route("/cal", get(next_day))
        .route(
            "/shop",
            get(|q: Query<HashMap<String, String>>| async move {
                let (cat, page): (u32, u32) =
                    (q["cat"].parse().unwrap(), q["page"].parse().unwrap());
                let mut links = String::new();
                if page < 25 {
                    links += &format!("<a href='/shop?cat={cat}&page={}'>next</a>", page + 1);
                }
                if !q.contains_key("sort") {
                    links +=
                        &format!("<a href='/shop?cat={cat}&page={page}&sort=price'>by price</a>");
                }
                Html(links)
            }),
        );
    let server = Adhoc::start(app).await;
    let path = "facets";
    let s = store
        .crawl(
            store
                .builder(path)
                .seed(format!("{}/", server.base))
                .ignore_robots(true),
        )
        .await;
    assert_eq!(s.outcome, Outcome::Finished);
    let r = reasons(&store.db(path).await);
    assert_eq!(r.get("max-query-variants"), None, "{r:?}");
    let shop = server
        .all()
        .iter()
        .filter(|h| h.path.starts_with("/shop?"))
        .count();
    assert_eq!(shop, 200);
}

both_stores!(
    endless_calendars_and_nesting_paths_end_within_the_limits,
    nofollow_pages_record_edges_but_discover_nothing,
    session_ids_do_not_multiply_a_page,
    query_variants_of_one_path_end_at_the_limit,
    under_the_defaults_a_calendar_ends_and_facets_are_crawled_whole
);
