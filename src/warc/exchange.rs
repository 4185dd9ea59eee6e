//! An exchange as WARC records: a `request` and a `response` record that point at each
//! other, with heads rewritten to match the body as trawl read it (decoded, unchunked).

use reqwest::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use reqwest::{StatusCode, Version};
use url::Position;

use super::capture::{BodyEnd, Earlier, Exchange};
use super::record::{date, http_head, new_id, sha1_digest, Kind, Record};

/// `WARC-Profile` of a revisit whose server answered 304 Not Modified (WARC 1.1, 6.7.2).
const SERVER_NOT_MODIFIED: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
/// `WARC-Profile` of a revisit whose payload equals the earlier capture's (6.7.1).
const IDENTICAL_PAYLOAD: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";

/// The request and response records of one exchange.
pub(super) fn records(ex: &Exchange, warcinfo: &str) -> (Record, Record) {
    let request_id = new_id();
    let response_id = new_id();
    let (version, request_version) = versions(ex.head.version);
    let (response_block, payload_at) = response_block(ex, version);
    let mut request_fields = common_fields(ex, warcinfo);
    request_fields.push(("WARC-Concurrent-To", response_id.clone()));
    let mut response_fields = common_fields(ex, warcinfo);
    if let Some(t) = truncation(ex.end) {
        response_fields.push(("WARC-Truncated", t.to_owned()));
    }
    let mut response = Record {
        kind: Kind::Response,
        id: response_id,
        date: ex.started,
        content_type: "application/http;msgtype=response",
        fields: response_fields,
        block: response_block,
        payload_at: Some(payload_at),
    };
    if let Some(earlier) = &ex.earlier {
        revisit(ex, earlier, &mut response);
    }
    let request = Record {
        kind: Kind::Request,
        id: request_id,
        date: ex.started,
        content_type: "application/http;msgtype=request",
        fields: request_fields,
        block: request_block(ex, request_version),
        payload_at: None,
    };
    (request, response)
}

/// Make `response` a `revisit` of the `earlier` capture when it is one, as Heritrix writes
/// them: a 304 (`server-not-modified`), or a complete body hashing as the earlier one did
/// (`identical-payload-digest`: the head only, with the payload's digest and
/// `WARC-Truncated: length`, so a replay finds the body in the earlier record).
fn revisit(ex: &Exchange, earlier: &Earlier, response: &mut Record) {
    let payload_at = response.payload_at.unwrap_or(response.block.len());
    let profile = if ex.head.status == StatusCode::NOT_MODIFIED {
        SERVER_NOT_MODIFIED
    } else if ex.end == BodyEnd::Complete
        && ex.head.status.is_success()
        && earlier.content_hash == Some(xxhash_rust::xxh3::xxh3_128(&ex.body))
    {
        let digest = sha1_digest(&response.block[payload_at..]);
        response.fields.push(("WARC-Payload-Digest", digest));
        response
            .fields
            .push(("WARC-Truncated", "length".to_owned()));
        IDENTICAL_PAYLOAD
    } else {
        return;
    };
    response.kind = Kind::Revisit;
    response.block.truncate(payload_at);
    response.payload_at = None;
    response.fields.push(("WARC-Profile", profile.to_owned()));
    response.fields.push((
        "WARC-Refers-To-Target-URI",
        ex.url[..Position::AfterQuery].to_owned(),
    ));
    if let Some(at) = earlier.date {
        response.fields.push(("WARC-Refers-To-Date", date(at)));
    }
}

/// The HTTP version of the response line, and of the request line.
fn versions(version: Version) -> (&'static str, &'static str) {
    let response = match version {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2",
        Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    };
    // hyper speaks HTTP/1.1 whatever version an HTTP/1 server answers with.
    let request = match version {
        Version::HTTP_2 | Version::HTTP_3 => response,
        _ => "HTTP/1.1",
    };
    (response, request)
}

/// The request head as sent: the request line, `Host`, then the other headers.
fn request_block(ex: &Exchange, version: &str) -> Vec<u8> {
    let target = &ex.url[Position::BeforePath..Position::AfterQuery];
    let host = &ex.url[Position::BeforeHost..Position::AfterPort];
    let request_line = format!("{} {target} {version}", ex.method);
    http_head(
        &request_line,
        std::iter::once(("host", host.as_bytes())).chain(
            ex.request
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes())),
        ),
    )
}

/// The response head and body, and where the body (the payload) starts.
fn response_block(ex: &Exchange, version: &str) -> (Vec<u8>, usize) {
    let head = &ex.head;
    let reason = head.reason.clone().unwrap_or_else(|| {
        head.status
            .canonical_reason()
            .unwrap_or("")
            .as_bytes()
            .to_vec()
    });
    let status_line = format!(
        "{version} {} {}",
        head.status.as_str(),
        String::from_utf8_lossy(&reason)
    );
    // The body is stored decoded and unchunked, so the head must not announce either.
    let length = ex.body.len().to_string();
    let bodiless = head.status.is_informational()
        || head.status == StatusCode::NO_CONTENT
        || head.status == StatusCode::NOT_MODIFIED;
    let headers = head
        .headers
        .iter()
        .filter(|(name, _)| **name != TRANSFER_ENCODING && **name != CONTENT_LENGTH)
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .chain((!bodiless || !ex.body.is_empty()).then_some(("content-length", length.as_bytes())));
    let mut block = http_head(&status_line, headers);
    let payload_at = block.len();
    block.extend_from_slice(&ex.body);
    (block, payload_at)
}

/// The fields both records of an exchange carry.
fn common_fields(ex: &Exchange, warcinfo: &str) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        // What was requested: a fragment is never sent.
        ("WARC-Target-URI", ex.url[..Position::AfterQuery].to_owned()),
        ("WARC-Warcinfo-ID", warcinfo.to_owned()),
    ];
    if let Some(ip) = ex.head.ip {
        fields.push(("WARC-IP-Address", ip.to_string()));
    }
    fields
}

/// `WARC-Truncated`: why a body is not all there, if it is not.
fn truncation(end: BodyEnd) -> Option<&'static str> {
    match end {
        BodyEnd::Complete => None,
        BodyEnd::Cut => Some("length"),
        BodyEnd::Timeout => Some("time"),
        BodyEnd::Broken => Some("disconnect"),
        BodyEnd::Unread => Some("unspecified"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc::capture::Head;
    use reqwest::header::{HeaderMap, HeaderValue};
    use std::time::SystemTime;
    use url::Url;

    fn exchange(body: &[u8], end: BodyEnd) -> Exchange {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("text/html"));
        headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
        let mut request = HeaderMap::new();
        request.insert("user-agent", HeaderValue::from_static("trawl/test"));
        Exchange {
            method: reqwest::Method::GET,
            url: Url::parse("http://example.org:8080/a?b=1#frag").unwrap(),
            started: SystemTime::now(),
            request,
            head: Head {
                version: Version::HTTP_10,
                status: StatusCode::NOT_FOUND,
                reason: Some(b"Nope".to_vec()),
                headers,
                ip: Some("10.1.2.3".parse().unwrap()),
            },
            body: body.to_vec(),
            end,
            earlier: None,
        }
    }

    fn text(block: &[u8]) -> String {
        String::from_utf8(block.to_vec()).unwrap()
    }

    #[test]
    fn an_exchange_becomes_a_linked_request_and_response() {
        let (req, resp) = records(&exchange(b"<p>gone</p>", BodyEnd::Complete), "<info>");
        assert_eq!(
            text(&req.block),
            "GET /a?b=1 HTTP/1.1\r\nhost: example.org:8080\r\nuser-agent: trawl/test\r\n\r\n"
        );
        assert!(req
            .fields
            .contains(&("WARC-Concurrent-To", resp.id.clone())));
        for rec in [&req, &resp] {
            assert!(rec
                .fields
                .contains(&("WARC-Target-URI", "http://example.org:8080/a?b=1".into())));
            assert!(rec.fields.contains(&("WARC-IP-Address", "10.1.2.3".into())));
            assert!(rec.fields.contains(&("WARC-Warcinfo-ID", "<info>".into())));
        }
        // The body is stored unchunked, so the head announces its real length only.
        assert_eq!(
            text(&resp.block),
            "HTTP/1.0 404 Nope\r\ncontent-type: text/html\r\ncontent-length: 11\r\n\r\n<p>gone</p>"
        );
        assert_eq!(&resp.block[resp.payload_at.unwrap()..], b"<p>gone</p>");
        assert!(!resp.fields.iter().any(|(n, _)| *n == "WARC-Truncated"));
    }

    #[test]
    fn unchanged_answers_to_a_refresh_are_revisits() {
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let body = b"<p>same</p>";
        let earlier = Earlier {
            date: Some(at),
            content_hash: Some(xxhash_rust::xxh3::xxh3_128(body)),
        };
        let field = |r: &Record, name: &str| {
            r.fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        let mut same = exchange(body, BodyEnd::Complete);
        same.head.status = StatusCode::OK;
        same.earlier = Some(earlier);
        let (_, resp) = records(&same, "<info>");
        assert_eq!(resp.kind, Kind::Revisit);
        assert_eq!(
            field(&resp, "WARC-Profile").as_deref(),
            Some(IDENTICAL_PAYLOAD)
        );
        assert_eq!(field(&resp, "WARC-Payload-Digest"), Some(sha1_digest(body)));
        assert_eq!(field(&resp, "WARC-Refers-To-Date"), Some(date(at)));
        assert!(text(&resp.block).ends_with("\r\n\r\n"), "the head only");
        let mut not_modified = exchange(b"", BodyEnd::Complete);
        not_modified.head.status = StatusCode::NOT_MODIFIED;
        not_modified.earlier = Some(earlier);
        let (_, resp) = records(&not_modified, "<info>");
        assert_eq!(
            field(&resp, "WARC-Profile").as_deref(),
            Some(SERVER_NOT_MODIFIED)
        );
        assert_eq!(
            field(&resp, "WARC-Refers-To-Target-URI").as_deref(),
            Some("http://example.org:8080/a?b=1")
        );
        let mut changed = exchange(b"<p>new</p>", BodyEnd::Complete);
        changed.head.status = StatusCode::OK;
        changed.earlier = Some(earlier);
        assert_eq!(records(&changed, "<info>").1.kind, Kind::Response);
    }

    #[test]
    fn bodies_that_did_not_end_are_marked_truncated() {
        for (end, why) in [
            (BodyEnd::Cut, "length"),
            (BodyEnd::Timeout, "time"),
            (BodyEnd::Broken, "disconnect"),
            (BodyEnd::Unread, "unspecified"),
        ] {
            let (_, resp) = records(&exchange(b"<p>go", end), "<info>");
            assert!(
                resp.fields.contains(&("WARC-Truncated", why.into())),
                "{end:?}"
            );
            assert!(text(&resp.block).contains("content-length: 5\r\n"));
        }
    }
}
