//! The process's own small HTTP servers (the metrics endpoint, the crawl's page): one
//! accept loop for both, on the caller's runtime.

use std::future::Future;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Answer every request on `listener` with `handler` until `stop` completes, on a task of
/// its own. Open connections close with the listener: a browser's or a scraper's
/// keep-alive connection must not outlive the crawl.
pub(crate) fn spawn_until<H, F, E>(
    listener: TcpListener,
    stop: impl Future<Output = ()> + Send + 'static,
    handler: H,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let stopped = tokio_util::sync::CancellationToken::new();
    tokio::spawn(async move {
        tokio::pin!(stop);
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(s) => s,
                    Err(_) => continue,
                },
                _ = &mut stop => {
                    stopped.cancel();
                    return;
                }
            };
            let (handler, stopped) = (handler.clone(), stopped.clone());
            tokio::spawn(async move {
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(handler));
                tokio::select! {
                    _ = conn => {}
                    _ = stopped.cancelled() => {}
                }
            });
        }
    });
}
