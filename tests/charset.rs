//! Document encodings, end to end: windows-1252 guessed from the bytes, Shift_JIS named by
//! a <meta>, UTF-16 with a byte order mark; titles are stored as text and link queries
//! reach the server encoded the way the document meant them.

use crate::support;

use std::time::Duration;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use encoding_rs::{SHIFT_JIS, WINDOWS_1252};
use support::adhoc::Adhoc;
use trawl::Crawler;

fn page(bytes: Vec<u8>, content_type: &'static str) -> axum::routing::MethodRouter {
    get(move || {
        let b = bytes.clone();
        async move { ([(header::CONTENT_TYPE, content_type)], b).into_response() }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_and_utf16_pages_are_read_in_their_encoding() {
    let filler = "Grüße aus Köln, schöne Füße, süße Brötchen. ".repeat(40);
    let latin = format!(
        "<html><head><title>Café Müller</title></head><body>{filler}<a href='/q?name=café'>c</a></body></html>"
    );
    let (cp1252, _, _) = WINDOWS_1252.encode(&latin);
    let (sjis, _, _) = SHIFT_JIS.encode(
        "<html><head><meta charset=\"Shift_JIS\"><title>日本語のページ</title></head><body><a href='/jp?k=東京'>t</a></body></html>",
    );
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(
        "<html><title>Ünïcödé</title><a href=/from16>x</a></html>"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes()),
    );
    let app = Router::new()
        .route(
            "/",
            get(|| async {
                axum::response::Html("<a href=/latin>l</a><a href=/sjis>s</a><a href=/u16>u</a>")
            }),
        )
        .route("/latin", page(cp1252.into_owned(), "text/html"))
        .route("/sjis", page(sjis.into_owned(), "text/html"))
        .route("/u16", page(utf16, "text/html"))
        .route("/q", get(|| async { "q" }))
        .route("/jp", get(|| async { "jp" }))
        .route("/from16", get(|| async { "ok" }));
    let server = Adhoc::start(app).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cs.db");
    tokio::time::timeout(
        Duration::from_secs(60),
        Crawler::builder()
            .db(&path)
            .seed(format!("{}/", server.base))
            .ignore_robots(true)
            .sitemaps(false)
            .build()
            .unwrap()
            .run(std::future::pending()),
    )
    .await
    .unwrap()
    .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let title = |p: &str| -> Option<String> {
        conn.query_row(
            "SELECT title FROM urls WHERE key = ?1",
            [format!("{}{p}", server.base)],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(title("/latin").as_deref(), Some("Café Müller"));
    assert_eq!(title("/sjis").as_deref(), Some("日本語のページ"));
    assert_eq!(title("/u16").as_deref(), Some("Ünïcödé"));
    // Queries follow the document's encoding, as browsers send them.
    assert_eq!(server.hits("/q?name=caf%E9").len(), 1, "{:?}", server.all());
    assert_eq!(
        server.hits("/jp?k=%93%8C%8B%9E").len(),
        1,
        "{:?}",
        server.all()
    );
    assert_eq!(server.hits("/from16").len(), 1);
}
