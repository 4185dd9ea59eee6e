//! Seeds as the user types them.

use url::Url;

use super::{is_fetchable_scheme, UrlError};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
