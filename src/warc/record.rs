//! One WARC 1.1 record as bytes: the header block, the content block, and the gzip member
//! that holds them.
//!
//! Every record is compressed as a gzip member of its own, as Heritrix and wget write
//! them: a reader can start at any record's offset (what CDX indexes point at), and a
//! file cut short by a crash loses only its last, incomplete member.

use std::io::Write;
use std::time::SystemTime;

use flate2::write::GzEncoder;
use flate2::Compression;
use sha1::{Digest, Sha1};

/// Compression level of each member. Level 6 (zlib's default, and Heritrix's) costs about
/// three times the CPU of level 1 for files a few percent smaller; the writer thread is
/// off the workers' path, but on a 2-core machine its CPU is the crawl's CPU.
const LEVEL: u32 = 1;

/// A record's `WARC-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Describes the file and the crawl that wrote it.
    Warcinfo,
    /// An HTTP request as sent.
    Request,
    /// An HTTP response as received.
    Response,
    /// A response to a refresh that is unchanged since an earlier capture: its head only.
    Revisit,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Warcinfo => "warcinfo",
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Revisit => "revisit",
        }
    }
}

/// A record before it is encoded: its named fields (beyond those every record has) and
/// its content block.
#[derive(Debug, Clone)]
pub struct Record {
    /// `WARC-Type`.
    pub kind: Kind,
    /// `WARC-Record-ID`, `<urn:uuid:...>`.
    pub id: String,
    /// `WARC-Date`.
    pub date: SystemTime,
    /// `Content-Type` of the block.
    pub content_type: &'static str,
    /// Other fields, in order, e.g. `("WARC-Target-URI", url)`.
    pub fields: Vec<(&'static str, String)>,
    /// The content block (for HTTP records: the message head and payload).
    pub block: Vec<u8>,
    /// Where the payload starts in `block`, for `WARC-Payload-Digest`; `None` for records
    /// without a payload (warcinfo, requests without a body).
    pub payload_at: Option<usize>,
}

/// A new `WARC-Record-ID`: a random (version 4) UUID as a URN in angle brackets.
pub fn new_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}

/// `WARC-Date`: UTC with microseconds, which WARC 1.1 allows (1.0 had seconds only).
pub fn date(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// `sha1:` and the base32 SHA-1 of `bytes`: the digest form Heritrix, wget and the
/// CDX indexers use.
pub fn sha1_digest(bytes: &[u8]) -> String {
    let hash = Sha1::digest(bytes);
    format!("sha1:{}", data_encoding::BASE32.encode(&hash))
}

impl Record {
    /// The record as WARC bytes: the version line, the header fields, a blank line, the
    /// block and the two CRLFs that end every record.
    pub fn encode(&self) -> Vec<u8> {
        let mut head = String::with_capacity(512);
        head.push_str("WARC/1.1\r\n");
        let mut field = |name: &str, value: &str| {
            head.push_str(name);
            head.push_str(": ");
            // A field value never holds a line break: it would end the header early.
            head.extend(
                value
                    .chars()
                    .map(|c| if c == '\r' || c == '\n' { ' ' } else { c }),
            );
            head.push_str("\r\n");
        };
        field("WARC-Type", self.kind.as_str());
        field("WARC-Record-ID", &self.id);
        field("WARC-Date", &date(self.date));
        for (name, value) in &self.fields {
            field(name, value);
        }
        field("WARC-Block-Digest", &sha1_digest(&self.block));
        if let Some(at) = self.payload_at {
            field(
                "WARC-Payload-Digest",
                &sha1_digest(&self.block[at.min(self.block.len())..]),
            );
        }
        field("Content-Type", self.content_type);
        field("Content-Length", &self.block.len().to_string());
        head.push_str("\r\n");
        let mut out = Vec::with_capacity(head.len() + self.block.len() + 4);
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&self.block);
        out.extend_from_slice(b"\r\n\r\n");
        out
    }

    /// The record as one complete gzip member.
    pub fn gzip_member(&self) -> Vec<u8> {
        let raw = self.encode();
        let mut gz = GzEncoder::new(
            Vec::with_capacity(raw.len() / 3 + 64),
            Compression::new(LEVEL),
        );
        gz.write_all(&raw).expect("writing to a Vec cannot fail");
        gz.finish().expect("writing to a Vec cannot fail")
    }
}

/// An HTTP/1.1-style message head: the start line, then each header, then a blank line.
/// Header values are bytes (a server may send any), written as received.
pub fn http_head<'a>(
    start_line: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(start_line.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn response(body: &[u8]) -> Record {
        let mut block = http_head(
            "HTTP/1.1 200 OK",
            [
                ("content-type", &b"text/html"[..]),
                ("content-length", body.len().to_string().as_bytes()),
            ],
        );
        let at = block.len();
        block.extend_from_slice(body);
        Record {
            kind: Kind::Response,
            id: new_id(),
            date: SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_700_000_000_123_456),
            content_type: "application/http;msgtype=response",
            fields: vec![("WARC-Target-URI", "http://example.org/a b\r\nX: y".into())],
            block,
            payload_at: Some(at),
        }
    }

    #[test]
    fn digests_are_base32_sha1() {
        // The SHA-1 of "" and "abc", in the base32 form CDX files use.
        assert_eq!(sha1_digest(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
        assert_eq!(sha1_digest(b"abc"), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
    }

    #[test]
    fn ids_and_dates_have_the_warc_forms() {
        let id = new_id();
        assert!(id.starts_with("<urn:uuid:") && id.ends_with('>'), "{id}");
        assert_eq!(id.len(), "<urn:uuid:>".len() + 36);
        assert_ne!(new_id(), id);
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_700_000_000_123_456);
        assert_eq!(date(t), "2023-11-14T22:13:20.123456Z");
    }

    #[test]
    fn a_record_is_framed_and_digested() {
        let rec = response(b"<p>hi</p>");
        let bytes = rec.encode();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let (head, rest) = text.split_once("\r\n\r\n").unwrap();
        let lines: Vec<&str> = head.split("\r\n").collect();
        assert_eq!(lines[0], "WARC/1.1");
        assert!(lines.contains(&"WARC-Type: response"));
        assert!(lines.contains(&"WARC-Date: 2023-11-14T22:13:20.123456Z"));
        // A line break in a value cannot start a header of its own.
        assert!(lines.contains(&"WARC-Target-URI: http://example.org/a b  X: y"));
        let len: usize = lines
            .iter()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(len, rec.block.len());
        assert_eq!(&rest.as_bytes()[..len], &rec.block[..]);
        assert_eq!(&rest.as_bytes()[len..], b"\r\n\r\n");
        let field = |name: &str| {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(name))
                .unwrap()
                .to_string()
        };
        assert_eq!(field("WARC-Block-Digest: "), sha1_digest(&rec.block));
        assert_eq!(field("WARC-Payload-Digest: "), sha1_digest(b"<p>hi</p>"));
    }

    #[test]
    fn each_record_is_a_gzip_member_of_its_own() {
        let a = response(b"first");
        let b = response(b"second");
        let (ga, gb) = (a.gzip_member(), b.gzip_member());
        // Each member decompresses alone ...
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gb[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b.encode());
        // ... and concatenated members are the concatenated records.
        let mut both = ga.clone();
        both.extend_from_slice(&gb);
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&both[..])
            .read_to_end(&mut out)
            .unwrap();
        let mut want = a.encode();
        want.extend_from_slice(&b.encode());
        assert_eq!(out, want);
    }
}
