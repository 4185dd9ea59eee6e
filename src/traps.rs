//! Crawler traps: URL shapes that can generate pages without end (calendars, relative
//! links that nest a path deeper at every click, session IDs minted per visit).
//!
//! Each rule rejects a URL before it is admitted, and the rejection is stored as the
//! URL's skip reason, so a report can show what was cut and why. Session IDs are not
//! rejected but removed from the canonical key, so one page is not fetched once per
//! session.

use url::Url;

/// A URL shape that never ends (admission records it as the URL's skip reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trap {
    /// Longer than `--max-url-length`.
    UrlTooLong,
    /// More path segments than `--max-path-segments`.
    TooManySegments,
    /// A path segment repeated more than `--max-repeated-segments` times.
    RepeatedSegment,
}

/// Trap limits from the configuration; 0 disables a limit.
#[derive(Debug, Clone, Copy)]
pub struct Traps {
    /// Longest URL, in bytes.
    pub max_url_length: usize,
    /// Most path segments.
    pub max_path_segments: usize,
    /// Most times one path segment may occur in a path.
    pub max_repeated_segments: usize,
    /// Most URLs fetched per host that share a path and differ in their query (the
    /// stores count them, see [`query_group`]).
    pub max_query_variants: u64,
}

impl Traps {
    /// Whether `url` looks like a trap.
    pub fn check(&self, url: &Url) -> Result<(), Trap> {
        if self.max_url_length > 0 && url.as_str().len() > self.max_url_length {
            return Err(Trap::UrlTooLong);
        }
        if self.max_path_segments == 0 && self.max_repeated_segments == 0 {
            return Ok(());
        }
        let path = url.path();
        let segments = || path.split('/').filter(|s| !s.is_empty());
        if self.max_path_segments > 0 && segments().count() > self.max_path_segments {
            return Err(Trap::TooManySegments);
        }
        if self.max_repeated_segments > 0 {
            // Quadratic in the segment count, which the previous rule keeps small; no
            // allocation on this per-new-URL path.
            let all: Vec<&str> = segments().collect();
            for (i, s) in all.iter().enumerate() {
                let n = 1 + all[i + 1..].iter().filter(|t| *t == s).count();
                if n > self.max_repeated_segments {
                    return Err(Trap::RepeatedSegment);
                }
            }
        }
        Ok(())
    }
}

/// What a URL's query variants are counted by for `--max-query-variants`: its canonical
/// key up to the query, when it has one. An endless `?date=` calendar, or a query that
/// grows by one parameter per click, stays on one path; a site's own pages with queries
/// (pagination, facets) are a bounded number per path.
///
/// ```
/// use trawl::internals::query_group;
/// assert_eq!(query_group("https://a.example/cal?d=2026-12-03"), Some("https://a.example/cal"));
/// assert_eq!(query_group("https://a.example/cal"), None);
/// ```
pub fn query_group(key: &str) -> Option<&str> {
    let (head, query) = key.split_once('?')?;
    (!query.is_empty()).then_some(head)
}

/// Query parameters that carry a session, compared case-insensitively (`ASPSESSIONID`
/// is a prefix: IIS appends random letters).
const SESSION_PARAMS: &[&str] = &[
    "jsessionid",
    "phpsessid",
    "sid",
    "sessionid",
    "session_id",
    "sessid",
    "cfid",
    "cftoken",
];

fn is_session_param(name: &str) -> bool {
    SESSION_PARAMS.iter().any(|p| name.eq_ignore_ascii_case(p))
        || name
            .get(..12)
            .is_some_and(|p| p.eq_ignore_ascii_case("aspsessionid"))
}

/// The name of a query's `name=value` pair.
fn param_name(pair: &str) -> &str {
    pair.split('=').next().unwrap_or("")
}

fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Remove session IDs from a canonical key: `;jsessionid=...` path parameters and
/// session query parameters. Returns whether anything was removed.
///
/// ```
/// let mut key = "https://a.example/p;jsessionid=AB12?x=1&PHPSESSID=9&y=2".to_string();
/// assert!(trawl::internals::strip_session_ids(&mut key));
/// assert_eq!(key, "https://a.example/p?x=1&y=2");
/// ```
pub fn strip_session_ids(key: &mut String) -> bool {
    // Cheap tests first (this runs once per link): a key with neither a `;` path
    // parameter nor a query has none; else the path parameters are searched and only the
    // query's parameter names are compared, not its values (a playground link's `?code=`
    // runs to hundreds of bytes).
    let bytes = key.as_bytes();
    let Some(from) = memchr::memchr2(b';', b'?', bytes) else {
        return false;
    };
    let query_from = memchr::memchr(b'?', &bytes[from..]).map(|i| from + i);
    let in_path = contains_ignore_case(
        &bytes[from..query_from.unwrap_or(bytes.len())],
        b";jsessionid=",
    );
    let in_query = query_from.is_some_and(|q| {
        key[q + 1..]
            .split('&')
            .any(|pair| is_session_param(param_name(pair)))
    });
    if !in_path && !in_query {
        return false;
    }
    let (head, query) = match query_from {
        Some(i) => (&key[..i], Some(&key[i + 1..])),
        None => (key.as_str(), None),
    };
    let mut out = String::with_capacity(key.len());
    // Path parameter: ";jsessionid=..." up to the next '/' (or the end of the path).
    let mut rest = head;
    while let Some(i) = rest
        .as_bytes()
        .windows(12)
        .position(|w| w.eq_ignore_ascii_case(b";jsessionid="))
    {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find('/').unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    if let Some(q) = query {
        let kept: Vec<&str> = q
            .split('&')
            .filter(|pair| !is_session_param(param_name(pair)))
            .collect();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
    }
    if out.len() == key.len() {
        return false;
    }
    *key = out;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traps() -> Traps {
        Traps {
            max_url_length: 60,
            max_path_segments: 6,
            max_repeated_segments: 2,
            max_query_variants: 0,
        }
    }

    fn check(u: &str) -> Result<(), Trap> {
        traps().check(&Url::parse(u).unwrap())
    }

    #[test]
    fn query_variants_group_by_the_url_without_its_query() {
        let g = |k| query_group(k);
        assert_eq!(g("http://a.example/p?x=1&y=2"), Some("http://a.example/p"));
        assert_eq!(g("http://a.example/p?"), None);
        assert_eq!(g("http://a.example/?q"), Some("http://a.example/"));
        assert_eq!(g("http://a.example/p"), None);
    }

    #[test]
    fn trap_rules() {
        assert_eq!(check("http://a.example/x/y/z"), Ok(()));
        assert_eq!(
            check(&format!("http://a.example/{}", "q".repeat(80))),
            Err(Trap::UrlTooLong)
        );
        assert_eq!(
            check("http://a.example/1/2/3/4/5/6/7"),
            Err(Trap::TooManySegments)
        );
        assert_eq!(
            check("http://a.example/a/b/a/b/a"),
            Err(Trap::RepeatedSegment)
        );
        assert_eq!(check("http://a.example/a/b/a/b"), Ok(()));
        let off = Traps {
            max_url_length: 0,
            max_path_segments: 0,
            max_repeated_segments: 0,
            max_query_variants: 0,
        };
        assert_eq!(
            off.check(&Url::parse("http://a.example/a/a/a/a/a/a/a/a").unwrap()),
            Ok(())
        );
    }

    #[test]
    fn session_ids() {
        let cases = [
            ("http://a.example/p?sid=1", "http://a.example/p", true),
            (
                "http://a.example/p?a=1&SID=2&b=3",
                "http://a.example/p?a=1&b=3",
                true,
            ),
            (
                "http://a.example/p;JSESSIONID=x/q?z",
                "http://a.example/p/q?z",
                true,
            ),
            (
                "http://a.example/p?ASPSESSIONIDQQ=abc",
                "http://a.example/p",
                true,
            ),
            (
                "http://a.example/p?sidebar=1",
                "http://a.example/p?sidebar=1",
                false,
            ),
            (
                "http://a.example/session/p",
                "http://a.example/session/p",
                false,
            ),
            ("http://a.example/p?x=1", "http://a.example/p?x=1", false),
            // Only names count: a value that spells one is kept.
            (
                "http://a.example/p?code=sid%3D1;jsessionid=2&e=1",
                "http://a.example/p?code=sid%3D1;jsessionid=2&e=1",
                false,
            ),
            (
                "http://a.example/p;v=1?sid=9&q=2",
                "http://a.example/p;v=1?q=2",
                true,
            ),
        ];
        for (input, want, changed) in cases {
            let mut key = input.to_string();
            assert_eq!(strip_session_ids(&mut key), changed, "{input}");
            assert_eq!(key, want, "{input}");
            // Idempotent.
            assert!(!strip_session_ids(&mut key));
        }
    }
}
