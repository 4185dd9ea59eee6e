//! An exchange as WARC records: a `request` and a `response` record that point at each
//! other, with heads rewritten to match the body as trawl read it (decoded, unchunked).

use reqwest::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use reqwest::{StatusCode, Version};
use url::Position;

use super::capture::{BodyEnd, Exchange};
use super::record::{http_head, new_id, Kind, Record};

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
    (
        Record {
            kind: Kind::Request,
            id: request_id,
            date: ex.started,
            content_type: "application/http;msgtype=request",
            fields: request_fields,
            block: request_block(ex, request_version),
            payload_at: None,
        },
        Record {
            kind: Kind::Response,
            id: response_id,
            date: ex.started,
            content_type: "application/http;msgtype=response",
            fields: response_fields,
            block: response_block,
            payload_at: Some(payload_at),
        },
    )
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
