//! A site whose robots.txt names a sitemap index: two sitemaps (one gzipped) listing two
//! pages no page links to. Shared by the local and the Redis sitemap tests.

use std::io::Write;

use axum::http::header;
use axum::response::Html;
use axum::routing::get;
use axum::Router;

/// `/` links to `/p`; `/orphan` and `/orphan2` are only in the sitemaps.
pub fn site() -> Router {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(
        b"<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>\
          <url><loc>/orphan2</loc></url></urlset>",
    )
    .unwrap();
    let gz = gz.finish().unwrap();
    Router::new()
        .route(
            "/robots.txt",
            get(|| async { "User-agent: *\nAllow: /\nSitemap: /maps/index.xml\n" }),
        )
        .route(
            "/maps/index.xml",
            get(|| async {
                "<sitemapindex><sitemap><loc>/maps/a.xml</loc></sitemap>\
                 <sitemap><loc>/maps/b.xml.gz</loc></sitemap></sitemapindex>"
            }),
        )
        .route(
            "/maps/a.xml",
            get(|| async {
                "<urlset><url><loc>/orphan</loc></url><url><loc>/p</loc></url></urlset>"
            }),
        )
        .route(
            "/maps/b.xml.gz",
            get(move || async move { ([(header::CONTENT_TYPE, "application/gzip")], gz) }),
        )
        .route("/", get(|| async { Html("<a href=/p>p</a>") }))
        .route("/p", get(|| async { Html("p") }))
        .route("/orphan", get(|| async { Html("o") }))
        .route("/orphan2", get(|| async { Html("o2") }))
}
