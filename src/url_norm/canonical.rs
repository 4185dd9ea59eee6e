//! Canonical keys, their hash and the per-host queue key.

use url::{Position, Url};

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

/// A map by [`key_hash`]: the hash is one already, so the map
/// uses its low bits as they are instead of hashing it again.
pub(crate) type ByKeyHash<V> =
    std::collections::HashMap<u128, V, std::hash::BuildHasherDefault<Prehashed>>;

/// The hasher of [`ByKeyHash`].
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u128` keys reach it; any other input is still hashed, if poorly.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, v: u128) {
        self.0 = v as u64;
    }
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
#[inline]
pub fn is_fetchable_scheme(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_norm::parse_seed;
    use proptest::prelude::*;

    fn key(input: &str) -> String {
        canonical_key(&Url::parse(input).unwrap_or_else(|e| panic!("{input}: {e}")))
    }

    const CANONICAL_KEYS: &[(&str, &str)] = &[
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

    #[test]
    fn canonical_key_table() {
        assert!(CANONICAL_KEYS.len() >= 30);
        for (input, want) in CANONICAL_KEYS {
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
