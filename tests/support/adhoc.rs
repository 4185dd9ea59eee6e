//! A throwaway server for one test's special responses (huge pages, stalled bodies, 429s,
//! ...): an axum router on 127.0.0.1:0 with an access log, stopped when the handle drops.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use tokio::task::JoinHandle;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The request method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// When it arrived.
    pub at: Instant,
}

/// The access log.
pub type Log = Arc<Mutex<Vec<Hit>>>;

/// Arrival times of requests for exactly `path` (with its query, if any).
pub fn hits_of(log: &Log, path: &str) -> Vec<Instant> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|h| h.path == path)
        .map(|h| h.at)
        .collect()
}

/// A running ad-hoc server.
pub struct Adhoc {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Every request, in arrival order.
    pub log: Log,
    task: JoinHandle<()>,
}

async fn record(State(log): State<Log>, req: Request, next: Next) -> Response {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    log.lock().unwrap().push(Hit {
        method: req.method().to_string(),
        path,
        at: Instant::now(),
    });
    next.run(req).await
}

impl Adhoc {
    /// Serve `app` on the current runtime.
    pub async fn start(app: Router) -> Adhoc {
        Adhoc::start_on("127.0.0.1", app).await
    }

    /// Serve `app` on `ip` (another loopback address stands for another host).
    pub async fn start_on(ip: &str, app: Router) -> Adhoc {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let log: Log = Arc::default();
        let app = app.layer(middleware::from_fn_with_state(log.clone(), record));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Adhoc { base, log, task }
    }

    /// Requests for `path`.
    pub fn hits(&self, path: &str) -> Vec<Instant> {
        hits_of(&self.log, path)
    }

    /// Every request.
    pub fn all(&self) -> Vec<Hit> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Adhoc {
    fn drop(&mut self) {
        self.task.abort();
    }
}
