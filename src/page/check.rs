//! A link check's requests: as few as give an exact answer.
//!
//! With fragments checked, a GET is the one request that answers both "is it there" and
//! "which ids does it have": a HEAD before it would be a second request for the same
//! answer, and a later link to the same URL may carry a fragment the queued check cannot
//! know about. So HTML-looking URLs get one GET (its body read as any page's: HTML
//! streamed for ids, other bodies read only up to the small cap). URLs whose path names a
//! file that is not HTML (a PDF, an archive, an image) get HEAD first, so a large file is
//! never downloaded to learn it exists; and without fragments every check starts with
//! HEAD, as link checkers do, falling back to GET where HEAD is refused or unreliable.

use url::Url;

use super::{is_html, Reader};
use crate::fetch::{FetchError, Response};
use crate::retry;

/// Extensions of files that are never HTML: a HEAD answers everything a check needs.
const NOT_HTML: &[&str] = &[
    "7z", "avi", "bin", "bmp", "bz2", "css", "csv", "deb", "dmg", "doc", "docx", "eot", "epub",
    "exe", "flac", "gif", "gz", "ico", "iso", "jar", "jpeg", "jpg", "js", "json", "m4a", "m4v",
    "mkv", "mov", "mp3", "mp4", "mpeg", "odp", "ods", "odt", "ogg", "otf", "pdf", "png", "ppt",
    "pptx", "rar", "rpm", "svg", "tar", "tgz", "tif", "tiff", "ttf", "txt", "wasm", "wav", "webm",
    "webp", "whl", "woff", "woff2", "xls", "xlsx", "xml", "xz", "zip", "zst",
];

impl Reader {
    /// The response to a check, and whether it is HEAD's.
    pub(super) async fn check(&self, url: &Url) -> Result<(Response, bool), FetchError> {
        if self.ids && !names_not_html(url) {
            return Ok((self.fetcher.get(url).await?, false));
        }
        let head = self.fetcher.head(url).await?;
        let status = head.status().as_u16();
        // Servers answer HEAD with 405, 501, or a 403/404 their GET contradicts: any 4xx
        // or 5xx but the transient ones (retried as they are) is asked again by GET.
        let unreliable = status >= 400 && !retry::is_transient_status(status);
        // A file-named URL may still be HTML (`/report.txt` served as a page).
        let ids_wanted = self.ids && status < 300 && head.content_type().is_some_and(is_html);
        if !unreliable && !ids_wanted {
            return Ok((head, true));
        }
        drop(head);
        Ok((self.fetcher.get(url).await?, false))
    }
}

/// Whether the URL's last path segment names a file type that is never HTML.
fn names_not_html(url: &Url) -> bool {
    let last = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("");
    match last.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            NOT_HTML.iter().any(|known| known.eq_ignore_ascii_case(ext))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::names_not_html;
    use url::Url;

    fn named(u: &str) -> bool {
        names_not_html(&Url::parse(u).unwrap())
    }

    #[test]
    fn file_names_that_are_not_html() {
        assert!(named("https://a.test/manual.pdf"));
        assert!(named("https://a.test/dist/trawl-1.0.TAR.GZ"));
        assert!(named("https://a.test/img/logo.png?v=3#top"));
    }

    #[test]
    fn pages_and_unknown_names_are_asked_by_get() {
        assert!(!named("https://a.test/"));
        assert!(!named("https://a.test/docs/index.html"));
        assert!(!named("https://a.test/docs/intro"));
        assert!(!named("https://a.test/v1.2/"));
        assert!(!named("https://a.test/.pdf"));
        assert!(!named("https://a.test/page.php?file=x.pdf"));
    }
}
