//! Text made safe for XML 1.0, shared by GraphML and the sitemap.

use std::io::{self, Write};

/// Write `s` escaped for both element content and double- or single-quoted attributes.
///
/// Characters XML 1.0 forbids (C0 controls other than tab, newline and carriage return;
/// U+FFFE and U+FFFF) cannot be written even as references, and page titles do contain
/// them: they become U+FFFD so that the text stays visibly damaged rather than silently
/// shortened. Tab, newline and carriage return are written as references so that parsers
/// keep them instead of normalising them away.
pub(super) fn write_escaped(out: &mut dyn Write, s: &str) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let rep: &str = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            '"' => "&quot;",
            '\'' => "&apos;",
            '\t' => "&#9;",
            '\n' => "&#10;",
            '\r' => "&#13;",
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => "\u{fffd}",
            _ => continue,
        };
        out.write_all(&s.as_bytes()[start..i])?;
        out.write_all(rep.as_bytes())?;
        start = i + c.len_utf8();
    }
    out.write_all(&s.as_bytes()[start..])
}

#[cfg(test)]
pub(super) fn escaped(s: &str) -> String {
    let mut v = Vec::new();
    write_escaped(&mut v, s).unwrap();
    String::from_utf8(v).unwrap()
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(
            escaped(r#"a<b>&"c"'d'"#),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;"
        );
    }

    #[test]
    fn forbidden_controls_are_replaced_and_whitespace_kept() {
        assert_eq!(
            escaped("x\u{0}\u{1b}y\t\n\r\u{ffff}"),
            "x\u{fffd}\u{fffd}y&#9;&#10;&#13;\u{fffd}"
        );
        assert_eq!(escaped("plain ünïcode ✓"), "plain ünïcode ✓");
    }
}
