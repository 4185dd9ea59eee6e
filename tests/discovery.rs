//! Links that only some crawlers find: declarative refreshes (`<meta http-equiv=refresh>`
//! in its several spellings, and the `Refresh` header), SVG's `xlink:href`, and links
//! inside `<noscript>`. A real server, a real crawl, on both stores, and the redirect
//! report over what was stored.

use crate::support;

use std::collections::BTreeSet;

use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};
use trawl::report::{Kind, OutputFormat};
use trawl::store::{OpenMode, SqliteStore};

fn site() -> axum::Router {
    let page = |body: &'static str| get(move || async move { Html(body) });
    axum::Router::new()
        .route(
            "/",
            page(
                r#"<html><head><title>start</title>
                <noscript><meta http-equiv="refresh" content="0; url=/nojs-refresh"></noscript>
                </head><body>
                <a href="/refresh-a">a</a> <a href="/header-refresh">h</a>
                <noscript><a href="/nojs">without scripts</a></noscript>
                <svg viewBox="0 0 10 10"><a xlink:href="/svg-old"><text>old</text></a>
                <a href="/svg-new"><text>new</text></a></svg>
                <a xlink:href="/html-xlink">not a link in HTML</a>
                </body></html>"#,
            ),
        )
        .route(
            "/refresh-a",
            page(r#"<meta http-equiv="Refresh" content="0; URL='/refresh-b'">"#),
        )
        .route(
            "/refresh-b",
            page(r#"<meta http-equiv=refresh content="3, /moved"><p>moving"#),
        )
        .route("/moved", get(|| async { Redirect::permanent("/final") }))
        .route(
            "/header-refresh",
            get(|| async {
                (
                    [("refresh", "0;url=\"/from-header\"")],
                    Html("<p>see the header"),
                )
                    .into_response()
            }),
        )
        .route(
            "/reloads",
            page(r#"<meta http-equiv="refresh" content="30">"#),
        )
        .route("/final", page("<a href=/reloads>r</a>"))
        .route("/from-header", page("end"))
        .route("/nojs", page("end"))
        .route("/nojs-refresh", page("end"))
        .route("/svg-old", page("end"))
        .route("/svg-new", page("end"))
}

async fn refresh_svg_and_noscript_links_are_followed(store: Backend) {
    let server = Adhoc::start(site()).await;
    let b = &server.base;
    store
        .crawl(
            store
                .builder("links")
                .seed(format!("{b}/"))
                .ignore_robots(true)
                .sitemaps(false),
        )
        .await;
    let got = store.read("links").await;
    let fetched: BTreeSet<String> = got
        .fetched
        .keys()
        .map(|k| k.trim_start_matches(b.as_str()).to_owned())
        .collect();
    let want: BTreeSet<String> = [
        "/",
        "/refresh-a",
        "/refresh-b",
        "/moved",
        "/final",
        "/reloads",
        "/header-refresh",
        "/from-header",
        "/nojs",
        "/nojs-refresh",
        "/svg-old",
        "/svg-new",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    assert_eq!(fetched, want, "an HTML <a xlink:href> is no link");
    assert!(got.skipped.is_empty(), "{:?}", got.skipped);
    let edge = |from: &str, to: &str, kind: &str| {
        let key = (format!("{b}{from}"), format!("{b}{to}"), kind.to_owned());
        assert_eq!(got.edges.get(&key), Some(&1), "{key:?} in {:?}", got.edges);
    };
    edge("/", "/nojs-refresh", "refresh");
    edge("/", "/nojs", "a");
    edge("/", "/svg-old", "a");
    edge("/", "/svg-new", "a");
    edge("/refresh-a", "/refresh-b", "refresh");
    edge("/refresh-b", "/moved", "refresh");
    edge("/moved", "/final", "redirect");
    edge("/header-refresh", "/from-header", "refresh");
    let from_reloads = got.edges.keys().filter(|(f, _, _)| f.ends_with("/reloads"));
    assert_eq!(from_reloads.count(), 0, "a bare delay only reloads");

    let db = store.db("links").await;
    let rows = redirects(&db);
    let chain = |start: &str| {
        rows.iter()
            .find(|r| r["start"] == format!("{b}{start}"))
            .unwrap_or_else(|| panic!("a chain from {start} in {rows:?}"))
    };
    let a = chain("/refresh-a");
    let hops: Vec<String> = ["/refresh-a", "/refresh-b", "/moved", "/final"]
        .iter()
        .map(|p| format!("{b}{p}"))
        .collect();
    assert_eq!(a["chain"], serde_json::json!(hops));
    assert_eq!(
        a["via"],
        serde_json::json!(["refresh", "refresh", "redirect"])
    );
    assert_eq!(a["length"], 3);
    assert_eq!(a["final_status"], 200);
    assert_eq!(
        chain("/header-refresh")["via"],
        serde_json::json!(["refresh"])
    );
    assert_eq!(chain("/")["chain"][1], format!("{b}/nojs-refresh"));
    // Mid-chain URLs start no chain of their own.
    assert_eq!(rows.len(), 3, "{rows:?}");
}

/// The redirect report as JSON rows.
fn redirects(db: &std::path::Path) -> Vec<serde_json::Value> {
    let store = SqliteStore::open(db, OpenMode::Read).unwrap();
    let mut out = Vec::new();
    let options = trawl::report::Options::new(OutputFormat::Json);
    trawl::report::run(&store, Kind::Redirects, &options, &mut out).unwrap();
    serde_json::from_slice::<Vec<serde_json::Value>>(&out).expect("a JSON array")
}

both_stores!(refresh_svg_and_noscript_links_are_followed);
