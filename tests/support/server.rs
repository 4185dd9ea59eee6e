//! A local HTTP server for a generated [`Site`], with an access log.
//!
//! The log is the oracle for "fetched exactly once" and "never fetched": every request is
//! recorded on arrival (path and query, in order), whatever the answer. The server also
//! tracks how many requests it is serving at once, so tests can check concurrency limits.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use axum::Router;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::site::Site;

struct Shared {
    site: Site,
    addr: SocketAddr,
    /// Request targets in arrival order. A std mutex: held only to push or copy, never
    /// across an await.
    log: Mutex<Vec<String>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Counts one request as in flight for as long as it lives, so a request whose connection
/// is dropped mid-sleep is still released.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running server for one site. Dropping it stops accepting connections and shuts
/// existing ones down gracefully.
pub struct SiteServer {
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl SiteServer {
    /// Bind 127.0.0.1:0, serve the site on the current tokio runtime, return once listening.
    pub async fn start(site: Site) -> SiteServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            site,
            addr,
            log: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let stop = async {
                let _ = rx.await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                eprintln!("site server: {e}");
            }
        });
        SiteServer {
            shared,
            shutdown: Some(tx),
            task,
        }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn base(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    pub fn site(&self) -> &Site {
        &self.shared.site
    }

    /// Shorthand for `self.site().expected(&self.base())`.
    pub fn expected(&self) -> super::site::Expected {
        self.shared.site.expected(&self.base())
    }

    /// Request targets (path with query) in arrival order.
    pub fn hits(&self) -> Vec<String> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Requests per target.
    pub fn hit_counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for hit in self.shared.log.lock().unwrap().iter() {
            *counts.entry(hit.clone()).or_default() += 1;
        }
        counts
    }

    /// The highest number of requests served at once since start (or the last `clear_log`).
    pub fn max_concurrent(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Forget the log and reset `max_concurrent` (to the number in flight right now).
    pub fn clear_log(&self) {
        self.shared.log.lock().unwrap().clear();
        let now = self.shared.in_flight.load(Ordering::SeqCst);
        self.shared.max_in_flight.store(now, Ordering::SeqCst);
    }
}

impl Drop for SiteServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Drops the listener at once; connection tasks finish on the shutdown signal.
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let target = req
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    shared.log.lock().unwrap().push(target.clone());
    let _in_flight = InFlight::enter(&shared);

    let latency = shared.site.spec().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }

    // Links to the server itself use the host the client asked for.
    let base = match req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
    {
        Some(host) => format!("http://{host}"),
        None => format!("http://{}", shared.addr),
    };
    let res = shared.site.resource(&target);
    let (body, location) = Site::render(res, &base);

    let mut builder = Response::builder().status(StatusCode::from_u16(res.status).unwrap());
    if let Some(ct) = res.content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    if let Some(location) = location {
        builder = builder.header(header::LOCATION, location);
    }
    builder.body(Body::from(body)).unwrap()
}
