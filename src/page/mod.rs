//! Reading one response: fetch a URL, stream its body through the charset decision and
//! the link extractor, and say what came of it: a record to store, the links found, a
//! redirect target, or another try later.
//!
//! This is the part of a worker that knows nothing of where URLs come from or go.
//! [`PageResult`] is what it produces: the one result type of a page.

use std::time::Instant;

use reqwest::header::{DATE, ETAG, LAST_MODIFIED, RETRY_AFTER};
use url::Url;

use crate::charset::{self, charset_of};
use crate::config::CrawlConfig;
use crate::extract::{ExtractError, Extracted, Extractor, Link};
use crate::fetch::{Fetcher, Response};
use crate::link::Outlink;
use crate::politeness::robots::product_token;
use crate::refresh::Validators;
use crate::result::{now_ms, ErrorKind, PageResult};
use crate::retry::{self, RetryPolicy};

mod check;

/// Non-HTML bodies up to this size are read (and discarded) so the connection can be
/// reused; larger ones are recorded by their `Content-Length` and not downloaded.
const READ_OTHER_UP_TO: u64 = 1 << 20;

/// Reads pages; shared by every worker.
#[derive(Clone)]
pub struct Reader {
    /// HTTP client.
    pub fetcher: Fetcher,
    /// When and how to try again.
    pub retry: RetryPolicy,
    /// Our product token (lower case), for agent-specific `X-Robots-Tag` directives.
    pub agent: String,
    /// Gather headers and outlinks for page events.
    pub events: bool,
    /// Keep bodies for page events.
    pub bodies: bool,
    /// Collect HTML pages' ids (`check-fragments`).
    pub ids: bool,
}

/// How a URL is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Fetched and read for links: a page of the crawl.
    Crawl,
    /// Checked only (an external link under `check-external`): one GET when its ids
    /// may be wanted, HEAD when that says enough; its links never followed.
    Check,
}

/// What one attempt at a URL came to.
pub struct Read {
    /// The host answered 429/503: pause it until then (every worker).
    pub pause: Option<Instant>,
    /// A result, or a retry.
    pub outcome: Outcome,
}

/// A result to store, or another try at the given time.
pub enum Outcome {
    /// Try again then.
    Retry(Instant),
    /// Done (successfully or not).
    Done(Box<Found>),
}

/// A finished page: its result and what it links to.
#[derive(Default)]
pub struct Found {
    /// What will be stored.
    pub rec: PageResult,
    /// What a page event carries beyond the record.
    pub extras: Extras,
    /// Links in document order (HTML pages).
    pub links: Vec<Link>,
    /// False when the page said `nofollow` (meta robots or `X-Robots-Tag`).
    pub follow: bool,
    /// Where a 3xx pointed.
    pub redirect: Option<Url>,
}

/// What a page event carries beyond the stored record; gathered only when someone
/// subscribed to events.
#[derive(Default)]
pub struct Extras {
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// Outlinks as found.
    pub outlinks: Vec<Outlink>,
    /// The body, when asked for.
    pub body: Option<bytes::BytesMut>,
}

impl Reader {
    /// A reader with `config`'s retry policy and user agent, page events off.
    pub fn new(fetcher: Fetcher, config: &CrawlConfig) -> Reader {
        Reader {
            fetcher,
            retry: RetryPolicy {
                max_attempts: config.max_attempts,
                base: config.retry_backoff,
                max_retry_after: config.max_retry_after,
            },
            agent: product_token(&config.user_agent).to_ascii_lowercase(),
            events: false,
            bodies: false,
            ids: config.check_fragments,
        }
    }

    /// Fetch `url` (attempt number `attempts + 1`) and read its response; conditionally
    /// when the previous generation's `validators` are known (a refresh).
    pub async fn read(
        &self,
        url: &Url,
        depth: u32,
        attempts: u32,
        ask: Ask,
        validators: Option<&Validators>,
    ) -> Read {
        let start = Instant::now();
        let mut found = Found {
            rec: PageResult {
                fetched_at: now_ms(),
                depth,
                attempts: attempts + 1,
                ..PageResult::default()
            },
            follow: true,
            ..Found::default()
        };
        let mut pause = None;
        let sent = match ask {
            Ask::Crawl => match validators {
                Some(v) => self.fetcher.get_conditional(url, v).await,
                None => self.fetcher.get(url).await,
            }
            .map(|r| (r, false)),
            Ask::Check => self.check(url).await,
        };
        found.rec.checked = ask == Ask::Check;
        match sent {
            Ok((resp, headed)) => {
                let status = resp.status().as_u16();
                if retry::is_transient_status(status) {
                    let asked = if retry::pauses_host(status) {
                        let header = |h| resp.headers().get(h).and_then(|v| v.to_str().ok());
                        self.retry.retry_after(header(RETRY_AFTER), header(DATE))
                    } else {
                        None
                    };
                    let wait = asked.unwrap_or_else(|| self.retry.backoff(attempts));
                    let at = Instant::now() + wait;
                    if retry::pauses_host(status) {
                        pause = Some(at);
                    }
                    if self.retry.may_retry(attempts + 1) {
                        return Read {
                            pause,
                            outcome: Outcome::Retry(at),
                        };
                    }
                }
                if self.events {
                    found.extras.headers = resp.headers().clone();
                    if self.bodies {
                        found.extras.body = Some(bytes::BytesMut::new());
                    }
                }
                if status == 304 && validators.is_some() {
                    // Not modified: the store carries the previous record and links over.
                    found.rec.status = Some(304);
                } else {
                    self.response(url, resp, &mut found, headed).await;
                }
                found.rec.unchanged = validators.and_then(|v| v.judge(&found.rec));
                if ask == Ask::Check {
                    // Checked, not crawled: the ids stay, the links go.
                    found.links.clear();
                    found.extras.outlinks.clear();
                }
                // The connection broke mid-body: as transient as a failed connect. The
                // links read so far are dropped; the next attempt finds them all.
                if found.rec.error_kind == Some(ErrorKind::Body)
                    && self.retry.may_retry(attempts + 1)
                {
                    return Read {
                        pause,
                        outcome: Outcome::Retry(Instant::now() + self.retry.backoff(attempts)),
                    };
                }
            }
            Err(e) => {
                if retry::is_transient_error(&e) && self.retry.may_retry(attempts + 1) {
                    return Read {
                        pause,
                        outcome: Outcome::Retry(Instant::now() + self.retry.backoff(attempts)),
                    };
                }
                found.rec.fail(e.kind(), e.to_string())
            }
        }
        found.rec.fetch_ms = start.elapsed().as_millis() as u64;
        Read {
            pause,
            outcome: Outcome::Done(Box::new(found)),
        }
    }

    async fn response(&self, url: &Url, mut resp: Response, found: &mut Found, headed: bool) {
        let Found { rec, extras, .. } = found;
        rec.status = Some(resp.status().as_u16());
        rec.content_type = resp.content_type().map(str::to_owned);
        rec.last_modified = resp
            .headers()
            .get(LAST_MODIFIED)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        rec.etag = resp
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if resp.status().is_redirection() {
            if let Some(location) = resp.location() {
                match url.join(location.trim()) {
                    Ok(target) => {
                        if self.events {
                            let mut url = target.clone();
                            url.set_fragment(None);
                            extras.outlinks.push(Outlink {
                                url,
                                kind: crate::link::LinkKind::Redirect,
                                nofollow: false,
                                anchor: None,
                            });
                        }
                        found.redirect = Some(target);
                    }
                    Err(e) => rec.fail(
                        ErrorKind::BadLocation,
                        format!("unusable Location {location:?}: {e}"),
                    ),
                }
                rec.size = resp.content_length();
                return;
            }
        }
        if headed {
            rec.size = resp.content_length();
            return;
        }
        let refresh = refresh_header(url, &resp);
        let html = rec.content_type.as_deref().map(is_html);
        match html {
            Some(true) => self.html(url, resp, found, None).await,
            Some(false) => other(resp, rec, extras).await,
            None => {
                // No Content-Type: look at the first bytes, as browsers do.
                match resp.chunk().await {
                    Ok(Some(first)) if looks_like_html(&first) => {
                        self.html(url, resp, found, Some(first)).await
                    }
                    // `other` counts the first chunk too: the response tracks bytes read.
                    Ok(first) => {
                        if let (Some(body), Some(first)) = (&mut extras.body, &first) {
                            body.extend_from_slice(first);
                        }
                        other(resp, rec, extras).await
                    }
                    Err(e) => rec.fail(e.kind(), e.to_string()),
                }
            }
        }
        if let Some(link) = refresh {
            // The header comes before the body, and so does its link.
            if self.events {
                let event = outlinks(std::slice::from_ref(&link), found.follow);
                found.extras.outlinks.splice(0..0, event);
            }
            found.links.insert(0, link);
        }
    }

    async fn html(
        &self,
        url: &Url,
        mut resp: Response,
        found: &mut Found,
        first: Option<bytes::Bytes>,
    ) {
        let Found { rec, extras, .. } = found;
        let content_type = rec.content_type.clone();
        let header_charset = content_type.as_deref().and_then(charset_of);
        let resp_robots = robots_header(&resp);
        let (decided, prefix) = Prefix::read(&mut resp, first, header_charset, rec).await;
        let mut stream = Stream::new(url, decided.encoding, &prefix, self.ids);
        let bytes = prefix.bytes();
        if let Some(body) = &mut extras.body {
            body.extend_from_slice(bytes);
        }
        stream.feed(&bytes[decided.bom_len.min(bytes.len())..], prefix.ended);
        drop(prefix);
        stream.read_rest(&mut resp, rec, &mut extras.body).await;
        rec.size = Some(stream.size);
        rec.truncated = resp.truncated();
        rec.content_hash = resp.content_hash();
        match stream.finish() {
            Ok(x) => self.take_extracted(x, resp_robots.as_deref(), found),
            Err(e) => rec.fail(ErrorKind::Parse, e.to_string()),
        }
    }

    /// Record what the extractor found, under the page's own `nofollow` and `noindex`
    /// (meta robots and `X-Robots-Tag`).
    fn take_extracted(&self, x: Extracted, resp_robots: Option<&str>, found: &mut Found) {
        found.rec.title = x.title;
        found.rec.ids = x.ids;
        let header = robots_tag(resp_robots, &self.agent);
        found.rec.noindex = x.meta_noindex || header.noindex;
        let follow = !(x.meta_nofollow || header.nofollow);
        if self.events {
            found.extras.outlinks = outlinks(&x.links, follow);
        }
        found.links = x.links;
        found.follow = follow;
    }
}

/// The link a `Refresh` response header names, as `<meta http-equiv=refresh>` would.
fn refresh_header(url: &Url, resp: &Response) -> Option<Link> {
    let value = resp.headers().get("refresh")?.to_str().ok()?;
    let target = crate::extract::refresh::refresh_target(value)?;
    Some(Link {
        url: url.join(target.trim()).ok()?,
        kind: crate::link::LinkKind::Refresh,
        nofollow: false,
        anchor: None,
        at: None,
    })
}

/// Every `X-Robots-Tag` value of the response, joined with commas.
fn robots_header(resp: &Response) -> Option<String> {
    let values: Vec<&str> = resp
        .headers()
        .get_all("x-robots-tag")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// Links as a page event shows them: without fragments, and `nofollow` when the page
/// said so for all its links.
fn outlinks(links: &[Link], follow: bool) -> Vec<Outlink> {
    links
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
        .collect()
}

/// The first bytes of an HTML body, read until its encoding is decided.
struct Prefix {
    /// The first chunk as it came (often the whole page).
    first: bytes::Bytes,
    /// Every chunk so far, copied only when deciding needed more than one.
    joined: Vec<u8>,
    /// The body ended (or broke) while deciding.
    ended: bool,
}

impl Prefix {
    /// Gather the first bytes until the encoding is decided (usually at once: a BOM or the
    /// header decides; otherwise a <meta> or the detector needs a few KB).
    async fn read(
        resp: &mut Response,
        first: Option<bytes::Bytes>,
        header_charset: Option<&str>,
        rec: &mut PageResult,
    ) -> (charset::Decided, Prefix) {
        let mut prefix = Prefix {
            first: first.unwrap_or_default(),
            joined: Vec::new(),
            ended: false,
        };
        loop {
            if let Some(d) = charset::decide(prefix.bytes(), header_charset, prefix.ended) {
                return (d, prefix);
            }
            match resp.chunk().await {
                Ok(Some(chunk)) if prefix.first.is_empty() => prefix.first = chunk,
                Ok(Some(chunk)) => {
                    if prefix.joined.is_empty() {
                        prefix.joined.extend_from_slice(&prefix.first);
                    }
                    prefix.joined.extend_from_slice(&chunk);
                }
                Ok(None) => prefix.ended = true,
                Err(e) => {
                    rec.fail(e.kind(), e.to_string());
                    prefix.ended = true;
                }
            }
        }
    }

    /// The bytes read before the encoding was decided: the first chunk alone, or all the
    /// chunks joined once more than one was needed.
    #[inline]
    fn bytes(&self) -> &[u8] {
        if self.joined.is_empty() {
            &self.first
        } else {
            &self.joined
        }
    }
}

/// An HTML body on its way through the extractor, chunk by chunk.
struct Stream {
    extractor: Extractor,
    /// For encodings the extractor cannot read: decodes to UTF-8 before it.
    transcoder: Option<charset::Transcoder>,
    /// Body bytes read.
    size: u64,
    /// The body has ended (or broke).
    ended: bool,
    /// The extractor failed: nothing more is fed.
    parse_error: Option<ExtractError>,
}

impl Stream {
    /// A stream for a body in `encoding` that starts with `prefix`.
    fn new(
        url: &Url,
        encoding: &'static encoding_rs::Encoding,
        prefix: &Prefix,
        ids: bool,
    ) -> Stream {
        let (label, transcode) = charset::for_extractor(encoding);
        let transcoder = transcode.then(|| charset::Transcoder::new(encoding));
        let extractor = if ids {
            Extractor::with_ids(url.clone(), Some(label))
        } else {
            Extractor::new(url.clone(), Some(label))
        };
        Stream {
            extractor,
            transcoder,
            size: prefix.bytes().len() as u64,
            ended: prefix.ended,
            parse_error: None,
        }
    }

    /// Feed the next `bytes` of the body, the last ones when `last`.
    #[inline]
    fn feed(&mut self, bytes: &[u8], last: bool) {
        self.parse_error = match &mut self.transcoder {
            Some(t) => self.extractor.write(t.push(bytes, last)),
            None => self.extractor.write(bytes),
        }
        .err();
    }

    /// Read and feed the rest of the body, until it ends or the extractor fails.
    async fn read_rest(
        &mut self,
        resp: &mut Response,
        rec: &mut PageResult,
        body: &mut Option<bytes::BytesMut>,
    ) {
        while self.parse_error.is_none() && !self.ended {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    self.size += chunk.len() as u64;
                    if let Some(body) = body {
                        body.extend_from_slice(&chunk);
                    }
                    self.feed(&chunk, false);
                }
                Ok(None) => {
                    self.ended = true;
                    self.feed(&[], true);
                    if let Err(e) = resp.probe_past_cap().await {
                        rec.fail(e.kind(), e.to_string());
                    }
                }
                Err(e) => {
                    // Keep the links read so far; the page is recorded as failed.
                    rec.fail(e.kind(), e.to_string());
                    break;
                }
            }
        }
    }

    fn finish(self) -> Result<Extracted, ExtractError> {
        match self.parse_error {
            Some(e) => Err(e),
            None => self.extractor.end(),
        }
    }
}

async fn other(mut resp: Response, rec: &mut PageResult, extras: &mut Extras) {
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
                rec.fail(e.kind(), e.to_string());
                break;
            }
        }
    }
    if let Err(e) = resp.probe_past_cap().await {
        rec.fail(e.kind(), e.to_string());
    }
    rec.size = Some(resp.bytes_read());
    rec.truncated = resp.truncated();
    rec.content_hash = resp.content_hash();
}

/// HTML and XHTML media types: the only ones trawl parses.
pub(super) fn is_html(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("text/html")
        || essence.eq_ignore_ascii_case("application/xhtml+xml")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert!(is_html("text/html; charset=utf-8"));
        assert!(is_html("Application/XHTML+XML"));
        assert!(!is_html("application/pdf"));
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
