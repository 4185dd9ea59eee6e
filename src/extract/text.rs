//! Page text as the crawler keeps it: decoded, whitespace collapsed, cut to a size.

use std::borrow::Cow;

use super::entities::decode_entities;

/// Longest title kept, in chars.
const MAX_TITLE_CHARS: usize = 1024;

/// Raw title text buffered before decoding. Well above what [`MAX_TITLE_CHARS`] needs even
/// when every char is spelled as an entity, and small enough not to matter per worker.
pub(super) const MAX_TITLE_RAW_BYTES: usize = 16 << 10;
/// Longest anchor text kept, in characters, and bytes of it collapsed before the cut.
pub(super) const MAX_ANCHOR_CHARS: usize = 256;
pub(super) const MAX_ANCHOR_COLLAPSED_BYTES: usize = 2 << 10;

/// Text that decoding, collapsing and cutting would leave as it is: no character
/// reference, single spaces between words, nothing to cut.
#[inline]
pub(super) fn is_plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= MAX_ANCHOR_CHARS
        && *first != b' '
        && *last != b' '
        && !bytes.windows(2).any(|w| w == b"  ")
        && !bytes
            .iter()
            .any(|&b| b == b'&' || (b.is_ascii_whitespace() && b != b' '))
}

/// `raw`, text in `encoding` as the page has it, as a string. A char cut short at the end
/// (anchor text is capped in bytes) is dropped.
#[inline]
pub(super) fn decode_text<'a>(
    raw: &'a [u8],
    encoding: &'static encoding_rs::Encoding,
) -> Cow<'a, str> {
    if encoding != encoding_rs::UTF_8 {
        return encoding.decode_without_bom_handling(raw).0;
    }
    match std::str::from_utf8(raw) {
        Ok(text) => Cow::Borrowed(text),
        Err(e) if e.error_len().is_none() => {
            Cow::Borrowed(std::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or_default())
        }
        Err(_) => String::from_utf8_lossy(raw),
    }
}

/// Text with ASCII whitespace runs collapsed to one space and trimmed as it is appended, so
/// padding doesn't eat into the size cap.
#[derive(Default)]
pub(super) struct TitleText {
    pub(super) text: String,
    pending_space: bool,
}

impl TitleText {
    /// Appends word by word rather than char by char (every `<a>`'s text passes here).
    /// A char is kept while the text is shorter than `max_bytes` before it, so the text
    /// may end up to one char past the cap, as when this went char by char.
    pub(super) fn push(&mut self, s: &str, max_bytes: usize) {
        let mut rest = s;
        while !rest.is_empty() {
            if self.text.len() >= max_bytes {
                return;
            }
            let ws = rest.bytes().take_while(u8::is_ascii_whitespace).count();
            if ws > 0 {
                self.pending_space = true;
                rest = &rest[ws..];
                continue;
            }
            let len = rest
                .bytes()
                .position(|b| b.is_ascii_whitespace())
                .unwrap_or(rest.len());
            let (word, after) = rest.split_at(len);
            if self.pending_space && !self.text.is_empty() {
                self.text.push(' ');
            }
            self.pending_space = false;
            if self.text.len() + word.len() <= max_bytes {
                self.text.push_str(word);
            } else {
                // The first char was allowed by the check above, space or no space.
                let first = word.chars().next().expect("words are not empty");
                self.text.push(first);
                self.push_chars(&word[first.len_utf8()..], max_bytes);
            }
            rest = after;
        }
    }

    fn push_chars(&mut self, s: &str, max_bytes: usize) {
        for c in s.chars() {
            if self.text.len() >= max_bytes {
                return;
            }
            if c.is_ascii_whitespace() {
                self.pending_space = true;
                continue;
            }
            if self.pending_space && !self.text.is_empty() {
                self.text.push(' ');
            }
            self.pending_space = false;
            self.text.push(c);
        }
    }
}

pub(super) fn finish_title(raw: &str) -> Option<String> {
    finish_text(raw, MAX_TITLE_CHARS)
}

/// [`finish_text`] of text already collapsed by [`TitleText`], reusing it when it holds no
/// character reference (the common case: most anchors are plain words).
pub(super) fn finish_collapsed(text: String, max_chars: usize) -> Option<String> {
    if text.contains('&') {
        return finish_text(&text, max_chars);
    }
    cut_to(text, max_chars)
}

/// Decoded, collapsed text cut to `max_chars` characters; `None` when blank.
fn finish_text(raw: &str, max_chars: usize) -> Option<String> {
    // Decoding can produce whitespace (`&#10;`), so collapse once more afterwards.
    let mut title = TitleText::default();
    title.push(&decode_entities(raw, false), usize::MAX);
    cut_to(title.text, max_chars)
}

/// Collapsed text cut to `max_chars` characters (no space left at the cut); `None` when
/// blank.
fn cut_to(mut text: String, max_chars: usize) -> Option<String> {
    if let Some((cut, _)) = text.char_indices().nth(max_chars) {
        text.truncate(cut);
        text.truncate(text.trim_end_matches(' ').len());
    }
    (!text.is_empty()).then_some(text)
}

/// HTML's definition of whitespace (tab, LF, FF, CR, space), not Unicode's.
#[inline]
pub(super) fn trim_ascii_whitespace(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::ex;

    #[test]
    fn title_is_decoded_and_collapsed() {
        let e = ex(
            "<title>\n  Tom &amp; Jerry&nbsp;&#8211;   the\t\tcartoons &notit; &bogus; </title>",
        );
        assert_eq!(
            e.title.as_deref(),
            Some("Tom & Jerry\u{a0}\u{2013} the cartoons \u{ac}it; &bogus;")
        );
    }

    #[test]
    fn long_title_is_cut_on_a_char_boundary() {
        let html = format!("<title>{}</title>", "é".repeat(5000));
        let title = ex(&html).title.unwrap();
        assert_eq!(title.chars().count(), MAX_TITLE_CHARS);
        assert!(title.chars().all(|c| c == 'é'));
    }

    proptest::proptest! {
        /// Word-at-a-time collapsing keeps exactly what char-at-a-time did, cap included,
        /// however the text is split into chunks.
        #[test]
        fn text_collapsing_matches_char_by_char(
            parts in proptest::collection::vec("[ a\\té\n]{0,12}", 0..6),
            max in 0usize..40,
        ) {
            let mut fast = TitleText::default();
            let mut slow = TitleText::default();
            for p in &parts {
                fast.push(p, max);
                slow.push_chars(p, max);
            }
            proptest::prop_assert_eq!(fast.text, slow.text);
        }

        #[test]
        fn plain_text_is_what_collapsing_leaves(text in "( ?[aé]{1,8}){0,60}[ \t&a]?") {
            if is_plain(&text) {
                let mut t = TitleText::default();
                t.push(&text, MAX_ANCHOR_COLLAPSED_BYTES);
                proptest::prop_assert_eq!(
                    finish_collapsed(t.text, MAX_ANCHOR_CHARS),
                    Some(text.clone())
                );
            }
        }
    }
}
