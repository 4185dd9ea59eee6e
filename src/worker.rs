//! A worker: one page at a time, fetch, extract while the body streams in, admit the
//! links, and hand the result to the store writer.
//!
//! Whatever happens to a page (an HTTP error, a network error, a body over the cap, a
//! panic in trawl or in the user's page hook), the worker records a result for it and
//! frees its host slot, and the page's drain guard is dropped: nothing can leave the crawl
//! waiting for a page that will never finish.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use reqwest::header::{DATE, RETRY_AFTER};
use tokio_util::sync::CancellationToken;

use crate::admit::Gate;
use crate::charset;
use crate::events::{EventSink, Outlink, Page};
use crate::extract::Extractor;
use crate::fetch::{Fetcher, Response};
use crate::frontier::{Frontier, QueuedUrl};
use crate::retry::{self, RetryPolicy};
use crate::stats::Stats;
use crate::store::{now_ms, HostId, PageRecord, WriterHandle};

/// What a page hook sees: one fetched URL and its result.
#[derive(Debug)]
pub struct PageEvent<'a> {
    /// The URL fetched.
    pub url: &'a url::Url,
    /// Its click depth.
    pub depth: u32,
    /// What will be stored for it.
    pub record: &'a PageRecord,
}

/// Called for every fetched URL, from the worker that fetched it.
pub type PageHook = Arc<dyn Fn(&PageEvent<'_>) + Send + Sync>;

/// The event for a finished page.
fn page_event(item: &QueuedUrl, rec: &PageRecord, extras: Extras) -> Page {
    Page {
        url: item.url.clone(),
        depth: rec.depth,
        status: rec.status,
        headers: extras.headers,
        content_type: rec.content_type.clone(),
        size: rec.size,
        truncated: rec.truncated,
        title: rec.title.clone(),
        fetch_ms: rec.fetch_ms,
        attempts: rec.attempts,
        error_kind: rec.error_kind,
        error: rec.error.clone(),
        outlinks: extras.outlinks,
        body: extras.body.map(|b| b.freeze()),
    }
}

/// Non-HTML bodies up to this size are read (and discarded) so the connection can be
/// reused; larger ones are recorded by their `Content-Length` and not downloaded.
const READ_OTHER_UP_TO: u64 = 1 << 20;

/// Everything a worker shares with the others.
pub struct Worker {
    /// HTTP client.
    pub fetcher: Fetcher,
    /// Admission of discovered URLs.
    pub gate: Arc<Gate>,
    /// Per-host slots.
    pub frontier: Arc<Frontier>,
    /// Where results go.
    pub writer: WriterHandle,
    /// Run counters.
    pub stats: Arc<Stats>,
    /// Set when the crawl stops.
    pub cancel: CancellationToken,
    /// The user's page hook.
    pub hook: Option<PageHook>,
    /// When and how to try again.
    pub retry: RetryPolicy,
    /// Our product token (lower case), for agent-specific `X-Robots-Tag` directives.
    pub agent: String,
    /// Where page events go, if anyone subscribed.
    pub events: Option<EventSink>,
}

/// One attempt at a URL: a result to store, or another try later.
enum Attempt {
    Done(Box<(PageRecord, Extras)>),
    Retry(Instant),
}

/// What a page event carries beyond the stored record; gathered only when someone
/// subscribed to events.
#[derive(Default)]
struct Extras {
    headers: reqwest::header::HeaderMap,
    outlinks: Vec<Outlink>,
    body: Option<bytes::BytesMut>,
}

/// Frees a host slot however the page ends.
struct Slot<'a> {
    frontier: &'a Frontier,
    host: HostId,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.frontier.release(self.host);
    }
}

impl Worker {
    /// Take pages from `rx` until it closes.
    pub async fn run(self: Arc<Self>, rx: async_channel::Receiver<QueuedUrl>) {
        while let Ok(mut item) = rx.recv().await {
            let _slot = Slot {
                frontier: &self.frontier,
                host: item.host,
            };
            if self.cancel.is_cancelled() {
                // Stays queued in the store; fetched on resume.
                continue;
            }
            let (record, extras) = match AssertUnwindSafe(self.page(&item)).catch_unwind().await {
                Ok(Attempt::Done(done)) => *done,
                Ok(Attempt::Retry(at)) => {
                    self.stats.record_retry();
                    // Keeps its drain guard while it waits.
                    item.attempts += 1;
                    self.frontier.retry_at(item, at);
                    continue;
                }
                Err(panic) => (
                    PageRecord {
                        id: item.id,
                        depth: item.depth,
                        failed: true,
                        fetched_at: now_ms(),
                        attempts: item.attempts + 1,
                        error_kind: Some("panic"),
                        error: Some(panic_message(&panic)),
                        ..PageRecord::default()
                    },
                    Extras::default(),
                ),
            };
            crate::failpoint::hit(crate::failpoint::Point::AfterFetch);
            self.stats.record(&record);
            let event = self
                .events
                .as_ref()
                .map(|_| page_event(&item, &record, extras));
            if self.writer.page(record).await.is_err() {
                // The store stopped on an error; the crawl reports it.
                self.cancel.cancel();
            }
            if let (Some(sink), Some(event)) = (&self.events, event) {
                // Waits while the consumer is behind: backpressure, never loss.
                sink.send(event).await;
            }
            // `item` (its drain guard) drops only now, after its result is queued.
            drop(item);
        }
    }

    async fn page(&self, item: &QueuedUrl) -> Attempt {
        let start = Instant::now();
        let attempts = item.attempts + 1;
        let mut extras = Extras::default();
        let mut rec = PageRecord {
            id: item.id,
            fetched_at: now_ms(),
            depth: self.gate.current_depth(&item.url, item.depth),
            attempts,
            ..PageRecord::default()
        };
        match self.fetcher.get(&item.url).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                if retry::is_transient_status(status) {
                    let asked = if retry::pauses_host(status) {
                        let header = |h| resp.headers().get(h).and_then(|v| v.to_str().ok());
                        self.retry.retry_after(header(RETRY_AFTER), header(DATE))
                    } else {
                        None
                    };
                    let wait = asked.unwrap_or_else(|| self.retry.backoff(item.attempts));
                    let at = Instant::now() + wait;
                    if retry::pauses_host(status) {
                        self.frontier.pause(item.host, at);
                        self.stats.record_pause();
                    }
                    if self.retry.may_retry(attempts) {
                        return Attempt::Retry(at);
                    }
                }
                if let Some(sink) = &self.events {
                    extras.headers = resp.headers().clone();
                    if sink.bodies {
                        extras.body = Some(bytes::BytesMut::new());
                    }
                }
                self.response(item, resp, &mut rec, &mut extras).await;
                // The connection broke mid-body: as transient as a failed connect. Links
                // already admitted stay admitted; the next attempt records the edges.
                if rec.error_kind == Some("body") && self.retry.may_retry(attempts) {
                    return Attempt::Retry(Instant::now() + self.retry.backoff(item.attempts));
                }
            }
            Err(e) => {
                if retry::is_transient_error(&e) && self.retry.may_retry(attempts) {
                    return Attempt::Retry(Instant::now() + self.retry.backoff(item.attempts));
                }
                fail(&mut rec, e.kind(), e.to_string())
            }
        }
        rec.fetch_ms = start.elapsed().as_millis() as u64;
        if let Some(hook) = &self.hook {
            hook(&PageEvent {
                url: &item.url,
                depth: rec.depth,
                record: &rec,
            });
        }
        Attempt::Done(Box::new((rec, extras)))
    }

    async fn response(
        &self,
        item: &QueuedUrl,
        mut resp: Response,
        rec: &mut PageRecord,
        extras: &mut Extras,
    ) {
        rec.status = Some(resp.status().as_u16());
        rec.content_type = resp.content_type().map(str::to_owned);
        if resp.status().is_redirection() {
            if let Some(location) = resp.location() {
                match item.url.join(location.trim()) {
                    Ok(target) => {
                        if self.events.is_some() {
                            let mut url = target.clone();
                            url.set_fragment(None);
                            extras.outlinks.push(Outlink {
                                url,
                                kind: crate::link::LinkKind::Redirect,
                                nofollow: false,
                                anchor: None,
                            });
                        }
                        let (edge, followed) = self.gate.admit_redirect(item, rec.depth, target);
                        rec.edges.push(edge);
                        if let Err(e) = followed {
                            let msg = match e {
                                crate::admit::RedirectError::Loop => {
                                    format!("redirect loop back to {location}")
                                }
                                crate::admit::RedirectError::TooMany => {
                                    format!("more than {} redirects", item.chain.len())
                                }
                            };
                            fail(rec, e.kind(), msg);
                        }
                    }
                    Err(e) => fail(
                        rec,
                        "bad-location",
                        format!("unusable Location {location:?}: {e}"),
                    ),
                }
                rec.size = resp.content_length();
                return;
            }
        }
        let html = rec.content_type.as_deref().map(is_html);
        match html {
            Some(true) => self.html(item, resp, rec, None, extras).await,
            Some(false) => other(resp, rec, extras).await,
            None => {
                // No Content-Type: look at the first bytes, as browsers do.
                match resp.chunk().await {
                    Ok(Some(first)) if looks_like_html(&first) => {
                        self.html(item, resp, rec, Some(first), extras).await
                    }
                    // `other` counts the first chunk too: the response tracks bytes read.
                    Ok(first) => {
                        if let (Some(body), Some(first)) = (&mut extras.body, &first) {
                            body.extend_from_slice(first);
                        }
                        other(resp, rec, extras).await
                    }
                    Err(e) => fail(rec, e.kind(), e.to_string()),
                }
            }
        }
    }

    async fn html(
        &self,
        item: &QueuedUrl,
        mut resp: Response,
        rec: &mut PageRecord,
        first: Option<bytes::Bytes>,
        extras: &mut Extras,
    ) {
        let content_type = rec.content_type.clone();
        let header_charset = content_type.as_deref().and_then(charset_of);
        let resp_robots: Option<String> = {
            let values: Vec<&str> = resp
                .headers()
                .get_all("x-robots-tag")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            (!values.is_empty()).then(|| values.join(","))
        };
        // Gather the first bytes until the encoding is decided (usually at once: a BOM
        // or the header decides; otherwise a <meta> or the detector needs a few KB).
        let mut prefix: Vec<u8> = first.map(|b| b.to_vec()).unwrap_or_default();
        let mut ended = false;
        let decided = loop {
            if let Some(d) = charset::decide(&prefix, header_charset, ended) {
                break d;
            }
            match resp.chunk().await {
                Ok(Some(chunk)) => prefix.extend_from_slice(&chunk),
                Ok(None) => ended = true,
                Err(e) => {
                    fail(rec, e.kind(), e.to_string());
                    ended = true;
                }
            }
        };
        let (label, transcode) = charset::for_extractor(decided.encoding);
        let mut transcoder = transcode.then(|| charset::Transcoder::new(decided.encoding));
        let mut extractor = Extractor::new(item.url.clone(), Some(label));
        let mut size = prefix.len() as u64;
        let mut feed = |extractor: &mut Extractor, bytes: &[u8], last: bool| match &mut transcoder {
            Some(t) => extractor.write(t.push(bytes, last)),
            None => extractor.write(bytes),
        };
        if let Some(body) = &mut extras.body {
            body.extend_from_slice(&prefix);
        }
        let mut parse_error = feed(
            &mut extractor,
            &prefix[decided.bom_len.min(prefix.len())..],
            ended,
        )
        .err();
        drop(prefix);
        while parse_error.is_none() && !ended {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    size += chunk.len() as u64;
                    if let Some(body) = &mut extras.body {
                        body.extend_from_slice(&chunk);
                    }
                    parse_error = feed(&mut extractor, &chunk, false).err();
                }
                Ok(None) => {
                    ended = true;
                    parse_error = feed(&mut extractor, &[], true).err();
                    if let Err(e) = resp.probe_past_cap().await {
                        fail(rec, e.kind(), e.to_string());
                    }
                }
                Err(e) => {
                    // Keep the links read so far; the page is recorded as failed.
                    fail(rec, e.kind(), e.to_string());
                    break;
                }
            }
        }
        rec.size = Some(size);
        rec.truncated = resp.truncated();
        let extracted = match parse_error {
            Some(e) => Err(e),
            None => extractor.end(),
        };
        match extracted {
            Ok(x) => {
                rec.title = x.title;
                let header = robots_tag(resp_robots.as_deref(), &self.agent);
                rec.noindex = x.meta_noindex || header.noindex;
                let follow = !(x.meta_nofollow || header.nofollow);
                if self.events.is_some() {
                    extras.outlinks = x
                        .links
                        .iter()
                        .map(|l| {
                            let mut url = l.url.clone();
                            url.set_fragment(None);
                            Outlink {
                                url,
                                kind: l.kind,
                                nofollow: l.nofollow || !follow,
                                anchor: l.anchor.clone(),
                            }
                        })
                        .collect();
                }
                rec.edges = self.gate.admit_links(item.id, rec.depth, x.links, follow);
            }
            Err(e) => fail(rec, "parse", e.to_string()),
        }
    }
}

async fn other(mut resp: Response, rec: &mut PageRecord, extras: &mut Extras) {
    if let Some(len) = resp.content_length() {
        if len > READ_OTHER_UP_TO {
            rec.size = Some(len);
            return;
        }
    }
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if let Some(body) = &mut extras.body {
                    body.extend_from_slice(&chunk);
                }
            }
            Ok(None) => break,
            Err(e) => {
                fail(rec, e.kind(), e.to_string());
                break;
            }
        }
    }
    if let Err(e) = resp.probe_past_cap().await {
        fail(rec, e.kind(), e.to_string());
    }
    rec.size = Some(resp.bytes_read());
    rec.truncated = resp.truncated();
}

fn fail(rec: &mut PageRecord, kind: &'static str, message: String) {
    rec.failed = true;
    rec.error_kind = Some(kind);
    rec.error = Some(message);
}

/// HTML and XHTML media types: the only ones trawl parses.
fn is_html(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("text/html")
        || essence.eq_ignore_ascii_case("application/xhtml+xml")
}

/// The `charset` parameter of a Content-Type.
fn charset_of(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"'))
    })
}

/// Directives of an `X-Robots-Tag` header that apply to us.
#[derive(Debug, Default, PartialEq, Eq)]
struct RobotsTag {
    nofollow: bool,
    noindex: bool,
}

/// Read `X-Robots-Tag` values (joined with commas): directives apply to every crawler
/// unless prefixed by a user agent (`otherbot: noindex`), in which case only to that one.
fn robots_tag(value: Option<&str>, agent: &str) -> RobotsTag {
    let mut tag = RobotsTag::default();
    let mut applies = true;
    for part in value.unwrap_or("").split(',') {
        let mut part = part.trim();
        if let Some((who, rest)) = part.split_once(':') {
            let who = who.trim();
            // "unavailable_after: <date>" is a directive, not an agent.
            if !who.eq_ignore_ascii_case("unavailable_after") {
                applies = who.eq_ignore_ascii_case(agent);
                part = rest.trim();
            }
        }
        if !applies {
            continue;
        }
        for word in part.split_ascii_whitespace() {
            if word.eq_ignore_ascii_case("nofollow") || word.eq_ignore_ascii_case("none") {
                tag.nofollow = true;
            }
            if word.eq_ignore_ascii_case("noindex") || word.eq_ignore_ascii_case("none") {
                tag.noindex = true;
            }
        }
    }
    tag
}

fn looks_like_html(first: &[u8]) -> bool {
    let body = first.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(first);
    let Some(start) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
        return false;
    };
    let head: Vec<u8> = body[start..]
        .iter()
        .take(14)
        .map(u8::to_ascii_lowercase)
        .collect();
    head.starts_with(b"<!doctype html")
        || head.starts_with(b"<html")
        || head.starts_with(b"<head")
        || head.starts_with(b"<body")
        || head.starts_with(b"<!--")
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("panicked: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert!(is_html("text/html; charset=utf-8"));
        assert!(is_html("Application/XHTML+XML"));
        assert!(!is_html("application/pdf"));
        assert_eq!(
            charset_of("text/html; Charset=\"Shift_JIS\""),
            Some("Shift_JIS")
        );
        assert_eq!(charset_of("text/html"), None);
        assert!(looks_like_html(b"\xEF\xBB\xBF  <!DOCTYPE HTML><p>"));
        assert!(!looks_like_html(b"%PDF-1.4"));
    }

    #[test]
    fn x_robots_tag() {
        let t = |v: &str| robots_tag(Some(v), "trawl");
        assert_eq!(
            t("noindex"),
            RobotsTag {
                nofollow: false,
                noindex: true
            }
        );
        assert_eq!(
            t("none"),
            RobotsTag {
                nofollow: true,
                noindex: true
            }
        );
        assert_eq!(t("otherbot: nofollow"), RobotsTag::default());
        assert_eq!(
            t("otherbot: noindex, trawl: nofollow"),
            RobotsTag {
                nofollow: true,
                noindex: false
            }
        );
        assert!(t("unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow").nofollow);
        assert_eq!(robots_tag(None, "trawl"), RobotsTag::default());
    }
}
