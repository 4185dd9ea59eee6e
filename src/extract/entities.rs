//! Character references. lol_html hands out attribute values and text exactly as written,
//! entities included, so `href="?a=1&amp;b=2"` would otherwise become a different URL.
//!
//! This follows the HTML tokenizer's rules for numeric references and for the legacy names
//! that may appear without a `;` (which, inside attribute values, stay literal before `=` or
//! an alphanumeric, so `?a=1&copy=2` is left alone). Named references cover the Latin-1 set
//! plus common punctuation, not HTML's full 2,231-name table: an unknown name stays verbatim,
//! which costs a stray `&name;` in a rare title or URL, not a dependency and a 30 KB table.

use std::borrow::Cow;

/// Decodes character references in `s`; borrows when there are none, as in most URLs.
#[inline]
pub(super) fn decode_entities(s: &str, in_attribute: bool) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        match decode_reference(after, in_attribute) {
            Some((c, consumed)) => {
                out.push(c);
                rest = &after[consumed..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The char referenced at the start of `s` (just past a `&`) and how many bytes spell it.
fn decode_reference(s: &str, in_attribute: bool) -> Option<(char, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() == Some(&b'#') {
        let (radix, start) = match bytes.get(1) {
            Some(b'x' | b'X') => (16, 2),
            _ => (10, 1),
        };
        let digits = bytes[start..]
            .iter()
            .take_while(|b| char::from(**b).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        let code = u32::from_str_radix(&s[start..start + digits], radix).unwrap_or(u32::MAX);
        let end = start + digits;
        let end = if bytes.get(end) == Some(&b';') {
            end + 1
        } else {
            end
        };
        return Some((numeric_reference(code), end));
    }

    let name_len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if bytes.get(name_len) == Some(&b';') {
        if let Some((c, _)) = named_reference(&s[..name_len]) {
            return Some((c, name_len + 1));
        }
    }
    // Without `;` only legacy names count, the longest one that prefixes the name.
    for len in (2..=name_len.min(MAX_LEGACY_NAME_LEN)).rev() {
        if let Some((c, true)) = named_reference(&s[..len]) {
            let next = bytes.get(len).copied();
            if in_attribute && next.is_some_and(|b| b == b'=' || b.is_ascii_alphanumeric()) {
                return None;
            }
            return Some((c, len));
        }
    }
    None
}

fn numeric_reference(code: u32) -> char {
    // Numeric references in 0x80..=0x9F mean windows-1252, for compatibility with old pages.
    const C1: [u16; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    let code = match code {
        0x80..=0x9F => u32::from(C1[(code - 0x80) as usize]),
        _ => code,
    };
    match code {
        0 => char::REPLACEMENT_CHARACTER,
        _ => char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
    }
}

const MAX_LEGACY_NAME_LEN: usize = 6;

/// Names of U+00A0..=U+00FF in order; all of them are legacy (valid without `;`).
const LATIN1_NAMES: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

/// Other names: (name, char, legacy).
const OTHER_NAMES: [(&str, char, bool); 45] = [
    ("amp", '&', true),
    ("AMP", '&', true),
    ("lt", '<', true),
    ("LT", '<', true),
    ("gt", '>', true),
    ("GT", '>', true),
    ("quot", '"', true),
    ("QUOT", '"', true),
    ("COPY", '©', true),
    ("REG", '®', true),
    ("apos", '\'', false),
    ("ndash", '\u{2013}', false),
    ("mdash", '\u{2014}', false),
    ("lsquo", '\u{2018}', false),
    ("rsquo", '\u{2019}', false),
    ("sbquo", '\u{201A}', false),
    ("ldquo", '\u{201C}', false),
    ("rdquo", '\u{201D}', false),
    ("bdquo", '\u{201E}', false),
    ("lsaquo", '\u{2039}', false),
    ("rsaquo", '\u{203A}', false),
    ("hellip", '\u{2026}', false),
    ("bull", '\u{2022}', false),
    ("dagger", '\u{2020}', false),
    ("Dagger", '\u{2021}', false),
    ("permil", '\u{2030}', false),
    ("prime", '\u{2032}', false),
    ("euro", '\u{20AC}', false),
    ("trade", '\u{2122}', false),
    ("OElig", '\u{0152}', false),
    ("oelig", '\u{0153}', false),
    ("Scaron", '\u{0160}', false),
    ("scaron", '\u{0161}', false),
    ("Yuml", '\u{0178}', false),
    ("fnof", '\u{0192}', false),
    ("circ", '\u{02C6}', false),
    ("tilde", '\u{02DC}', false),
    ("ensp", '\u{2002}', false),
    ("emsp", '\u{2003}', false),
    ("thinsp", '\u{2009}', false),
    ("zwnj", '\u{200C}', false),
    ("zwj", '\u{200D}', false),
    ("minus", '\u{2212}', false),
    ("larr", '\u{2190}', false),
    ("rarr", '\u{2192}', false),
];

/// The char for a reference name and whether the name is legacy.
fn named_reference(name: &str) -> Option<(char, bool)> {
    if let Some(i) = LATIN1_NAMES.iter().position(|n| *n == name) {
        return char::from_u32(0xA0 + i as u32).map(|c| (c, true));
    }
    OTHER_NAMES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, c, legacy)| (c, legacy))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::ex;

    #[test]
    fn entities_in_attributes_are_decoded() {
        let e = ex(
            r#"<a href="/a?x=1&amp;y=2"><a href="/b?x=1&#38;y=2&#x26;z=3"><a href="/c?a=1&copy=2&lang=en">"#,
        );
        assert_eq!(e.links[0].url.query(), Some("x=1&y=2"));
        assert_eq!(e.links[1].url.query(), Some("x=1&y=2&z=3"));
        // Legacy names before `=` stay literal inside attributes, as in browsers.
        assert_eq!(e.links[2].url.query(), Some("a=1&copy=2&lang=en"));
    }

    #[test]
    fn numeric_references() {
        let d = |s: &str| decode_entities(s, false).into_owned();
        assert_eq!(d("&#x41;&#X42;&#67"), "ABC");
        assert_eq!(d("&#0;&#xD800;&#99999999999;"), "\u{FFFD}\u{FFFD}\u{FFFD}");
        assert_eq!(d("&#128;&#x99;"), "\u{20AC}\u{2122}");
        assert_eq!(d("&#; &#x; & &&amp"), "&#; &#x; & &&");
    }
}
