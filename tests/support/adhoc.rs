//! A throwaway server for one test's special responses (huge pages, stalled bodies, ...):
//! an axum router on 127.0.0.1:0, stopped when the handle drops.

use axum::Router;
use tokio::task::JoinHandle;

/// A running ad-hoc server.
pub struct Adhoc {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    task: JoinHandle<()>,
}

impl Adhoc {
    /// Serve `app` on the current runtime.
    pub async fn start(app: Router) -> Adhoc {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Adhoc { base, task }
    }
}

impl Drop for Adhoc {
    fn drop(&mut self) {
        self.task.abort();
    }
}
