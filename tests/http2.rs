//! HTTP/2 over TLS when the server offers it (ALPN), against a local TLS server whose
//! certificate authority the crawl is told to trust (`ca-certs`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Html;
use axum::routing::get;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio_rustls::rustls;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_fetched_over_http2_when_offered() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, ca.cert.pem()).unwrap();

    let mut server_config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![ca.cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(ca.signing_key.serialize_der().into()),
        )
        .unwrap();
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));

    let versions = Arc::new(std::sync::Mutex::new(Vec::new()));
    let v = versions.clone();
    let app = Router::new()
        .route(
            "/",
            get(|| async { Html("<a href=/a>a</a><a href=/b>b</a>") }),
        )
        .route("/a", get(|| async { Html("a") }))
        .route("/b", get(|| async { Html("b") }))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: axum::middleware::Next| {
                let v = v.clone();
                async move {
                    v.lock().unwrap().push(format!("{:?}", req.version()));
                    next.run(req).await
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
                    .await;
            });
        }
    });

    let s = tokio::time::timeout(
        Duration::from_secs(60),
        trawl::Crawler::builder()
            .db(dir.path().join("h2.db"))
            .seed(format!("https://localhost:{port}/"))
            .ignore_robots(true)
            .sitemaps(false)
            .ca_certs(vec![ca_path])
            .build()
            .unwrap()
            .run(std::future::pending()),
    )
    .await
    .unwrap()
    .unwrap();
    server.abort();
    assert_eq!((s.run.pages, s.run.failed), (3, 0));
    let seen = versions.lock().unwrap().clone();
    assert_eq!(seen, vec!["HTTP/2.0"; 3], "every request over HTTP/2");
}
