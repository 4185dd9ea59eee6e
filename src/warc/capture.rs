//! The fetcher's side of WARC output: an exchange captured while it happens and handed
//! to the writer thread when the response is dropped, so the fetcher never encodes,
//! hashes or writes anything itself.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use reqwest::header::{HeaderMap, CONTENT_LENGTH};
use reqwest::{StatusCode, Version};
use tokio::sync::mpsc;
use url::Url;

use super::Shared;

/// How the body of a captured response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyEnd {
    /// Read to its end.
    Complete,
    /// Cut at `max-body` (`WARC-Truncated: length`).
    Cut,
    /// A timeout stopped it (`time`).
    Timeout,
    /// The connection broke (`disconnect`).
    Broken,
    /// Not read to its end, for a reason of trawl's (`unspecified`): a redirect body over
    /// the read-ahead, a large non-HTML body trawl does not download, a parse error.
    Unread,
}

/// The response head as received.
pub(super) struct Head {
    pub(super) version: Version,
    pub(super) status: StatusCode,
    pub(super) reason: Option<Vec<u8>>,
    pub(super) headers: HeaderMap,
    pub(super) ip: Option<IpAddr>,
}

/// The earlier capture of a URL asked again by a refresh: an unchanged answer is written
/// as a `revisit` of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Earlier {
    /// When it was fetched (`WARC-Refers-To-Date`), when known.
    pub date: Option<SystemTime>,
    /// Its body's xxh3-128: an identical payload is not stored again.
    pub content_hash: Option<u128>,
}

/// One HTTP exchange, as the writer needs it.
pub(super) struct Exchange {
    pub(super) method: reqwest::Method,
    pub(super) url: Url,
    pub(super) started: SystemTime,
    pub(super) request: HeaderMap,
    pub(super) head: Head,
    pub(super) body: Vec<u8>,
    pub(super) end: BodyEnd,
    pub(super) earlier: Option<Earlier>,
}

/// Where the fetcher sends captures. Cheap to clone.
#[derive(Clone)]
pub struct WarcSink {
    pub(super) tx: mpsc::Sender<Exchange>,
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for WarcSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcSink")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

impl WarcSink {
    /// Start capturing a request to `url` carrying `request` headers (a refresh's asks
    /// again what was captured `earlier`). Waits while the
    /// writer is `queue` exchanges behind: the backpressure that keeps memory bounded.
    pub async fn begin(
        &self,
        method: reqwest::Method,
        url: &Url,
        request: HeaderMap,
        earlier: Option<Earlier>,
    ) -> Capture {
        // Reserved before the request is sent, so the capture can be handed over without
        // waiting whenever and wherever the response is dropped.
        let slot = self.tx.clone().reserve_owned().await.ok();
        Capture {
            slot,
            shared: self.shared.clone(),
            exchange: Some(Exchange {
                method,
                url: url.clone(),
                started: SystemTime::now(),
                request,
                head: Head {
                    version: Version::HTTP_11,
                    status: StatusCode::OK,
                    reason: None,
                    headers: HeaderMap::new(),
                    ip: None,
                },
                body: Vec::new(),
                end: BodyEnd::Unread,
                earlier,
            }),
            answered: false,
            cap: 0,
            error: None,
        }
    }
}

/// One exchange being captured. Sent to the writer when dropped, if a response head came;
/// a request that got no response leaves no record.
pub struct Capture {
    slot: Option<mpsc::OwnedPermit<Exchange>>,
    shared: Arc<Shared>,
    exchange: Option<Exchange>,
    answered: bool,
    cap: u64,
    error: Option<BodyEnd>,
}

impl Capture {
    /// The response head arrived. `ip`: the server's address, when the connection went to
    /// it directly. `cap`: the most body bytes recorded (the crawl's `max-body`).
    pub fn response(&mut self, resp: &reqwest::Response, ip: bool, cap: u64) {
        if let Some(ex) = &mut self.exchange {
            ex.head = Head {
                version: resp.version(),
                status: resp.status(),
                reason: resp
                    .extensions()
                    .get::<hyper::ext::ReasonPhrase>()
                    .map(|r| r.as_bytes().to_vec()),
                headers: resp.headers().clone(),
                ip: ip.then(|| resp.remote_addr().map(|a| a.ip())).flatten(),
            };
            self.answered = true;
            self.cap = cap;
        }
    }

    /// Body bytes as they arrived (before trawl's own cap): kept up to the cap.
    pub fn body(&mut self, bytes: &[u8]) {
        if let Some(ex) = &mut self.exchange {
            let room = self.cap.saturating_sub(ex.body.len() as u64) as usize;
            if bytes.len() > room {
                ex.body.extend_from_slice(&bytes[..room]);
                ex.end = BodyEnd::Cut;
            } else {
                ex.body.extend_from_slice(bytes);
            }
        }
    }

    /// The body ended (the server sent all of it).
    pub fn ended(&mut self) {
        if let Some(ex) = &mut self.exchange {
            if ex.end == BodyEnd::Unread {
                ex.end = BodyEnd::Complete;
            }
        }
    }

    /// Reading the body failed: `timeout` for a timeout, else a broken connection.
    pub fn failed(&mut self, timeout: bool) {
        self.error = Some(if timeout {
            BodyEnd::Timeout
        } else {
            BodyEnd::Broken
        });
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let (Some(mut ex), Some(slot)) = (self.exchange.take(), self.slot.take()) else {
            return;
        };
        if !self.answered {
            return;
        }
        if let (BodyEnd::Unread | BodyEnd::Complete, Some(e)) = (ex.end, self.error) {
            ex.end = e;
        }
        if ex.end == BodyEnd::Unread
            && declared_length(&ex.head.headers) == Some(ex.body.len() as u64)
        {
            ex.end = BodyEnd::Complete;
        }
        // Counted and sent under one lock, so the count order is the channel order and
        // the barrier's "everything sent before now" means what it says.
        let mut state = self.shared.lock();
        state.sent += 1;
        let _ = slot.send(ex);
    }
}

/// The `Content-Length` of `headers`, when present and a number.
pub(crate) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}
