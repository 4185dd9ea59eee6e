//! Seeds as the user types them.

use std::path::Path;

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

/// The seeds of a seeds file's `text`: one per line, each as [`parse_seed`] takes it; blank
/// lines and lines starting with `#` are skipped. `path` names the file in errors, which
/// give the first bad line's number.
pub fn seeds_in(text: &str, path: &str) -> Result<Vec<Url>, UrlError> {
    let mut seeds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let seed = parse_seed(line).map_err(|e| UrlError::SeedsFileLine {
            path: path.to_string(),
            line: i + 1,
            source: Box::new(e),
        })?;
        seeds.push(seed);
    }
    Ok(seeds)
}

/// The seeds in the file at `path`, or on standard input for `-` (see [`seeds_in`]).
pub fn read_seeds_file(path: &Path) -> Result<Vec<Url>, UrlError> {
    let shown = path.display().to_string();
    let read = if shown == "-" {
        std::io::read_to_string(std::io::stdin().lock())
    } else {
        std::fs::read_to_string(path)
    };
    let text = read.map_err(|source| UrlError::SeedsFile {
        path: shown.clone(),
        source,
    })?;
    seeds_in(&text, &shown)
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
    fn a_seeds_file_skips_blanks_and_comments_and_names_a_bad_line() {
        let text = "# docs sites\nexample.org\n\n  https://example.com/a  \r\n#https://x.test/\n";
        let seeds = seeds_in(text, "sites.txt").unwrap();
        let got: Vec<&str> = seeds.iter().map(Url::as_str).collect();
        assert_eq!(got, ["https://example.org/", "https://example.com/a"]);
        let err = seeds_in("example.org\n\nftp://x.test/\n", "sites.txt").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("sites.txt line 3: \"ftp://x.test/\" has scheme"),
            "{err}"
        );
        let missing = read_seeds_file(Path::new("/nonexistent/sites.txt")).unwrap_err();
        assert!(missing
            .to_string()
            .contains("cannot read the seeds file /nonexistent/sites.txt"));
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
}
