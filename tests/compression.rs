//! Compressed bodies from `tests/data/compressed/` (scrapy's sample data,
//! BSD-3-Clause): every encoding is decoded while streaming, decompression bombs stop at
//! `max-body` (counted in decompressed bytes), and truncated or corrupt streams are
//! recorded as errors without stopping the crawl.

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use support::adhoc::Adhoc;
use trawl::{Crawler, Outcome};

fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/compressed")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn encoded(file: &'static str, encoding: &'static str) -> axum::routing::MethodRouter {
    let body = data(file);
    get(move || {
        let body = body.clone();
        async move {
            (
                [
                    (header::CONTENT_TYPE, "text/html"),
                    (header::CONTENT_ENCODING, encoding),
                ],
                body,
            )
                .into_response()
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bombs_stop_at_the_cap_and_broken_streams_are_errors() {
    let cases = [
        ("/bomb-gzip", "bomb-gzip.bin", "gzip"),
        ("/bomb-deflate", "bomb-deflate.bin", "deflate"),
        ("/bomb-br", "bomb-br.bin", "br"),
        ("/bomb-zstd", "bomb-zstd.bin", "zstd"),
        ("/html-gzip", "html-gzip.bin", "gzip"),
        ("/html-br", "html-br.bin", "br"),
        ("/truncated", "truncated-crc-error.gz", "gzip"),
        ("/truncated-short", "truncated-crc-error-short.gz", "gzip"),
        ("/eof", "unexpected-eof.gz", "gzip"),
    ];
    let mut home = String::new();
    let mut app = Router::new();
    for (path, file, enc) in cases {
        home.push_str(&format!("<a href={path}>x</a>"));
        app = app.route(path, encoded(file, enc));
    }
    let app = app.route("/", get(move || async move { Html(home) }));
    let server = Adhoc::start(app).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.db");
    let cap: u64 = 256 * 1024;
    let s = tokio::time::timeout(
        Duration::from_secs(60),
        Crawler::builder()
            .db(&path)
            .seed(format!("{}/", server.base))
            .ignore_robots(true)
            .sitemaps(false)
            .max_attempts(1)
            .max_body(cap)
            .build()
            .unwrap()
            .run(std::future::pending()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(s.outcome, Outcome::Finished);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let row = |p: &str| -> (i64, Option<i64>, i64, Option<String>) {
        conn.query_row(
            "SELECT state, size, coalesce(truncated, 0), error_kind FROM urls WHERE key = ?1",
            [format!("{}{p}", server.base)],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap()
    };
    for p in ["/bomb-gzip", "/bomb-deflate", "/bomb-br", "/bomb-zstd"] {
        assert_eq!(
            row(p),
            (1, Some(cap as i64), 1, None),
            "{p} stops at the cap"
        );
    }
    for p in ["/html-gzip", "/html-br"] {
        let (state, size, truncated, err) = row(p);
        assert_eq!((state, truncated, err), (1, 0, None), "{p}");
        assert!(size.unwrap() > 8037, "{p} decoded: {size:?}");
    }
    for p in ["/truncated", "/truncated-short", "/eof"] {
        let (state, _, _, err) = row(p);
        assert_eq!(state, 2, "{p} is an error");
        assert!(
            matches!(err.as_deref(), Some("decode") | Some("body")),
            "{p}: {err:?}"
        );
    }
}
