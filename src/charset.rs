//! A document's character encoding, in the WHATWG order: a byte order mark, then the
//! `Content-Type` charset, then a `<meta charset>` in the first 1024 bytes, then a guess
//! from the bytes themselves (chardetng, the detector Firefox uses), else windows-1252.
//!
//! lol_html parses ASCII-compatible encodings only, so a UTF-16 document is transcoded to
//! UTF-8 on the way in ([`Transcoder`]).

use encoding_rs::{Decoder, Encoding, UTF_16BE, UTF_16LE, UTF_8};

/// Bytes looked at for a `<meta charset>` (HTML's prescan limit).
pub const PRESCAN: usize = 1024;
/// Bytes gathered before deciding, when the header and a BOM do not decide at once: enough
/// for the detector to see real text, little enough to start parsing promptly.
pub const SNIFF: usize = 4096;

/// Where the encoding came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A byte order mark.
    Bom,
    /// The `Content-Type` header.
    Header,
    /// A `<meta charset>` or `http-equiv` in the first 1024 bytes.
    Meta,
    /// Guessed from the bytes.
    Detected,
}

/// The decision for one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    /// The encoding.
    pub encoding: &'static Encoding,
    /// Where it came from.
    pub source: Source,
    /// Length of the byte order mark to skip.
    pub bom_len: usize,
}

/// The encoding a header label names, if any.
pub fn from_label(label: &str) -> Option<&'static Encoding> {
    Encoding::for_label(label.trim().as_bytes())
}

/// Whether `Content-Type` alone decides (a known label and no BOM can override it except
/// one present in the first bytes, checked by [`decide`]).
pub fn decide(prefix: &[u8], header: Option<&str>, complete: bool) -> Option<Decided> {
    if let Some((encoding, bom_len)) = Encoding::for_bom(prefix) {
        return Some(Decided {
            encoding,
            source: Source::Bom,
            bom_len,
        });
    }
    // A BOM needs up to 3 bytes; until they are here nothing can be decided.
    if prefix.len() < 3 && !complete {
        return None;
    }
    if let Some(encoding) = header.and_then(from_label) {
        return Some(Decided {
            encoding,
            source: Source::Header,
            bom_len: 0,
        });
    }
    if let Some(encoding) = meta_charset(&prefix[..prefix.len().min(PRESCAN)]) {
        return Some(Decided {
            encoding,
            source: Source::Meta,
            bom_len: 0,
        });
    }
    if prefix.len() < SNIFF && !complete {
        return None;
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(prefix, complete);
    Some(Decided {
        encoding: detector.guess(None, chardetng::Utf8Detection::Allow),
        source: Source::Detected,
        bom_len: 0,
    })
}

/// A `charset` named by a `<meta>` in `prefix`: `<meta charset=x>` or
/// `<meta http-equiv=Content-Type content="text/html; charset=x">`. A simplified form of
/// HTML's prescan: it looks for `charset=` inside `<meta` tags only. UTF-16 named here
/// means UTF-8 (the bytes were readable as ASCII, so they are not UTF-16).
pub fn meta_charset(prefix: &[u8]) -> Option<&'static Encoding> {
    let mut i = 0;
    while let Some(at) = find_ci(&prefix[i..], b"<meta") {
        let start = i + at + 5;
        let end = prefix[start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(prefix.len(), |p| start + p);
        let tag = &prefix[start..end];
        if let Some(c) = find_ci(tag, b"charset") {
            let mut v = &tag[c + 7..];
            while let [b' ' | b'\t' | b'\n' | b'\r', rest @ ..] = v {
                v = rest;
            }
            if let [b'=', rest @ ..] = v {
                v = rest;
                while let [b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'', rest @ ..] = v {
                    v = rest;
                }
                let len = v
                    .iter()
                    .position(|&b| matches!(b, b'"' | b'\'' | b';' | b' ' | b'/' | b'>'))
                    .unwrap_or(v.len());
                if let Some(e) = Encoding::for_label(&v[..len]) {
                    return Some(if e == UTF_16LE || e == UTF_16BE {
                        UTF_8
                    } else {
                        e
                    });
                }
            }
        }
        i = end.min(prefix.len());
        if i >= prefix.len() {
            break;
        }
    }
    None
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// Whether lol_html can parse the encoding as it is.
pub fn is_ascii_compatible(e: &'static Encoding) -> bool {
    e.is_ascii_compatible()
}

/// The label to hand the extractor, and whether the bytes need transcoding to UTF-8
/// first.
pub fn for_extractor(e: &'static Encoding) -> (&'static str, bool) {
    if is_ascii_compatible(e) {
        (e.name(), false)
    } else {
        (UTF_8.name(), true)
    }
}

/// Turns a UTF-16 (or other non-ASCII-compatible) stream into UTF-8 chunk by chunk; a
/// character split across chunks is carried over.
pub struct Transcoder {
    decoder: Decoder,
    out: String,
}

impl Transcoder {
    /// Decode from `e` (its BOM, if any, already skipped).
    pub fn new(e: &'static Encoding) -> Transcoder {
        Transcoder {
            decoder: e.new_decoder_without_bom_handling(),
            out: String::new(),
        }
    }

    /// UTF-8 for the next bytes (`last` at the end of the body).
    pub fn push(&mut self, bytes: &[u8], last: bool) -> &[u8] {
        self.out.clear();
        let need = self
            .decoder
            .max_utf8_buffer_length(bytes.len())
            .unwrap_or(bytes.len() * 3 + 16);
        self.out.reserve(need);
        let _ = self.decoder.decode_to_string(bytes, &mut self.out, last);
        self.out.as_bytes()
    }
}

/// The `charset` parameter of a Content-Type.
pub fn charset_of(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{SHIFT_JIS, WINDOWS_1252};

    #[test]
    fn whatwg_order() {
        let bom = b"\xEF\xBB\xBF<meta charset=shift_jis>";
        let d = decide(bom, Some("windows-1252"), true).unwrap();
        assert_eq!((d.encoding, d.source, d.bom_len), (UTF_8, Source::Bom, 3));
        let d = decide(b"<meta charset=shift_jis>", Some("iso-8859-2"), true).unwrap();
        assert_eq!(
            (d.encoding.name(), d.source),
            ("ISO-8859-2", Source::Header)
        );
        let d = decide(b"<html><meta charset=\"Shift_JIS\">", None, true).unwrap();
        assert_eq!((d.encoding, d.source), (SHIFT_JIS, Source::Meta));
        let d = decide(
            b"<meta http-equiv=Content-Type content='text/html; charset=windows-1251'>",
            None,
            true,
        )
        .unwrap();
        assert_eq!(d.encoding.name(), "windows-1251");
        // Unknown header label: fall through to the page.
        let d = decide(b"<meta charset=utf-8>", Some("bogus"), true).unwrap();
        assert_eq!(d.source, Source::Meta);
    }

    #[test]
    fn detection_waits_for_enough_bytes() {
        let text = "Füße und Grüße aus Köln, schöne Grüße. ".repeat(20);
        let (latin1, _, _) = WINDOWS_1252.encode(&text);
        assert_eq!(
            decide(&latin1[..100], None, false),
            None,
            "wants more bytes"
        );
        let d = decide(&latin1, None, true).unwrap();
        assert_eq!((d.encoding, d.source), (WINDOWS_1252, Source::Detected));
        let jp = "日本語のテキストです。東京都。".repeat(30);
        let (sjis, _, _) = SHIFT_JIS.encode(&jp);
        let d = decide(&sjis, None, true).unwrap();
        assert_eq!(d.encoding, SHIFT_JIS);
    }

    #[test]
    fn utf16_is_transcoded_across_chunks() {
        // encode() refuses UTF-16 as an output encoding; build the bytes by hand.
        let le: Vec<u8> = "<a href=/ü>"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let mut t = Transcoder::new(UTF_16LE);
        let mut out = Vec::new();
        for chunk in le.chunks(3) {
            out.extend_from_slice(t.push(chunk, false));
        }
        out.extend_from_slice(t.push(&[], true));
        assert_eq!(String::from_utf8(out).unwrap(), "<a href=/ü>");
        assert_eq!(for_extractor(UTF_16LE), ("UTF-8", true));
        assert_eq!(for_extractor(SHIFT_JIS), ("Shift_JIS", false));
    }

    #[test]
    fn charset_parameter() {
        assert_eq!(
            charset_of("text/html; Charset=\"Shift_JIS\""),
            Some("Shift_JIS")
        );
        assert_eq!(charset_of("text/html"), None);
    }
}
