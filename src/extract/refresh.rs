//! The target of a declarative refresh: `<meta http-equiv="refresh" content="...">` and the
//! `Refresh` response header, which say the same thing in the same syntax.
//!
//! Parsed as the HTML standard's "shared declarative refresh steps" do, since that is what
//! browsers follow: `0; url=/next`, `5;URL='/x'`, `url="/x"`, `3, /x` and `0 /x` all name
//! `/x`; `5` alone, or a time that is not a number, names nothing (a reload, or an error).

/// The URL text a refresh value names, not yet resolved; `None` when it only reloads the
/// page or is not a refresh at all. Entities must be decoded already.
///
/// ```text
/// "0; url=/next"   -> Some("/next")
/// "5;URL='/x'y"    -> Some("/x")
/// "30"             -> None
/// ```
pub(crate) fn refresh_target(content: &str) -> Option<&str> {
    let mut rest = content.trim_start_matches(is_space);
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 && !rest.starts_with('.') {
        return None;
    }
    rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if !rest.is_empty() {
        if !rest.starts_with([';', ',']) && !rest.starts_with(is_space) {
            return None;
        }
        rest = rest.trim_start_matches(is_space);
        rest = rest.strip_prefix([';', ',']).unwrap_or(rest);
        rest = rest.trim_start_matches(is_space);
    }
    if rest.is_empty() {
        return None;
    }
    let url = match strip_url_label(rest) {
        Label::Stripped(after) => unquote(after),
        Label::Absent => unquote(rest),
        // "ur", "url" and "url =" without a value are parsed as the URL they spell, as the
        // standard's "jump to parse" does.
        Label::Partial => rest,
    };
    Some(url.trim_end_matches(is_space)).filter(|u| !u.is_empty())
}

enum Label<'a> {
    /// `url` then `=`: what follows, spaces skipped.
    Stripped(&'a str),
    /// Not starting with `u`: the value is the URL, perhaps quoted.
    Absent,
    /// Starts like `url=` and stops short: the whole rest is the URL.
    Partial,
}

fn strip_url_label(s: &str) -> Label<'_> {
    let b = s.as_bytes();
    if !b[0].eq_ignore_ascii_case(&b'u') {
        return Label::Absent;
    }
    if b.len() < 3 || !b[1].eq_ignore_ascii_case(&b'r') || !b[2].eq_ignore_ascii_case(&b'l') {
        return Label::Partial;
    }
    match s[3..].trim_start_matches(is_space).strip_prefix('=') {
        Some(after) => Label::Stripped(after.trim_start_matches(is_space)),
        None => Label::Partial,
    }
}

/// A leading quote ends the URL at its twin, or at the end if it has none.
fn unquote(s: &str) -> &str {
    match s.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let inner = &s[1..];
            inner.find(q).map_or(inner, |end| &inner[..end])
        }
        _ => s,
    }
}

fn is_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

#[cfg(test)]
mod tests {
    use super::refresh_target;

    #[test]
    fn the_forms_browsers_accept() {
        for (content, want) in [
            ("0; url=/next", Some("/next")),
            ("0;url=/next", Some("/next")),
            ("5;URL='/x'", Some("/x")),
            ("5;URL='/x'trailing", Some("/x")),
            ("1; url=\"/x y\"", Some("/x y")),
            ("  3 ,  url = /x  ", Some("/x")),
            ("0, /x", Some("/x")),
            ("0 /x", Some("/x")),
            ("0; /x", Some("/x")),
            ("0;'/quoted'", Some("/quoted")),
            ("0; url='/unterminated", Some("/unterminated")),
            ("2.5; url=/x", Some("/x")),
            (".5; url=/x", Some("/x")),
            ("0; URL=https://example.org/", Some("https://example.org/")),
            ("0; uRl=/mixed", Some("/mixed")),
            // The standard's "jump to parse": a word that only starts like `url=`.
            ("0; urx", Some("urx")),
            ("0; url", Some("url")),
            ("0; upstairs.html", Some("upstairs.html")),
        ] {
            assert_eq!(refresh_target(content), want, "{content:?}");
        }
    }

    #[test]
    fn reloads_and_nonsense_name_nothing() {
        for content in [
            "",
            "30",
            "  30  ",
            "0;",
            "0; url=",
            "0; url=''",
            "soon; url=/x",
            "; url=/x",
            "0x; url=/x",
        ] {
            assert_eq!(refresh_target(content), None, "{content:?}");
        }
    }
}

#[cfg(test)]
mod meta {
    use crate::extract::tests::{ex, link};
    use crate::link::LinkKind;

    #[test]
    fn meta_refresh_is_a_link_of_its_own_kind() {
        let e = ex(
            r#"<meta http-equiv="Refresh" content="0; URL='/next?a=1&amp;b=2'">
            <meta http-equiv=" refresh " content="5">
            <meta http-equiv="refresh" content="3;url=https://other.example/">
            <meta name="refresh" content="0; url=/not-equiv">"#,
        );
        assert_eq!(
            e.links,
            vec![
                link("https://example.com/next?a=1&b=2", LinkKind::Refresh, false),
                link("https://other.example/", LinkKind::Refresh, false),
            ]
        );
    }
}
