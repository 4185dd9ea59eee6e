//! Canonical URLs and crawl scope: pure functions, table-tested.
//!
//! Every extracted link is turned into a *canonical key*: the string that two spellings
//! of one resource share. The key is hashed into the visited set and matched against the
//! scope rules. The URL that is actually fetched is kept apart from the key: it is the
//! link as the `url` crate parsed it, minus the fragment, because servers may care about
//! spellings the key deliberately forgets (escape case, say).
//!
//! This is the crawler's hot path (dozens of links per page, millions of pages), so the
//! key has a buffer-reusing variant and a fast path for the common URL with no `%`.

use std::fmt;
use std::str::FromStr;

use regex::RegexSet;
use url::{Host, Position, Url};

/// A seed or a pattern the user gave could not be used.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// The text does not parse as an absolute URL with a host.
    #[error("{input:?} is not a valid URL ({reason}); give an absolute http:// or https:// URL such as https://example.org/")]
    Invalid {
        /// What the user typed.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The URL parses, but trawl cannot fetch its scheme.
    #[error("{input:?} has scheme {scheme:?}; trawl crawls http and https only")]
    UnsupportedScheme {
        /// What the user typed.
        input: String,
        /// The scheme found.
        scheme: String,
    },
    /// An `--include` / `--exclude` regex does not compile.
    #[error("invalid --{option} pattern {pattern:?}: {reason}")]
    BadPattern {
        /// `"include"` or `"exclude"`.
        option: &'static str,
        /// The pattern as given.
        pattern: String,
        /// The regex compiler's message.
        reason: String,
    },
}

/// Parse a seed the user typed.
///
/// Surrounding whitespace is trimmed. Text without a scheme (`example.org/docs`,
/// `localhost:8080`) means `https://` plus that text. Only http and https are accepted,
/// and the URL must have a host. The fragment is removed.
pub fn parse_seed(input: &str) -> Result<Url, UrlError> {
    let text = input.trim();
    let invalid = |reason: String| UrlError::Invalid {
        input: input.to_string(),
        reason,
    };
    if text.is_empty() {
        return Err(invalid("it is empty".to_string()));
    }

    let parsed = if text.contains("://") {
        // An explicit authority: never guess, or `ht!tp://x` would become a host "ht!tp".
        Url::parse(text)
    } else if looks_like_host_port(text) {
        // `Url::parse("localhost:8080")` succeeds with scheme "localhost"; the user meant a host.
        Url::parse(&format!("https://{text}"))
    } else {
        match Url::parse(text) {
            Err(url::ParseError::RelativeUrlWithoutBase) => Url::parse(&format!("https://{text}")),
            other => other,
        }
    };
    let mut url = parsed.map_err(|e| invalid(e.to_string()))?;

    if !is_fetchable_scheme(&url) {
        return Err(UrlError::UnsupportedScheme {
            input: input.to_string(),
            scheme: url.scheme().to_string(),
        });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it has no host".to_string()));
    }
    url.set_fragment(None);
    Ok(url)
}

/// `host:port[/...]` with a numeric port and no scheme.
fn looks_like_host_port(text: &str) -> bool {
    match text.split_once(':') {
        Some((host, rest)) => {
            !host.is_empty()
                && !host.contains('/')
                && rest.bytes().next().is_some_and(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// The canonical key of an absolute URL.
///
/// Starts from the `url` crate's serialization, which already lower-cases scheme and host,
/// converts IDNA hosts to punycode, drops default ports, resolves dot segments and turns an
/// empty path into `/`. For http and https the key then
///
/// 1. drops the fragment;
/// 2. in path and query, decodes escapes of unreserved characters (`%7E` → `~`,
///    `%41` → `A`) and upper-cases the hex digits of every other escape (`%2f` → `%2F`);
///    reserved and other characters stay escaped, and malformed escapes stay as they are;
/// 3. drops an empty query (`https://a/b?` → `https://a/b`).
///
/// Nothing else: query parameters are not sorted, `www.` is not stripped and trailing
/// slashes are not touched, because on real sites each of those can change which
/// resource is served (order-sensitive parameters, distinct `www` hosts, `/dir` vs `/dir/`
/// resolving relative links differently). Other schemes only lose their fragment.
///
/// The key is idempotent: parsing it and canonicalising again gives the same key.
pub fn canonical_key(url: &Url) -> String {
    let mut out = String::new();
    canonical_key_into(url, &mut out);
    out
}

/// [`canonical_key`], writing into `out` (cleared first) so the hot path can reuse one buffer.
pub fn canonical_key_into(url: &Url, out: &mut String) {
    out.clear();
    if !is_fetchable_scheme(url) {
        out.push_str(&url[..Position::AfterQuery]);
        return;
    }
    let end = if url.query() == Some("") {
        Position::AfterPath
    } else {
        Position::AfterQuery
    };
    let rest = &url[Position::BeforePath..end];
    if !rest.contains('%') {
        out.push_str(&url[..end]);
        return;
    }
    out.reserve(url[..end].len());
    out.push_str(&url[..Position::BeforePath]);
    push_normalized_escapes(rest, out);
}

/// Copy `src` to `out`, decoding escapes of unreserved characters and upper-casing the rest.
fn push_normalized_escapes(src: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = src.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        let (Some(hi), Some(lo)) = (
            bytes.get(i + 1).and_then(|&b| hex_value(b)),
            bytes.get(i + 2).and_then(|&b| hex_value(b)),
        ) else {
            // Malformed: leave the '%' and let the next bytes be copied as they are.
            i += 1;
            continue;
        };
        // `i` and `i + 3` sit on ASCII bytes, so both are char boundaries.
        out.push_str(&src[copied..i]);
        let value = (hi << 4) | lo;
        if is_unreserved(value) && !(value.is_ascii_hexdigit() && ends_in_lone_percent(out)) {
            out.push(char::from(value));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(hi)]));
            out.push(char::from(HEX[usize::from(lo)]));
        }
        i += 3;
        copied = i;
    }
    out.push_str(&src[copied..]);
}

/// Whether a hex digit appended now could complete a new escape with a malformed `%`
/// already written (`%%41B` would become `%AB`, which the next pass would read as an
/// escape). Escapes we write are always three bytes, so a `%` in the last two bytes can
/// only be a malformed one copied through. Keeping the escape keeps the key idempotent.
fn ends_in_lone_percent(out: &str) -> bool {
    let b = out.as_bytes();
    b.last() == Some(&b'%') || (b.len() >= 2 && b[b.len() - 2] == b'%')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// 128-bit hash of a canonical key (xxh3-128): the visited set's key.
pub fn key_hash(key: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(key.as_bytes())
}

/// The per-host queue key: lower-case host, plus `:port` when the URL has a non-default
/// port, e.g. `example.org`, `127.0.0.1:8080`, `[::1]:3000`. Empty for URLs without a host.
pub fn host_key(url: &Url) -> String {
    let mut key = url.host_str().unwrap_or("").to_ascii_lowercase();
    if let Some(port) = url.port() {
        key.push(':');
        key.push_str(&port.to_string());
    }
    key
}

/// `true` for http and https, the only schemes trawl fetches.
pub fn is_fetchable_scheme(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

/// How far from its seeds a crawl may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeMode {
    /// Same host name as a seed (any port, http or https).
    #[default]
    Host,
    /// Same registrable domain as a seed, subdomains included.
    Domain,
    /// Canonical key starts with a seed's directory.
    Prefix,
}

impl ScopeMode {
    /// Every mode.
    pub const ALL: [ScopeMode; 3] = [ScopeMode::Host, ScopeMode::Domain, ScopeMode::Prefix];

    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeMode::Host => "host",
            ScopeMode::Domain => "domain",
            ScopeMode::Prefix => "prefix",
        }
    }
}

impl fmt::Display for ScopeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ScopeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown scope mode {s:?}; expected host, domain or prefix"))
    }
}

/// Why a URL is not fetched. [`SkipReason::as_str`] is the stable name stored in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Outside the scope mode's bounds.
    OutOfScope,
    /// Matched an `--exclude` pattern.
    Excluded,
    /// `--include` patterns were given and none matched.
    NotIncluded,
    /// Not http or https.
    UnsupportedScheme,
    /// Deeper than `--max-depth`.
    MaxDepth,
    /// Found after `--max-pages` was reached.
    MaxPages,
    /// A redirect target past `--max-redirects` hops.
    MaxRedirects,
    /// Disallowed by robots.txt (or robots.txt could not be read).
    Robots,
    /// Longer than `--max-url-length`.
    UrlTooLong,
    /// More path segments than `--max-path-segments`.
    TooManySegments,
    /// A path segment repeated more than `--max-repeated-segments` times.
    RepeatedSegment,
    /// The host's `--max-pages-per-host` budget was spent.
    HostBudget,
    /// Linked only from pages that said `nofollow` (meta robots or X-Robots-Tag).
    Nofollow,
    /// A sitemap document: read when its host is prepared, never fetched as a page (its
    /// row turns to done once read).
    SitemapDoc,
    /// Refused by the library user's link filter (`follow_if`).
    Filtered,
}

impl SkipReason {
    /// Every reason.
    pub const ALL: [SkipReason; 15] = [
        SkipReason::OutOfScope,
        SkipReason::Excluded,
        SkipReason::NotIncluded,
        SkipReason::UnsupportedScheme,
        SkipReason::MaxDepth,
        SkipReason::MaxPages,
        SkipReason::MaxRedirects,
        SkipReason::Robots,
        SkipReason::UrlTooLong,
        SkipReason::TooManySegments,
        SkipReason::RepeatedSegment,
        SkipReason::HostBudget,
        SkipReason::Nofollow,
        SkipReason::SitemapDoc,
        SkipReason::Filtered,
    ];

    /// The stable kebab-case name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::OutOfScope => "out-of-scope",
            SkipReason::Excluded => "excluded",
            SkipReason::NotIncluded => "not-included",
            SkipReason::UnsupportedScheme => "unsupported-scheme",
            SkipReason::MaxDepth => "max-depth",
            SkipReason::MaxPages => "max-pages",
            SkipReason::MaxRedirects => "max-redirects",
            SkipReason::Robots => "robots",
            SkipReason::UrlTooLong => "url-too-long",
            SkipReason::TooManySegments => "too-many-segments",
            SkipReason::RepeatedSegment => "repeated-segment",
            SkipReason::HostBudget => "max-pages-per-host",
            SkipReason::Nofollow => "nofollow",
            SkipReason::SitemapDoc => "sitemap",
            SkipReason::Filtered => "filtered",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SkipReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown skip reason {s:?}"))
    }
}

/// Which URLs a crawl fetches. Built once from the seeds.
#[derive(Debug, Clone)]
pub struct Scope {
    mode: ScopeMode,
    /// Seed hosts compared for equality: all of them in host mode; in domain mode the
    /// IP addresses and hosts without a registrable domain.
    hosts: Vec<String>,
    /// Registrable domains of the seeds (domain mode only).
    domains: Vec<String>,
    /// Canonical keys of the seeds' directories (prefix mode only).
    prefixes: Vec<String>,
    include: RegexSet,
    exclude: RegexSet,
}

impl Scope {
    /// Build the scope of a crawl from its seeds.
    ///
    /// `include` / `exclude` are regexes matched unanchored against the canonical key.
    /// A bad regex gives [`UrlError::BadPattern`] naming the option and the pattern.
    pub fn new(
        seeds: &[Url],
        mode: ScopeMode,
        include: &[String],
        exclude: &[String],
    ) -> Result<Scope, UrlError> {
        let mut hosts = Vec::new();
        let mut domains = Vec::new();
        let mut prefixes = Vec::new();
        for seed in seeds {
            let Some(host) = seed.host_str() else {
                continue;
            };
            let host = host.to_ascii_lowercase();
            match mode {
                ScopeMode::Host => hosts.push(host),
                ScopeMode::Domain => match registrable_domain(seed) {
                    Some(domain) => domains.push(domain.to_ascii_lowercase()),
                    None => hosts.push(host),
                },
                ScopeMode::Prefix => prefixes.push(seed_directory_key(seed)),
            }
        }
        for list in [&mut hosts, &mut domains, &mut prefixes] {
            list.sort();
            list.dedup();
        }
        Ok(Scope {
            mode,
            hosts,
            domains,
            prefixes,
            include: compile_patterns("include", include)?,
            exclude: compile_patterns("exclude", exclude)?,
        })
    }

    /// The mode this scope was built with.
    pub fn mode(&self) -> ScopeMode {
        self.mode
    }

    /// Decide for one link; `key` is `canonical_key(url)`.
    ///
    /// Checked in order: scheme (unsupported-scheme), mode (out-of-scope), exclude
    /// patterns (excluded), include patterns (not-included, when any were given).
    pub fn check(&self, url: &Url, key: &str) -> Result<(), SkipReason> {
        if !is_fetchable_scheme(url) {
            return Err(SkipReason::UnsupportedScheme);
        }
        if !self.in_mode(url, key) {
            return Err(SkipReason::OutOfScope);
        }
        if self.exclude.is_match(key) {
            return Err(SkipReason::Excluded);
        }
        if !self.include.is_empty() && !self.include.is_match(key) {
            return Err(SkipReason::NotIncluded);
        }
        Ok(())
    }

    fn in_mode(&self, url: &Url, key: &str) -> bool {
        match self.mode {
            ScopeMode::Host | ScopeMode::Domain => {
                let Some(host) = url.host_str() else {
                    return false;
                };
                if self.hosts.iter().any(|h| h == host) {
                    return true;
                }
                // An IP address is never a subdomain, even if its digits end like one.
                matches!(url.host(), Some(Host::Domain(_)))
                    && self.domains.iter().any(|d| is_same_or_subdomain(host, d))
            }
            ScopeMode::Prefix => self.prefixes.iter().any(|p| key.starts_with(p.as_str())),
        }
    }
}

/// The registrable domain of a seed's host; `None` for IP addresses and for hosts the
/// public suffix list cannot split (a bare `localhost`, a public suffix itself).
fn registrable_domain(seed: &Url) -> Option<&str> {
    match seed.host()? {
        Host::Domain(host) => psl::domain_str(host),
        Host::Ipv4(_) | Host::Ipv6(_) => None,
    }
}

/// `host == domain` or `host` ends with `.domain`, without allocating.
fn is_same_or_subdomain(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

/// The canonical key of a seed's "directory": query and fragment removed, path cut after
/// its last `/`. `https://ex.org/docs/index.html` gives `https://ex.org/docs/`.
fn seed_directory_key(seed: &Url) -> String {
    let mut dir = seed.clone();
    dir.set_query(None);
    dir.set_fragment(None);
    let path = seed.path();
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    let dir_path = path[..cut].to_string();
    dir.set_path(&dir_path);
    canonical_key(&dir)
}

fn compile_patterns(option: &'static str, patterns: &[String]) -> Result<RegexSet, UrlError> {
    // Compile one by one first so the error names the pattern at fault.
    for pattern in patterns {
        regex::Regex::new(pattern).map_err(|e| UrlError::BadPattern {
            option,
            pattern: pattern.clone(),
            reason: e.to_string(),
        })?;
    }
    RegexSet::new(patterns).map_err(|e| UrlError::BadPattern {
        option,
        pattern: patterns.join(" "),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(input: &str) -> String {
        canonical_key(&Url::parse(input).unwrap_or_else(|e| panic!("{input}: {e}")))
    }

    #[test]
    fn canonical_key_table() {
        let table: &[(&str, &str)] = &[
            // fragment
            ("https://example.org/a#top", "https://example.org/a"),
            ("https://example.org/a?q=1#x", "https://example.org/a?q=1"),
            ("https://example.org/#", "https://example.org/"),
            // scheme, host case and default ports
            ("HTTP://Example.ORG:80/a", "http://example.org/a"),
            ("https://example.org:443/a", "https://example.org/a"),
            ("http://example.org:443/a", "http://example.org:443/a"),
            ("https://example.org:8443/a", "https://example.org:8443/a"),
            // dot segments, including escaped dots
            ("https://example.org/a/./b/../c", "https://example.org/a/c"),
            ("https://example.org/a/%2e%2E/b", "https://example.org/b"),
            ("https://example.org/a%2eb", "https://example.org/a.b"),
            // unreserved escapes decoded, in either hex case
            ("https://example.org/%7euser", "https://example.org/~user"),
            ("https://example.org/%7Euser", "https://example.org/~user"),
            ("https://example.org/%41%42", "https://example.org/AB"),
            ("https://example.org/a%2Db%5fc", "https://example.org/a-b_c"),
            ("https://example.org/%30%39", "https://example.org/09"),
            // other escapes kept, hex upper-cased
            ("https://example.org/a%2fb", "https://example.org/a%2Fb"),
            ("https://example.org/a%2Fb", "https://example.org/a%2Fb"),
            ("https://example.org/a%20b", "https://example.org/a%20b"),
            ("https://example.org/100%25", "https://example.org/100%25"),
            ("https://example.org/%c3%a9", "https://example.org/%C3%A9"),
            // characters the url crate escapes itself
            ("https://example.org/a b", "https://example.org/a%20b"),
            ("https://example.org/é", "https://example.org/%C3%A9"),
            // malformed escapes left alone
            ("https://example.org/%G1", "https://example.org/%G1"),
            ("https://example.org/a%", "https://example.org/a%"),
            ("https://example.org/%4", "https://example.org/%4"),
            // ... and never completed by a decoded hex digit
            ("https://example.org/%%41B", "https://example.org/%%41B"),
            ("https://example.org/%4%31", "https://example.org/%4%31"),
            ("https://example.org/%%7e", "https://example.org/%~"),
            // query
            ("https://example.org/b?", "https://example.org/b"),
            ("https://example.org/?", "https://example.org/"),
            ("https://example.org/b?#f", "https://example.org/b"),
            (
                "https://example.org/s?q=a%2fb&x=%7e",
                "https://example.org/s?q=a%2Fb&x=~",
            ),
            (
                "https://example.org/s?q=%41+b",
                "https://example.org/s?q=A+b",
            ),
            (
                "https://example.org/s?b=2&a=1",
                "https://example.org/s?b=2&a=1",
            ),
            ("https://example.org/s?a=", "https://example.org/s?a="),
            // hosts
            ("http://bücher.example/", "http://xn--bcher-kva.example/"),
            ("http://BÜCHER.example/x", "http://xn--bcher-kva.example/x"),
            ("https://example.org./a", "https://example.org./a"),
            ("http://127.0.0.1:8080/x", "http://127.0.0.1:8080/x"),
            ("http://[::1]:80/", "http://[::1]/"),
            ("https://www.example.org/", "https://www.example.org/"),
            // empty path, trailing slashes untouched
            ("https://example.org", "https://example.org/"),
            ("https://example.org?q", "https://example.org/?q"),
            ("https://example.org/dir", "https://example.org/dir"),
            ("https://example.org/dir/", "https://example.org/dir/"),
            // userinfo kept
            (
                "https://user:pa%73s@example.org/",
                "https://user:pa%73s@example.org/",
            ),
            // other schemes: fragment only
            ("mailto:Someone@Example.org#x", "mailto:Someone@Example.org"),
            ("ftp://example.org/%7e?#f", "ftp://example.org/%7e?"),
            ("urn:isbn:%7e0451450523", "urn:isbn:%7e0451450523"),
        ];
        assert!(table.len() >= 30);
        for (input, want) in table {
            assert_eq!(&key(input), want, "input {input:?}");
        }
    }

    #[test]
    fn canonical_key_into_reuses_and_clears_buffer() {
        let mut buf = String::from("leftover junk");
        canonical_key_into(&Url::parse("https://a.example/%7e").unwrap(), &mut buf);
        assert_eq!(buf, "https://a.example/~");
        canonical_key_into(&Url::parse("https://b.example/x").unwrap(), &mut buf);
        assert_eq!(buf, "https://b.example/x");
    }

    #[test]
    fn key_hash_is_stable_and_distinguishes() {
        assert_eq!(key_hash("https://a/"), key_hash("https://a/"));
        assert_ne!(key_hash("https://a/"), key_hash("https://a/b"));
        assert_eq!(
            key_hash("https://a/"),
            xxhash_rust::xxh3::xxh3_128(b"https://a/")
        );
    }

    #[test]
    fn host_key_table() {
        let table = [
            ("https://Example.ORG/a", "example.org"),
            ("https://example.org:443/", "example.org"),
            ("http://example.org:443/", "example.org:443"),
            ("http://127.0.0.1:8080/x", "127.0.0.1:8080"),
            ("http://[::1]:3000/", "[::1]:3000"),
            ("https://user@example.org:8443/", "example.org:8443"),
        ];
        for (input, want) in table {
            assert_eq!(host_key(&Url::parse(input).unwrap()), want, "{input}");
        }
    }

    #[test]
    fn fetchable_schemes() {
        for (input, want) in [
            ("http://a/", true),
            ("https://a/", true),
            ("ftp://a/", false),
            ("mailto:x@a", false),
            ("javascript:alert(1)", false),
        ] {
            assert_eq!(is_fetchable_scheme(&Url::parse(input).unwrap()), want);
        }
    }

    #[test]
    fn parse_seed_accepts() {
        let table = [
            ("https://example.org/", "https://example.org/"),
            ("example.org", "https://example.org/"),
            ("example.org/docs", "https://example.org/docs"),
            ("  example.org/docs \n", "https://example.org/docs"),
            ("\thttp://Example.org/a#frag ", "http://example.org/a"),
            ("localhost:8080", "https://localhost:8080/"),
            ("localhost:8080/x?y", "https://localhost:8080/x?y"),
            ("127.0.0.1:3000/", "https://127.0.0.1:3000/"),
            ("http://[::1]:8080/", "http://[::1]:8080/"),
            ("HTTPS://EXAMPLE.ORG", "https://example.org/"),
        ];
        for (input, want) in table {
            match parse_seed(input) {
                Ok(url) => assert_eq!(url.as_str(), want, "{input:?}"),
                Err(e) => panic!("{input:?}: {e}"),
            }
        }
    }

    #[test]
    fn parse_seed_rejects() {
        for input in [
            "javascript:alert(1)",
            "mailto:a@example.org",
            "ftp://example.org/",
        ] {
            assert!(
                matches!(parse_seed(input), Err(UrlError::UnsupportedScheme { .. })),
                "{input:?}"
            );
        }
        for input in [
            "http://",
            "https:///",
            "ht!tp://x",
            "",
            "   ",
            "http://exa mple.org/",
        ] {
            assert!(
                matches!(parse_seed(input), Err(UrlError::Invalid { .. })),
                "{input:?}: {:?}",
                parse_seed(input)
            );
        }
        let msg = parse_seed("javascript:alert(1)").unwrap_err().to_string();
        assert_eq!(
            msg,
            "\"javascript:alert(1)\" has scheme \"javascript\"; trawl crawls http and https only"
        );
        let msg = parse_seed("http://").unwrap_err().to_string();
        assert!(msg.starts_with("\"http://\" is not a valid URL ("), "{msg}");
    }

    #[test]
    fn scope_mode_names() {
        for mode in ScopeMode::ALL {
            assert_eq!(mode.as_str().parse::<ScopeMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!(ScopeMode::default(), ScopeMode::Host);
        assert!("Host".parse::<ScopeMode>().is_err());
        assert_eq!(
            serde_json::to_string(&ScopeMode::Domain).unwrap(),
            "\"domain\""
        );
        assert_eq!(
            serde_json::from_str::<ScopeMode>("\"prefix\"").unwrap(),
            ScopeMode::Prefix
        );
    }

    #[test]
    fn skip_reason_names() {
        let names: Vec<_> = SkipReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "out-of-scope",
                "excluded",
                "not-included",
                "unsupported-scheme",
                "max-depth",
                "max-pages",
                "max-redirects",
                "robots",
                "url-too-long",
                "too-many-segments",
                "repeated-segment",
                "max-pages-per-host",
                "nofollow",
                "sitemap",
                "filtered"
            ]
        );
        for reason in SkipReason::ALL {
            assert_eq!(reason.as_str().parse::<SkipReason>(), Ok(reason));
        }
        assert!("nope".parse::<SkipReason>().is_err());
    }

    fn scope(seeds: &[&str], mode: ScopeMode) -> Scope {
        scope_with(seeds, mode, &[], &[])
    }

    fn scope_with(seeds: &[&str], mode: ScopeMode, include: &[&str], exclude: &[&str]) -> Scope {
        let seeds: Vec<Url> = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Scope::new(&seeds, mode, &strings(include), &strings(exclude)).unwrap()
    }

    fn check(scope: &Scope, link: &str) -> Result<(), SkipReason> {
        let url = Url::parse(link).unwrap();
        scope.check(&url, &canonical_key(&url))
    }

    const OUT: Result<(), SkipReason> = Err(SkipReason::OutOfScope);

    #[test]
    fn scope_host_mode() {
        let s = scope(&["https://www.example.org/start"], ScopeMode::Host);
        for (link, want) in [
            ("https://www.example.org/", Ok(())),
            ("http://www.example.org/other", Ok(())),
            ("https://WWW.Example.org:8443/x", Ok(())),
            ("https://example.org/", OUT),
            ("https://docs.example.org/", OUT),
            ("https://www.example.org.evil.com/", OUT),
            ("https://other.org/", OUT),
            (
                "mailto:x@www.example.org",
                Err(SkipReason::UnsupportedScheme),
            ),
            ("ftp://www.example.org/", Err(SkipReason::UnsupportedScheme)),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_host_mode_several_seeds_and_ips() {
        let s = scope(
            &[
                "https://a.example/",
                "http://127.0.0.1:8080/",
                "http://[::1]/",
            ],
            ScopeMode::Host,
        );
        for (link, want) in [
            ("https://a.example/x", Ok(())),
            ("http://127.0.0.1/", Ok(())),
            ("http://127.0.0.1:9999/", Ok(())),
            ("http://[::1]:81/", Ok(())),
            ("http://127.0.0.2/", OUT),
            ("https://b.example/", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_domain_mode() {
        let s = scope(&["https://www.example.org/"], ScopeMode::Domain);
        for (link, want) in [
            ("https://www.example.org/", Ok(())),
            ("https://example.org/", Ok(())),
            ("https://docs.example.org/a", Ok(())),
            ("http://a.b.example.org:8080/", Ok(())),
            ("https://badexample.org/", OUT),
            ("https://example.org.evil.com/", OUT),
            ("https://example.com/", OUT),
            ("https://org/", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_domain_mode_multi_label_suffix() {
        // co.uk is a public suffix: siblings under it are different sites.
        let s = scope(&["https://shop.example.co.uk/"], ScopeMode::Domain);
        assert_eq!(check(&s, "https://blog.example.co.uk/"), Ok(()));
        assert_eq!(check(&s, "https://other.co.uk/"), OUT);
        assert_eq!(check(&s, "https://co.uk/"), OUT);
    }

    #[test]
    fn scope_domain_mode_falls_back_to_host_equality() {
        let s = scope(
            &[
                "http://127.0.0.1:8080/",
                "http://[::1]/",
                "http://localhost:3000/",
            ],
            ScopeMode::Domain,
        );
        for (link, want) in [
            ("http://127.0.0.1/", Ok(())),
            ("http://[::1]:9/", Ok(())),
            ("http://localhost/", Ok(())),
            ("http://127.0.0.2/", OUT),
            ("http://0.0.1/", OUT),
            ("http://a.localhost/", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_domain_mode_ip_link_never_matches_a_domain() {
        // psl would call "0.1" the registrable domain of "10.0.0.1"; an IP is no subdomain.
        let s = scope(&["https://example.org/"], ScopeMode::Domain);
        assert_eq!(check(&s, "http://10.0.0.1/"), OUT);
    }

    #[test]
    fn scope_prefix_mode() {
        let s = scope(&["https://ex.org/docs/index.html?x=1#f"], ScopeMode::Prefix);
        for (link, want) in [
            ("https://ex.org/docs/", Ok(())),
            ("https://ex.org/docs/a/b", Ok(())),
            ("https://ex.org/docs/?q", Ok(())),
            ("https://ex.org/%64ocs/x", Ok(())),
            ("https://ex.org/docs/../x", OUT),
            ("https://ex.org/docs", OUT),
            ("https://ex.org/docsx/", OUT),
            ("http://ex.org/docs/a", OUT),
            ("https://ex.org:8443/docs/a", OUT),
            ("https://sub.ex.org/docs/a", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_prefix_directories() {
        for (seed, inside, outside) in [
            (
                "https://ex.org/docs",
                "https://ex.org/anything",
                "https://ex.com/",
            ),
            (
                "https://ex.org/",
                "https://ex.org/a/b",
                "https://ex.org.au/",
            ),
            ("https://ex.org", "https://ex.org/a", "http://ex.org/a"),
            (
                "https://ex.org/a/b/?q=1",
                "https://ex.org/a/b/c",
                "https://ex.org/a/",
            ),
            (
                "https://ex.org/%7Eu/p",
                "https://ex.org/~u/q",
                "https://ex.org/%7Fu/q",
            ),
        ] {
            let s = scope(&[seed], ScopeMode::Prefix);
            assert_eq!(check(&s, inside), Ok(()), "{seed} {inside}");
            assert_eq!(check(&s, outside), OUT, "{seed} {outside}");
        }
    }

    #[test]
    fn scope_include_exclude_order() {
        let s = scope_with(
            &["https://ex.org/"],
            ScopeMode::Host,
            &["/docs/", "/blog/"],
            &[r"\.pdf$", "/docs/private/"],
        );
        for (link, want) in [
            ("https://ex.org/docs/a", Ok(())),
            ("https://ex.org/blog/b", Ok(())),
            ("https://ex.org/other", Err(SkipReason::NotIncluded)),
            ("https://ex.org/docs/private/x", Err(SkipReason::Excluded)),
            ("https://ex.org/docs/a.pdf", Err(SkipReason::Excluded)),
            ("https://ex.org/other.pdf", Err(SkipReason::Excluded)),
            ("https://other.org/docs/a", OUT),
            ("https://other.org/a.pdf", OUT),
            ("mailto:x@ex.org", Err(SkipReason::UnsupportedScheme)),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_patterns_match_the_canonical_key() {
        let s = scope_with(&["https://ex.org/"], ScopeMode::Host, &["/~user/"], &[]);
        assert_eq!(check(&s, "https://ex.org/%7euser/a#frag"), Ok(()));
        let s = scope_with(&["https://ex.org/"], ScopeMode::Host, &[], &["#"]);
        assert_eq!(check(&s, "https://ex.org/a#frag"), Ok(()));
    }

    #[test]
    fn scope_bad_patterns() {
        let seeds = [Url::parse("https://ex.org/").unwrap()];
        let err = Scope::new(&seeds, ScopeMode::Host, &["ok".into(), "(".into()], &[]).unwrap_err();
        match &err {
            UrlError::BadPattern {
                option, pattern, ..
            } => {
                assert_eq!(*option, "include");
                assert_eq!(pattern, "(");
            }
            other => panic!("{other:?}"),
        }
        assert!(err
            .to_string()
            .starts_with("invalid --include pattern \"(\": "));
        let err = Scope::new(&seeds, ScopeMode::Host, &[], &["[z-a]".into()]).unwrap_err();
        assert!(matches!(
            err,
            UrlError::BadPattern {
                option: "exclude",
                ..
            }
        ));
    }

    /// Path and query pieces that stress the escape and dot-segment rules.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9._~-]{0,4}",
            any::<u8>().prop_map(|b| format!("%{b:02x}")),
            any::<u8>().prop_map(|b| format!("%{b:02X}")),
            (any::<u8>(), any::<bool>()).prop_map(|(b, up)| {
                let e = format!("%{b:02x}");
                if up {
                    e.to_uppercase()
                } else {
                    e
                }
            }),
            prop::sample::select(vec![
                "/", "/", ".", "..", "/./", "/../", "%", "%%", "%2e", "%2E", ".%2e", "%2e.", "?",
                "&", "=", "+", "#", "%G", "\\", " ", "é", "\"", "<", "'", "{", "|",
            ])
            .prop_map(str::to_string),
            "[a-fA-F0-9%]{1,3}",
        ]
    }

    fn url_text() -> impl Strategy<Value = String> {
        let host = prop::sample::select(vec![
            "http://example.org",
            "https://Example.ORG:443",
            "http://127.0.0.1:8080",
            "https://bücher.example",
            "http://u:p@h.example",
        ]);
        (host, prop::collection::vec(piece(), 0..12))
            .prop_map(|(h, pieces)| format!("{h}/{}", pieces.concat()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn canonical_key_is_idempotent(text in url_text()) {
            let url = Url::parse(&text).unwrap();
            let k = canonical_key(&url);
            let again = Url::parse(&k).unwrap();
            prop_assert_eq!(canonical_key(&again), k.clone(), "from {}", text);
            prop_assert_eq!(again.fragment(), None);
            prop_assert_ne!(again.query(), Some(""));
        }

        #[test]
        fn canonical_key_never_panics(text in "\\PC{0,40}", prefix in prop::sample::select(vec!["", "http://a/", "https://", "mailto:", "x:"])) {
            if let Ok(url) = Url::parse(&format!("{prefix}{text}")) {
                let k = canonical_key(&url);
                let mut buf = String::new();
                canonical_key_into(&url, &mut buf);
                prop_assert_eq!(k, buf);
            }
            let _ = parse_seed(&text);
        }
    }
}
