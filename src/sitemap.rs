//! Sitemaps (sitemaps.org protocol 0.9): `<urlset>`, `<sitemapindex>` and plain-text lists,
//! gzipped or not, parsed while streaming so a hostile document costs at most the cap.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use quick_xml::events::Event;
use quick_xml::Reader;

/// The protocol's limit on the uncompressed size of one sitemap, a sensible `max_bytes`.
pub const MAX_BYTES: usize = 50 * 1024 * 1024;

/// The protocol's limit on the URLs (or child sitemaps) in one document.
pub const MAX_URLS: usize = 50_000;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What one sitemap document holds: its `<loc>` values, trimmed, entity-decoded and in
/// document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sitemap {
    /// A `<urlset>` (or a plain-text sitemap): page URLs.
    UrlSet(Vec<String>),
    /// A `<sitemapindex>`: URLs of further sitemaps.
    Index(Vec<String>),
}

impl Sitemap {
    /// The URLs, whichever kind of document held them.
    pub fn urls(&self) -> &[String] {
        match self {
            Sitemap::UrlSet(urls) | Sitemap::Index(urls) => urls,
        }
    }
}

/// Why a sitemap could not be read (in full).
#[derive(Debug, thiserror::Error)]
pub enum SitemapError {
    /// The body is neither well-formed XML nor a list of URLs.
    #[error("sitemap is not well-formed XML: {0}")]
    Xml(#[from] quick_xml::Error),
    /// The XML ends before its root element does.
    #[error("sitemap ends inside its root element")]
    Truncated,
    /// Well-formed, but the root is neither `urlset` nor `sitemapindex` (its name is
    /// given), or a body that is not XML holds no http(s) URL line (its first line is given).
    #[error("not a sitemap: {0:?}")]
    NotSitemap(String),
    /// The gzip stream is corrupt or truncated.
    #[error("sitemap gzip stream is corrupt: {0}")]
    Gzip(#[source] io::Error),
    /// More than `max_bytes` once inflated; nothing beyond the cap was inflated.
    #[error("sitemap is larger than {max_bytes} bytes uncompressed")]
    TooLarge {
        /// The cap that was passed to [`parse`].
        max_bytes: usize,
    },
    /// More than [`MAX_URLS`] entries. Parsing stopped there; the first [`MAX_URLS`] are
    /// kept here, so a caller may use them anyway.
    #[error("sitemap lists more than {MAX_URLS} URLs")]
    TooManyUrls(Sitemap),
}

/// Parse a sitemap document.
///
/// A body starting with the gzip magic bytes (1f 8b) is inflated while parsing, whatever
/// the Content-Type said. At most `max_bytes` of (inflated) document are read: a longer
/// one, such as a decompression bomb, gives `SitemapError::TooLarge` after inflating no
/// more than that. A body whose first non-blank byte is not `<` is read as a plain-text
/// sitemap: every line that is an http(s) URL, other lines skipped.
///
/// Past `MAX_URLS` entries, parsing stops with `SitemapError::TooManyUrls`, which
/// carries the first `MAX_URLS`.
pub fn parse(body: &[u8], max_bytes: usize) -> Result<Sitemap, SitemapError> {
    let gzip = body.starts_with(GZIP_MAGIC);
    let source: Box<dyn Read + '_> = if gzip {
        Box::new(MultiGzDecoder::new(body))
    } else {
        Box::new(body)
    };
    let mut input = BufReader::new(Capped {
        inner: source,
        left: max_bytes,
        exceeded: false,
    });
    match skip_leading_blanks(&mut input) {
        Ok(Some(b'<')) => parse_xml(input, max_bytes),
        Ok(Some(_)) => parse_text(&mut input, max_bytes),
        Ok(None) => Ok(Sitemap::UrlSet(Vec::new())),
        Err(e) => Err(io_error(input.get_ref().exceeded, max_bytes, e)),
    }
}

/// A reader that yields at most `left` bytes and then fails if there is even one more,
/// so a document of exactly the cap is fine and a longer one is an error, not a silent
/// truncation.
struct Capped<R> {
    inner: R,
    left: usize,
    exceeded: bool,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.exceeded = true;
                    Err(io::Error::other("sitemap exceeds its size cap"))
                }
            };
        }
        let room = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..room])?;
        self.left -= n;
        Ok(n)
    }
}

fn io_error(exceeded: bool, max_bytes: usize, error: io::Error) -> SitemapError {
    if exceeded {
        SitemapError::TooLarge { max_bytes }
    } else {
        // Reading a byte slice cannot fail, so any other I/O error is the gzip decoder's.
        SitemapError::Gzip(error)
    }
}

/// Consume a byte order mark and whitespace; return the first byte after them, if any.
fn skip_leading_blanks<B: BufRead>(input: &mut B) -> io::Result<Option<u8>> {
    let mut first_fill = true;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if first_fill && buf.starts_with(UTF8_BOM) {
            input.consume(UTF8_BOM.len());
            first_fill = false;
            continue;
        }
        first_fill = false;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => {
                let first = buf[at];
                input.consume(at);
                return Ok(Some(first));
            }
            None => {
                let all = buf.len();
                input.consume(all);
            }
        }
    }
}

fn parse_text<R: Read>(
    input: &mut BufReader<Capped<R>>,
    max_bytes: usize,
) -> Result<Sitemap, SitemapError> {
    let mut urls = Vec::new();
    let mut line = Vec::new();
    let mut first_other = None;
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(io_error(input.get_ref().exceeded, max_bytes, e)),
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if !is_http_url(text) {
            first_other.get_or_insert_with(|| text.chars().take(40).collect::<String>());
            continue;
        }
        if urls.len() == MAX_URLS {
            return Err(SitemapError::TooManyUrls(Sitemap::UrlSet(urls)));
        }
        urls.push(text.to_owned());
    }
    if urls.is_empty() {
        return Err(SitemapError::NotSitemap(first_other.unwrap_or_default()));
    }
    Ok(Sitemap::UrlSet(urls))
}

fn is_http_url(text: &str) -> bool {
    let has_prefix = |prefix: &str| {
        text.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    };
    (has_prefix("http://") || has_prefix("https://")) && !text.contains(char::is_whitespace)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    UrlSet,
    Index,
}

impl Kind {
    fn wrap(self, urls: Vec<String>) -> Sitemap {
        match self {
            Kind::UrlSet => Sitemap::UrlSet(urls),
            Kind::Index => Sitemap::Index(urls),
        }
    }

    fn entry(self) -> &'static str {
        match self {
            Kind::UrlSet => "url",
            Kind::Index => "sitemap",
        }
    }
}

fn root_kind(local_name: &str) -> Result<Kind, SitemapError> {
    match local_name {
        "urlset" => Ok(Kind::UrlSet),
        "sitemapindex" => Ok(Kind::Index),
        other => Err(SitemapError::NotSitemap(other.to_owned())),
    }
}

fn parse_xml<R: Read>(
    input: BufReader<Capped<R>>,
    max_bytes: usize,
) -> Result<Sitemap, SitemapError> {
    let mut reader = Reader::from_reader(input);
    let mut buf = Vec::new();
    let mut kind = None;
    let mut urls = Vec::new();
    // Depth 1 is the root, 2 an entry (`url`/`sitemap`), 3 its `loc`. Matching on local
    // names ignores namespace prefixes; matching on depth keeps `<image:loc>` (depth 4)
    // and other extensions out.
    let mut depth = 0usize;
    let mut in_entry = false;
    let mut loc: Option<String> = None;
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(quick_xml::Error::Io(error)) => {
                let exceeded = reader.get_ref().get_ref().exceeded;
                let error = Arc::try_unwrap(error)
                    .unwrap_or_else(|shared| io::Error::new(shared.kind(), shared.to_string()));
                return Err(io_error(exceeded, max_bytes, error));
            }
            Err(error) => return Err(error.into()),
        };
        match event {
            Event::Start(element) => {
                depth += 1;
                let name = element.local_name();
                match (depth, kind) {
                    (1, _) => kind = Some(root_kind(name.as_ref())?),
                    (2, Some(kind)) => in_entry = name.as_ref() == kind.entry(),
                    (3, _) if in_entry && name.as_ref() == "loc" => loc = Some(String::new()),
                    _ => {}
                }
            }
            Event::Empty(element) if depth == 0 => {
                let kind = root_kind(element.local_name().as_ref())?;
                return Ok(kind.wrap(urls));
            }
            Event::End(_) => {
                if depth == 3 {
                    if let Some(text) = loc.take() {
                        let text = text.trim();
                        if !text.is_empty() {
                            let kind = kind.unwrap_or(Kind::UrlSet);
                            if urls.len() == MAX_URLS {
                                return Err(SitemapError::TooManyUrls(kind.wrap(urls)));
                            }
                            urls.push(text.to_owned());
                        }
                    }
                }
                if depth == 2 {
                    in_entry = false;
                }
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    // Whatever follows the root is not part of the sitemap.
                    return Ok(kind.unwrap_or(Kind::UrlSet).wrap(urls));
                }
            }
            Event::Text(text) => {
                if let Some(loc) = loc.as_mut() {
                    loc.push_str(&text.xml10_content());
                }
            }
            Event::CData(text) => {
                if let Some(loc) = loc.as_mut() {
                    loc.push_str(&text.into_inner());
                }
            }
            Event::GeneralRef(reference) => {
                if let Some(loc) = loc.as_mut() {
                    if let Some(ch) = reference.resolve_char_ref()? {
                        loc.push(ch);
                    } else if let Some(text) =
                        quick_xml::escape::resolve_predefined_entity(&reference)
                    {
                        loc.push_str(text);
                    } else {
                        // An undeclared entity in a URL is almost always a bare `&` the
                        // site forgot to escape; keeping it as written keeps the URL.
                        loc.push('&');
                        loc.push_str(&reference);
                        loc.push(';');
                    }
                }
            }
            Event::Eof => {
                return Err(match kind {
                    None => SitemapError::NotSitemap(String::new()),
                    Some(_) => SitemapError::Truncated,
                });
            }
            _ => {}
        }
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;
    use std::time::{Duration, Instant};

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn urlset(urls: &[String]) -> Sitemap {
        Sitemap::UrlSet(urls.to_vec())
    }

    const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url>
    <loc>https://example.org/</loc>
    <lastmod>2024-01-01</lastmod>
  </url>
  <url><loc>
      https://example.org/a
  </loc><changefreq>daily</changefreq></url>
  <url><loc></loc></url>
</urlset>
"#;

    #[test]
    fn url_set() {
        let sitemap = parse(URLSET.as_bytes(), MAX_BYTES).unwrap();
        assert_eq!(
            sitemap,
            Sitemap::UrlSet(vec![
                "https://example.org/".into(),
                "https://example.org/a".into()
            ])
        );
        assert_eq!(sitemap.urls().len(), 2);
    }

    #[test]
    fn index() {
        let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://example.org/s1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>
  <sitemap><loc>https://example.org/s2.xml</loc></sitemap>
</sitemapindex>"#;
        assert_eq!(
            parse(body.as_bytes(), MAX_BYTES).unwrap(),
            Sitemap::Index(vec![
                "https://example.org/s1.xml.gz".into(),
                "https://example.org/s2.xml".into()
            ])
        );
    }

    #[test]
    fn gzipped() {
        let body = gzip(URLSET.as_bytes());
        assert_eq!(
            parse(&body, MAX_BYTES).unwrap(),
            parse(URLSET.as_bytes(), MAX_BYTES).unwrap()
        );
    }

    #[test]
    fn corrupt_gzip_is_an_error() {
        let mut body = gzip(URLSET.as_bytes());
        body.truncate(body.len() / 2);
        assert!(matches!(
            parse(&body, MAX_BYTES),
            Err(SitemapError::Gzip(_) | SitemapError::Truncated)
        ));
        let mut body = gzip(URLSET.as_bytes());
        let middle = body.len() / 2;
        body[middle] ^= 0xFF;
        assert!(parse(&body, MAX_BYTES).is_err());
        assert!(matches!(
            parse(&[0x1f, 0x8b], MAX_BYTES),
            Err(SitemapError::Gzip(_))
        ));
    }

    #[test]
    fn plain_text() {
        let body = "\u{FEFF}https://example.org/\r\n\r\n  https://example.org/b  \n# not a URL\nHTTPS://example.org/C";
        assert_eq!(
            parse(body.as_bytes(), MAX_BYTES).unwrap(),
            urlset(&[
                "https://example.org/".into(),
                "https://example.org/b".into(),
                "HTTPS://example.org/C".into()
            ])
        );
        assert_eq!(
            parse(&gzip(body.as_bytes()), MAX_BYTES)
                .unwrap()
                .urls()
                .len(),
            3
        );
    }

    #[test]
    fn text_without_urls_is_not_a_sitemap() {
        assert!(matches!(
            parse(b"hello\nworld\n", MAX_BYTES),
            Err(SitemapError::NotSitemap(_))
        ));
        assert!(matches!(
            parse(b"\x00\x01\xFF\xFE", MAX_BYTES),
            Err(SitemapError::NotSitemap(_))
        ));
    }

    #[test]
    fn empty_body_is_an_empty_url_set() {
        assert_eq!(parse(b"", MAX_BYTES).unwrap(), urlset(&[]));
        assert_eq!(parse(b" \n\t", MAX_BYTES).unwrap(), urlset(&[]));
        assert_eq!(parse(b"<urlset/>", MAX_BYTES).unwrap(), urlset(&[]));
    }

    #[test]
    fn namespace_prefixes_are_ignored_and_extensions_skipped() {
        let body = r#"<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <sm:url>
    <sm:loc>https://example.org/p</sm:loc>
    <image:image><image:loc>https://example.org/i.png</image:loc></image:image>
  </sm:url>
  <other><loc>https://example.org/not-an-entry</loc></other>
</sm:urlset>"#;
        assert_eq!(
            parse(body.as_bytes(), MAX_BYTES).unwrap(),
            urlset(&["https://example.org/p".into()])
        );
    }

    #[test]
    fn cdata_and_entities() {
        let body = "<urlset>\
            <url><loc><![CDATA[https://example.org/?a=1&b=2]]></loc></url>\
            <url><loc>https://example.org/?a=1&amp;b=&#50;&#x33;&lt;&apos;&quot;&gt;</loc></url>\
            <url><loc>https://example.org/?q=&nbsp;</loc></url>\
            </urlset>";
        assert_eq!(
            parse(body.as_bytes(), MAX_BYTES).unwrap(),
            urlset(&[
                "https://example.org/?a=1&b=2".into(),
                "https://example.org/?a=1&b=23<'\">".into(),
                "https://example.org/?q=&nbsp;".into()
            ])
        );
    }

    #[test]
    fn malformed_xml_is_an_error() {
        let bodies: [&[u8]; 9] = [
            b"<urlset><url><loc>https://e.org/</url></urlset>",
            b"<urlset><url><loc>https://e.org/</loc></url>",
            b"<urlset><url><loc>https://e.org/</lo",
            b"<urlset><url><loc>&#xFFFFFFFF;</loc></url></urlset>",
            b"<urlset><url><loc>&#0;</loc></url></urlset>",
            b"<",
            b"<!-- nothing -->",
            b"<html><body>404</body></html>",
            b"<urlset>\xFF\xFE</urlset",
        ];
        for body in bodies {
            assert!(
                parse(body, MAX_BYTES).is_err(),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
        assert!(matches!(
            parse(b"<html/>", MAX_BYTES),
            Err(SitemapError::NotSitemap(root)) if root == "html"
        ));
    }

    #[test]
    fn gzip_bomb_stops_at_the_cap() {
        let bomb = gzip(&vec![0u8; 50 * 1024 * 1024]);
        let started = Instant::now();
        let result = parse(&bomb, 1024 * 1024);
        assert!(
            matches!(result, Err(SitemapError::TooLarge { max_bytes }) if max_bytes == 1024 * 1024),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        // The same bomb dressed as XML: one long text node.
        let mut xml = b"<urlset><url><loc>".to_vec();
        xml.resize(20 * 1024 * 1024, b'a');
        let result = parse(&gzip(&xml), 1024 * 1024);
        assert!(
            matches!(result, Err(SitemapError::TooLarge { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn cap_is_exact() {
        // Trimmed: bytes after the root element are never read, so they never count.
        let body = URLSET.trim_end().as_bytes();
        assert!(parse(body, body.len()).is_ok());
        assert!(matches!(
            parse(body, body.len() - 1),
            Err(SitemapError::TooLarge { .. })
        ));
    }

    #[test]
    fn more_than_max_urls_keeps_the_first() {
        let mut xml = String::from("<urlset>");
        for i in 0..=MAX_URLS {
            xml.push_str(&format!("<url><loc>https://e.org/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        let Err(SitemapError::TooManyUrls(first)) = parse(xml.as_bytes(), MAX_BYTES) else {
            panic!("expected TooManyUrls");
        };
        assert!(matches!(first, Sitemap::UrlSet(_)));
        assert_eq!(first.urls().len(), MAX_URLS);
        assert_eq!(
            first.urls()[MAX_URLS - 1],
            format!("https://e.org/{}", MAX_URLS - 1)
        );

        let text: String = (0..=MAX_URLS)
            .map(|i| format!("https://e.org/{i}\n"))
            .collect();
        let Err(SitemapError::TooManyUrls(first)) = parse(text.as_bytes(), MAX_BYTES) else {
            panic!("expected TooManyUrls");
        };
        assert_eq!(first.urls().len(), MAX_URLS);
    }
}

/// A sitemap document fetched and parsed.
#[derive(Debug)]
pub struct Fetched {
    /// The HTTP status (2xx).
    pub status: u16,
    /// `Content-Type` as sent.
    pub content_type: Option<String>,
    /// Body bytes read.
    pub size: u64,
    /// When the request started, Unix ms.
    pub fetched_at: i64,
    /// Request start to body end.
    pub fetch_ms: u64,
    /// What it lists.
    pub sitemap: Sitemap,
}

/// Fetch and parse the sitemap document at `url`: `None` (logged) when it does not answer
/// 2xx or is not a usable sitemap. Past [`MAX_URLS`] entries the first ones are kept.
pub async fn fetch(fetcher: &crate::fetch::Fetcher, url: &url::Url) -> Option<Fetched> {
    let started = std::time::Instant::now();
    let fetched_at = crate::result::now_ms();
    let mut resp = fetcher.get(url).await.ok()?;
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return None;
    }
    let content_type = resp.content_type().map(str::to_owned);
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        body.extend_from_slice(&chunk);
    }
    // Hands its WARC capture over before the caller records the document.
    drop(resp);
    let sitemap = match parse(&body, MAX_BYTES) {
        Ok(s) => s,
        Err(SitemapError::TooManyUrls(first)) => {
            tracing::warn!(%url, "sitemap lists more than {MAX_URLS} URLs; the rest are ignored");
            first
        }
        Err(e) => {
            tracing::info!(%url, error = %e, "not a usable sitemap");
            return None;
        }
    };
    Some(Fetched {
        status,
        content_type,
        size: body.len() as u64,
        fetched_at,
        fetch_ms: started.elapsed().as_millis() as u64,
        sitemap,
    })
}
