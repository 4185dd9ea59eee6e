//! Fetching one URL: one HTTP request, no automatic redirects, timeouts on connect, on
//! each read and on the whole request, and a body read in chunks under a byte cap.
//!
//! Redirects are not followed here: trawl follows them itself, hop by hop, so that every
//! hop is a stored URL and a `redirect` edge, and so that a loop is seen and reported.

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use reqwest::{Client, StatusCode};
use url::Url;

use std::sync::Arc;

use crate::config::CrawlConfig;
use crate::proxy::Pool;

/// Why a fetch failed; [`FetchError::kind`] is what `urls.error_kind` records.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No response (or no next bytes) in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The host name did not resolve.
    #[error("DNS lookup failed: {0}")]
    Dns(String),
    /// The connection could not be made (refused, TLS, unreachable).
    #[error("could not connect: {0}")]
    Connect(String),
    /// The connection broke while the body was read.
    #[error("body read failed: {0}")]
    Body(String),
    /// The body could not be decompressed.
    #[error("body could not be decoded: {0}")]
    Decode(String),
    /// Anything else reqwest reports.
    #[error("request failed: {0}")]
    Request(String),
    /// The HTTP client could not be built (bad settings).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl FetchError {
    /// Short, stable name of the error class.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Timeout(_) => "timeout",
            FetchError::Dns(_) => "dns",
            FetchError::Connect(_) => "connect",
            FetchError::Body(_) => "body",
            FetchError::Decode(_) => "decode",
            FetchError::Request(_) => "request",
            FetchError::Client(_) => "client",
        }
    }

    fn from_reqwest(e: reqwest::Error) -> FetchError {
        // The source chain holds the useful part ("connection refused"), not the URL.
        let mut msg = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            src = s.source();
        }
        // reqwest reports every failure while reading a body as a decode error; a
        // hyper error underneath means the connection or its framing broke (a reset, a
        // short body, bad chunking): a transport fault, worth a retry.
        let transport = {
            let mut src = std::error::Error::source(&e);
            let mut found = false;
            while let Some(s) = src {
                if s.downcast_ref::<hyper::Error>().is_some() {
                    found = true;
                    break;
                }
                src = s.source();
            }
            found
        };
        if e.is_timeout() {
            FetchError::Timeout(msg)
        } else if transport && (e.is_body() || e.is_decode()) {
            FetchError::Body(msg)
        } else if e.is_connect() {
            if msg.contains("dns error") || msg.contains("failed to lookup address") {
                FetchError::Dns(msg)
            } else {
                FetchError::Connect(msg)
            }
        } else if e.is_decode() {
            FetchError::Decode(msg)
        } else if e.is_body() {
            FetchError::Body(msg)
        } else {
            FetchError::Request(msg)
        }
    }
}

/// The HTTP client for a crawl: one client per route (direct, or each proxy), sharing one
/// cookie jar. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Fetcher {
    routes: Arc<Vec<Client>>,
    pool: Arc<Pool>,
    max_body: u64,
}

/// A response whose body has not been read yet.
pub struct Response {
    inner: reqwest::Response,
    max_body: u64,
    read: u64,
}

impl Fetcher {
    /// Clients with the configuration's timeouts, User-Agent, headers, cookies, proxies and
    /// body cap.
    pub fn new(config: &CrawlConfig) -> Result<Fetcher, FetchError> {
        let mut headers = HeaderMap::new();
        for h in &config.headers {
            if let Some((name, value)) = crate::config::parse_header(h) {
                headers.append(name, value);
            }
        }
        let mut roots = Vec::new();
        for path in &config.ca_certs {
            let pem = std::fs::read(path).map_err(|e| {
                FetchError::Client(format!("cannot read ca-certs file {}: {e}", path.display()))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                FetchError::Client(format!("{} holds no PEM certificate: {e}", path.display()))
            })?;
            roots.extend(certs);
        }
        let jar = Arc::new(reqwest::cookie::Jar::default());
        let dns = Arc::new(crate::dns::CachingResolver::new());
        let build = |proxy: Option<&str>| -> Result<Client, FetchError> {
            let mut b = Client::builder()
                .default_headers(headers.clone())
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(config.connect_timeout)
                .read_timeout(config.read_timeout)
                .timeout(config.timeout)
                .user_agent(config.user_agent.clone())
                .pool_max_idle_per_host(config.per_host)
                .pool_idle_timeout(Duration::from_secs(30))
                .tcp_nodelay(true)
                .gzip(true)
                .brotli(true)
                .deflate(true)
                .zstd(true);
            if config.cookies {
                b = b.cookie_provider(jar.clone());
            }
            b = b.dns_resolver(dns.clone());
            for cert in &roots {
                b = b.add_root_certificate(cert.clone());
            }
            b = match proxy {
                Some(p) => b.proxy(
                    reqwest::Proxy::all(p)
                        .map_err(|e| FetchError::Client(format!("proxy {p:?}: {e}")))?,
                ),
                None => b.no_proxy(),
            };
            b.build().map_err(|e| FetchError::Client(e.to_string()))
        };
        let routes = if config.proxies.is_empty() {
            vec![build(None)?]
        } else {
            config
                .proxies
                .iter()
                .map(|p| build(Some(p)))
                .collect::<Result<_, _>>()?
        };
        let pool = Pool::new(
            routes.len(),
            config.proxy_rotation,
            config.proxy_max_failures,
            config.proxy_cooldown,
        );
        Ok(Fetcher {
            routes: Arc::new(routes),
            pool: Arc::new(pool),
            max_body: config.max_body.0,
        })
    }

    /// Send a GET for `url` and wait for the response head.
    pub async fn get(&self, url: &Url) -> Result<Response, FetchError> {
        let route = self.pool.pick(url.host_str().unwrap_or(""));
        let sent = self.routes[route].get(url.clone()).send().await;
        // Only a failure to connect says anything about the route (with a proxy, the
        // proxy); the site's own errors travel back through a working proxy.
        self.pool
            .report(route, !matches!(&sent, Err(e) if e.is_connect()));
        let inner = sent.map_err(FetchError::from_reqwest)?;
        Ok(Response {
            inner,
            max_body: self.max_body,
            read: 0,
        })
    }
}

impl Response {
    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.inner.status()
    }

    /// The response headers.
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// `Content-Type`, if present and readable.
    pub fn content_type(&self) -> Option<&str> {
        self.headers().get(CONTENT_TYPE)?.to_str().ok()
    }

    /// `Content-Length` as announced (before any decompression).
    pub fn content_length(&self) -> Option<u64> {
        self.headers()
            .get(CONTENT_LENGTH)?
            .to_str()
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// `Location`, if present and readable.
    pub fn location(&self) -> Option<&str> {
        self.headers().get(LOCATION)?.to_str().ok()
    }

    /// The next chunk of (decompressed) body, cut so the total never passes the cap.
    /// `Ok(None)` at the end of the body or once the cap is reached; see
    /// [`Response::truncated`].
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, FetchError> {
        if self.read >= self.max_body {
            return Ok(None);
        }
        let Some(mut chunk) = self.inner.chunk().await.map_err(FetchError::from_reqwest)? else {
            return Ok(None);
        };
        let room = self.max_body - self.read;
        if chunk.len() as u64 > room {
            chunk.truncate(room as usize);
            // Mark the cap as passed, not merely reached: more bytes were on their way.
            self.read = self.max_body + 1;
        } else {
            self.read += chunk.len() as u64;
        }
        Ok(Some(chunk))
    }

    /// Bytes of body handed out so far.
    pub fn bytes_read(&self) -> u64 {
        self.read.min(self.max_body)
    }

    /// Whether the body was longer than the cap. Exact once `chunk` returned `None`: a body
    /// of exactly the cap is not truncated.
    pub fn truncated(&self) -> bool {
        self.read > self.max_body
    }

    /// After the cap was reached, check whether more body was coming (without reading
    /// more than one further chunk).
    pub async fn probe_past_cap(&mut self) -> Result<(), FetchError> {
        if self.read == self.max_body {
            if let Some(c) = self.inner.chunk().await.map_err(FetchError::from_reqwest)? {
                if !c.is_empty() {
                    self.read = self.max_body + 1;
                }
            }
        }
        Ok(())
    }
}
