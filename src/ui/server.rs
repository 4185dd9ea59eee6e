//! The HTTP side: bind, accept, check the token, route, answer. hyper on the caller's
//! runtime, as the metrics endpoint does; SQLite reads run on the blocking pool so a slow
//! report never stalls the crawl's tasks.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::cache::Cache;
use super::rows::Window;
use super::{assets, auth, live, page, pages, rows, Sources, UiError};
use crate::report::Kind;
use crate::store::{OpenMode, SqliteStore};

/// What every connection shares.
struct Shared {
    sources: Sources,
    token: Option<String>,
    /// The page's index of `sources.db`.
    cache: Option<Arc<Cache>>,
}

/// Bind `addr` and serve the page and its endpoints until `stop` completes; returns the
/// bound address (useful with port 0) once listening. An address other than loopback is
/// refused without a `token`; with one, every request must carry it. A `db` in `sources`
/// must be a trawl file already (checked now, read-only: nothing is created).
pub async fn serve(
    addr: &str,
    token: Option<String>,
    sources: Sources,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr, UiError> {
    let token = token.filter(|t| !t.is_empty());
    let wanted = auth::check_bind(addr, token.as_deref())?;
    if let (Some(db), None) = (&sources.db, &sources.progress) {
        drop(SqliteStore::open(db, OpenMode::Read)?);
    }
    let err = |source| UiError::Bind {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(wanted).await.map_err(err)?;
    let bound = listener.local_addr().map_err(err)?;
    let cache = sources.db.as_deref().map(Cache::new);
    if let Some(c) = &cache {
        tracing::info!("the page's index of the crawl: {}", c.path().display());
    }
    let shared = Arc::new(Shared {
        sources,
        token,
        cache,
    });
    crate::listen::spawn_until(listener, stop, move |req| answer(shared.clone(), req));
    Ok(bound)
}

type Answer = Response<Full<Bytes>>;

async fn answer(
    shared: Arc<Shared>,
    req: Request<hyper::body::Incoming>,
) -> Result<Answer, Infallible> {
    let query = req.uri().query().unwrap_or("").to_owned();
    let authorization = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !auth::allowed(shared.token.as_deref(), authorization, &query) {
        return Ok(error(
            StatusCode::UNAUTHORIZED,
            "this page needs its token: add ?token=TOKEN to the address, or send \
             Authorization: Bearer TOKEN",
        ));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(error(
            StatusCode::METHOD_NOT_ALLOWED,
            "the page is read-only",
        ));
    }
    let path = req.uri().path().to_owned();
    let progress = shared.sources.progress.as_ref();
    Ok(match (path.as_str(), progress) {
        ("/" | "/page" | "/index.html", _) => html(),
        ("/api/live", _) => ok(live::snapshot(progress).await),
        // A crawl running here answers from memory: no scan of a growing file per poll.
        ("/api/hosts", Some(p)) => ok(live::live_hosts(p).await),
        ("/api/recent", Some(p)) => ok(live::live_recent(p)),
        (p, _) if p.starts_with("/api/") => {
            let shared = shared.clone();
            let p = p.to_owned();
            tokio::task::spawn_blocking(move || from_file(&shared, &p, &query))
                .await
                .unwrap_or_else(|e| error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))
        }
        _ => error(StatusCode::NOT_FOUND, "no such page; try /"),
    })
}

/// An endpoint read from the crawl's file (on the blocking pool).
fn from_file(shared: &Shared, path: &str, query: &str) -> Answer {
    let (Some(db), Some(cache)) = (&shared.sources.db, &shared.cache) else {
        return error(
            StatusCode::NOT_FOUND,
            "this crawl has no file here (a Redis crawl without --db): only /api/live, \
             /api/hosts and /api/recent",
        );
    };
    match read(db, cache, path, query) {
        Ok(Some(v)) => ok(v),
        Ok(None) => error(StatusCode::NOT_FOUND, "not found"),
        // While a crawl starts its file may not hold a crawl yet: try again later.
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

fn read(db: &Path, cache: &Arc<Cache>, path: &str, query: &str) -> Result<Option<Value>, UiError> {
    let report = match path {
        "/api/status" => return Ok(Some(to_value(&crate::status::read(db)?))),
        "/api/broken" => Kind::Broken,
        "/api/redirects" => Kind::Redirects,
        "/api/depth" => Kind::Depth,
        "/api/top" => Kind::Top,
        "/api/orphans" => Kind::Orphans,
        "/api/hosts" | "/api/recent" => return read_sql(db, path),
        "/api/page" => {
            let arg = |name: &str| {
                url::form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
            };
            let id = arg("id").and_then(|i| i.parse().ok());
            let url = arg("url");
            let view = page::read(cache, url.as_deref(), id, &Window::parse(query))?;
            return Ok(view.map(|v| to_value(&v)));
        }
        "/api/pages" => {
            let pages = pages::read(db, &Window::parse(query), query)?;
            return Ok(Some(to_value(&pages)));
        }
        _ => return Ok(None),
    };
    Ok(Some(to_value(&rows::read(
        cache,
        report,
        &Window::parse(query),
    )?)))
}

/// The endpoints with queries of their own (not a report's).
fn read_sql(db: &Path, path: &str) -> Result<Option<Value>, UiError> {
    let store = SqliteStore::open(db, OpenMode::Read)?;
    let sql = |e| {
        UiError::Store(crate::store::StoreError::Sqlite {
            path: db.display().to_string(),
            source: e,
        })
    };
    match path {
        "/api/hosts" => live::hosts(&store).map(Some).map_err(sql),
        _ => live::recent(&store).map(Some).map_err(sql),
    }
}

fn to_value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

fn ok(v: Value) -> Answer {
    respond(StatusCode::OK, "application/json", v.to_string())
}

fn error(status: StatusCode, message: &str) -> Answer {
    let body = json!({ "error": message }).to_string();
    respond(status, "application/json", body)
}

fn html() -> Answer {
    respond(StatusCode::OK, "text/html; charset=utf-8", assets::page())
}

fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Answer {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        content_type.parse().expect("a header value"),
    );
    // Figures change while a crawl runs; and the page may carry a token.
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}
