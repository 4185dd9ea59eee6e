//! Fetching one URL: one HTTP request, no automatic redirects, timeouts on connect, on
//! each read and on the whole request, and a body read in chunks under a byte cap.
//!
//! Redirects are not followed here: trawl follows them itself, hop by hop, so that every
//! hop is a stored URL and a `redirect` edge, and so that a loop is seen and reported.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use reqwest::cookie::CookieStore;
use reqwest::header::{
    HeaderMap, HeaderValue, ACCEPT, ACCEPT_ENCODING, CONTENT_TYPE, COOKIE, LOCATION, USER_AGENT,
};
use reqwest::{Client, StatusCode};
use url::Url;

use crate::result::ErrorKind;

use std::sync::Arc;

use crate::config::CrawlConfig;
use crate::proxy::Pool;
use crate::refresh::Validators;
use crate::warc::{Capture, Earlier, WarcSink};

/// Redirect bodies read ahead for a WARC record at most: trawl itself never reads them,
/// and a redirect page is small (a body over this is recorded as truncated).
const REDIRECT_BODY: u64 = 64 << 10;

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
    pub fn kind(&self) -> ErrorKind {
        match self {
            FetchError::Timeout(_) => ErrorKind::Timeout,
            FetchError::Dns(_) => ErrorKind::Dns,
            FetchError::Connect(_) => ErrorKind::Connect,
            FetchError::Body(_) => ErrorKind::Body,
            FetchError::Decode(_) => ErrorKind::Decode,
            FetchError::Request(_) => ErrorKind::Request,
            FetchError::Client(_) => ErrorKind::Client,
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
    shape: Arc<RequestShape>,
    warc: Option<WarcSink>,
}

/// What a WARC request record needs to know of every request.
#[derive(Debug)]
struct RequestShape {
    /// The headers every request carries (what reqwest adds from the client's settings),
    /// to reconstruct the request head: reqwest does not hand out the head it sent.
    sent: HeaderMap,
    jar: Option<Arc<reqwest::cookie::Jar>>,
    /// No proxy: the peer address is the server's.
    direct: bool,
}

/// A response whose body has not been read yet.
pub struct Response {
    inner: reqwest::Response,
    max_body: u64,
    read: u64,
    /// The exchange being recorded for WARC output, if any; it is handed to the WARC
    /// writer when the response is dropped.
    capture: Option<Capture>,
    /// Body read ahead (a redirect's, for its record), handed out before the rest.
    ahead: VecDeque<Result<Option<Bytes>, FetchError>>,
    /// The body's hash so far (boxed: the state is larger than the rest of the response).
    hasher: Box<xxhash_rust::xxh3::Xxh3>,
    /// `chunk` reached the end of the body or the cap.
    ended: bool,
}

impl Fetcher {
    /// Clients with the configuration's timeouts, User-Agent, headers, cookies, proxies and
    /// body cap.
    pub fn new(config: &CrawlConfig) -> Result<Fetcher, FetchError> {
        let clients = Clients {
            config,
            headers: configured_headers(config),
            roots: root_certificates(config)?,
            jar: Arc::new(reqwest::cookie::Jar::default()),
            dns: Arc::new(crate::dns::CachingResolver::new()),
        };
        let routes = if config.proxies.is_empty() {
            vec![clients.build(None)?]
        } else {
            config
                .proxies
                .iter()
                .map(|p| clients.build(Some(p)))
                .collect::<Result<_, _>>()?
        };
        let pool = Pool::new(
            &config.proxies,
            config.proxy_rotation,
            config.proxy_max_failures,
            config.proxy_cooldown,
        );
        Ok(Fetcher {
            routes: Arc::new(routes),
            pool: Arc::new(pool),
            max_body: config.max_body.0,
            shape: Arc::new(RequestShape {
                sent: sent_headers(&clients.headers, &config.user_agent),
                jar: config.cookies.then_some(clients.jar),
                direct: config.proxies.is_empty(),
            }),
            warc: None,
        })
    }

    /// Record every exchange of this fetcher (and its clones made after) in a WARC file.
    pub fn with_warc(mut self, sink: WarcSink) -> Fetcher {
        self.warc = Some(sink);
        self
    }

    /// Send a GET for `url` and wait for the response head.
    pub async fn get(&self, url: &Url) -> Result<Response, FetchError> {
        self.send(reqwest::Method::GET, url, None).await
    }

    /// Send a conditional GET for `url` (a refresh): the previous generation's
    /// validators as `If-None-Match` / `If-Modified-Since`, and for WARC output the
    /// earlier capture an unchanged answer is a `revisit` of.
    pub async fn get_conditional(
        &self,
        url: &Url,
        previous: &Validators,
    ) -> Result<Response, FetchError> {
        let earlier = Earlier {
            date: previous
                .fetched_at
                .and_then(|ms| u64::try_from(ms).ok())
                .map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms)),
            content_hash: previous.content_hash,
        };
        let extra = (previous.headers(), earlier);
        self.send(reqwest::Method::GET, url, Some(extra)).await
    }

    /// Send a HEAD for `url` (a link check) and wait for the response head; it has no body.
    pub async fn head(&self, url: &Url) -> Result<Response, FetchError> {
        self.send(reqwest::Method::HEAD, url, None).await
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: &Url,
        conditional: Option<(HeaderMap, Earlier)>,
    ) -> Result<Response, FetchError> {
        let (extra, earlier) = conditional.unzip();
        let mut capture = match &self.warc {
            Some(sink) => {
                let mut head = self.shape.sent.clone();
                if let Some(cookies) = self.shape.jar.as_ref().and_then(|j| j.cookies(url)) {
                    head.insert(COOKIE, cookies);
                }
                if let Some(extra) = &extra {
                    head.extend(extra.clone());
                }
                Some(sink.begin(method.clone(), url, head, earlier).await)
            }
            None => None,
        };
        let route = self.pool.pick(url.host_str().unwrap_or(""));
        let mut request = self.routes[route].request(method, url.clone());
        if let Some(extra) = extra {
            request = request.headers(extra);
        }
        let sent = request.send().await;
        // Only a failure to connect says anything about the route (with a proxy, the
        // proxy); the site's own errors travel back through a working proxy.
        self.pool
            .report(route, !matches!(&sent, Err(e) if e.is_connect()));
        let inner = sent.map_err(FetchError::from_reqwest)?;
        if let Some(c) = &mut capture {
            c.response(&inner, self.shape.direct, self.max_body);
        }
        let mut resp = Response {
            inner,
            max_body: self.max_body,
            read: 0,
            capture,
            ahead: VecDeque::new(),
            hasher: Box::default(),
            ended: false,
        };
        if resp.capture.is_some() && resp.status().is_redirection() {
            resp.read_ahead(REDIRECT_BODY.min(self.max_body)).await;
        }
        Ok(resp)
    }
}

/// What every client of a crawl is built from; one client per route.
struct Clients<'a> {
    config: &'a CrawlConfig,
    headers: HeaderMap,
    roots: Vec<reqwest::Certificate>,
    jar: Arc<reqwest::cookie::Jar>,
    dns: Arc<crate::dns::CachingResolver>,
}

impl Clients<'_> {
    /// The client of one route: through `proxy`, or direct.
    fn build(&self, proxy: Option<&str>) -> Result<Client, FetchError> {
        let config = self.config;
        let mut b = Client::builder()
            .default_headers(self.headers.clone())
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
            b = b.cookie_provider(self.jar.clone());
        }
        b = b.dns_resolver(self.dns.clone());
        for cert in &self.roots {
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
    }
}

/// The configured `headers` that parse.
fn configured_headers(config: &CrawlConfig) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for h in &config.headers {
        if let Some((name, value)) = crate::config::parse_header(h) {
            headers.append(name, value);
        }
    }
    headers
}

/// Every certificate of the `ca-certs` files, trusted besides the built-in roots.
fn root_certificates(config: &CrawlConfig) -> Result<Vec<reqwest::Certificate>, FetchError> {
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
    Ok(roots)
}

/// What reqwest sends besides Host and cookies: its `Accept` default, the configured
/// `headers` over it, the User-Agent over those, and the encodings its decoders accept
/// unless a configured header names others.
fn sent_headers(headers: &HeaderMap, user_agent: &str) -> HeaderMap {
    let mut sent = HeaderMap::new();
    sent.insert(ACCEPT, HeaderValue::from_static("*/*"));
    for (name, value) in headers {
        sent.insert(name, value.clone());
    }
    if let Ok(ua) = HeaderValue::from_str(user_agent) {
        sent.insert(USER_AGENT, ua);
    }
    if !sent.contains_key(ACCEPT_ENCODING) {
        sent.insert(
            ACCEPT_ENCODING,
            HeaderValue::from_static("zstd,gzip,deflate,br"),
        );
    }
    sent
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
        crate::warc::declared_length(self.headers())
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
            self.ended = true;
            return Ok(None);
        }
        let Some(mut chunk) = self.next_raw().await? else {
            self.ended = true;
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
        self.hasher.update(&chunk);
        Ok(Some(chunk))
    }

    /// xxh3-128 of the body handed out, once it was read to its end (or to the cap):
    /// what tells a refreshed page from its previous generation's without validators.
    pub fn content_hash(&self) -> Option<u128> {
        self.ended.then(|| self.hasher.digest128())
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
            if let Some(c) = self.next_raw().await? {
                if !c.is_empty() {
                    self.read = self.max_body + 1;
                }
            }
        }
        Ok(())
    }
}

impl Response {
    /// The next chunk as the server sent it (decoded), read ahead or not.
    async fn next_raw(&mut self) -> Result<Option<Bytes>, FetchError> {
        match self.ahead.pop_front() {
            Some(early) => early,
            None => self.pull().await,
        }
    }

    /// Read the next chunk off the connection, recording it for WARC output.
    async fn pull(&mut self) -> Result<Option<Bytes>, FetchError> {
        let got = self.inner.chunk().await.map_err(FetchError::from_reqwest);
        if let Some(c) = &mut self.capture {
            match &got {
                Ok(Some(bytes)) => c.body(bytes),
                Ok(None) => c.ended(),
                Err(e) => c.failed(matches!(e, FetchError::Timeout(_))),
            }
        }
        got
    }

    /// Read up to `limit` bytes of body now, so the WARC record holds a body that trawl
    /// itself would not read (a redirect's). Whoever reads the body later still gets it.
    async fn read_ahead(&mut self, limit: u64) {
        let mut got = 0u64;
        while got < limit {
            let next = self.pull().await;
            let last = !matches!(next, Ok(Some(_)));
            if let Ok(Some(b)) = &next {
                got += b.len() as u64;
            }
            self.ahead.push_back(next);
            if last {
                break;
            }
        }
    }
}
