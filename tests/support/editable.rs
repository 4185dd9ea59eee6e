//! A site whose pages a test edits between crawls: each page sends an `ETag` (from its
//! body) and a fixed `Last-Modified`, and answers `If-None-Match` with a 304 while it is
//! unchanged; `/plain` sends neither, so only its content hash tells it unchanged. A path
//! with no page is a 404.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::adhoc::Adhoc;

/// The site: path -> page body. A path missing is a 404.
pub type Pages = Arc<Mutex<BTreeMap<String, String>>>;

#[derive(Clone)]
pub struct Site {
    /// The pages, editable while the server runs.
    pub pages: Pages,
    /// 304s answered.
    pub not_modified: Arc<AtomicUsize>,
}

/// Serves `pages`: an `ETag` from the body's hash and a fixed `Last-Modified`, except for
/// `/plain`, which sends neither (only its content hash tells it unchanged).
async fn serve(State(site): State<Site>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let Some(body) = site.pages.lock().unwrap().get(&path).cloned() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let html = [(header::CONTENT_TYPE, "text/html")];
    if path == "/plain" {
        return (html, body).into_response();
    }
    let etag = format!(
        "\"{:x}\"",
        body.len() * 31 + body.bytes().map(usize::from).sum::<usize>()
    );
    let asked = req.headers().get(header::IF_NONE_MATCH);
    if asked.is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
        site.not_modified.fetch_add(1, Ordering::Relaxed);
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let validators = [
        (header::ETAG, etag),
        (
            header::LAST_MODIFIED,
            "Wed, 02 Dec 2026 10:00:00 GMT".into(),
        ),
    ];
    (html, validators, body).into_response()
}

/// An HTML page titled `title` linking to each of `links`, in order.
pub fn page(title: &str, links: &[&str]) -> String {
    let a: String = links
        .iter()
        .map(|l| format!("<a href=\"{l}\">{l}</a>"))
        .collect();
    format!("<html><head><title>{title}</title></head><body>{a}</body></html>")
}

/// Serve `pages`.
pub async fn start(pages: BTreeMap<String, String>) -> (Adhoc, Site) {
    let site = Site {
        pages: Arc::new(Mutex::new(pages)),
        not_modified: Arc::new(AtomicUsize::new(0)),
    };
    let app = Router::new().fallback(serve).with_state(site.clone());
    (Adhoc::start(app).await, site)
}
