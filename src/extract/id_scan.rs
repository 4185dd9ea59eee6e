//! The `id` attributes of a page, read from its bytes by a small tokenizer of its own.
//!
//! Asking lol_html for them (an `[id]` selector) makes it parse the attributes of every
//! element of every page and call a handler per id: on the Rust std docs, whose pages
//! hold thousands of elements and hundreds of ids, that was 36 % more CPU per page
//! (BENCHMARKS.md, session 8). This scanner skips text, comments and raw-text elements
//! with `memchr` and looks only at attribute names and values, across chunk boundaries.
//!
//! It follows the HTML tokenizer where it matters for ids (quoted and unquoted values,
//! comments, `<script>`-like elements whose content is not markup) and is simpler
//! elsewhere: a stray `<` in text may start a "tag" a browser would not see, which can
//! only add an id, never lose one past the next `>`.

use memchr::memchr;

use super::anchor::RAW_TEXT;

/// Longest tag name compared (the raw-text elements' names are shorter).
const NAME_MAX: usize = 8;
/// Longest id kept; a longer value is not a fragment anyone links to.
const ID_MAX: usize = 1024;

/// Whether `b` ends an attribute's name.
#[inline]
fn ends_name(b: u8) -> bool {
    matches!(b, b'=' | b'>' | b'/') || b.is_ascii_whitespace()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    /// After `<`: the tag's name so far (lower-cased) in `name`.
    TagName,
    /// Between attributes.
    Attrs,
    /// In an attribute name: how much of `id` it matches (0: not `id`).
    AttrName {
        len: u8,
        id: bool,
    },
    /// After a name and whitespace, before `=` or the next name.
    AfterName {
        id: bool,
    },
    /// After `=`.
    BeforeValue {
        id: bool,
    },
    Quoted {
        quote: u8,
        id: bool,
    },
    Unquoted {
        id: bool,
    },
    /// In `<!-- ... -->`, with the `-` just read (at most 2).
    Comment {
        dashes: u8,
    },
    /// In the content of a raw-text element, `matched` bytes into `</NAME`.
    Raw {
        matched: u8,
    },
}

/// Reads a page's ids chunk by chunk; `push` receives each raw value (entities not
/// decoded, in the page's encoding).
#[derive(Debug)]
pub(super) struct IdScan {
    state: State,
    name: [u8; NAME_MAX],
    name_len: usize,
    /// The raw-text element whose end tag `Raw` waits for, and the tag being read is one.
    raw: Option<&'static [u8]>,
    value: Vec<u8>,
}

impl Default for IdScan {
    fn default() -> IdScan {
        IdScan {
            state: State::Text,
            name: [0; NAME_MAX],
            name_len: 0,
            raw: None,
            value: Vec::new(),
        }
    }
}

impl IdScan {
    /// Read the next chunk of the page.
    pub(super) fn feed(&mut self, chunk: &[u8], push: &mut impl FnMut(&[u8])) {
        let mut i = 0;
        while i < chunk.len() {
            i = self.step(chunk, i, push);
        }
    }

    /// Consume from `chunk[i]` on (at least one byte); where to go on.
    fn step(&mut self, chunk: &[u8], i: usize, push: &mut impl FnMut(&[u8])) -> usize {
        let b = chunk[i];
        match self.state {
            State::Text => match memchr(b'<', &chunk[i..]) {
                Some(at) => {
                    self.state = State::TagName;
                    self.name_len = 0;
                    return i + at + 1;
                }
                None => return chunk.len(),
            },
            State::TagName => return self.tag_name_run(chunk, i),
            State::Attrs => {
                // Most of a page's attributes end in the chunk they start in: each is read
                // whole, and only one cut by the chunk's end goes byte by byte.
                if let Some(next) = self.attr_whole(chunk, i, push) {
                    return next;
                }
                self.state = self.attrs(b);
            }
            State::AttrName { len, id } => {
                // Most names are not `id`: skip to where the name ends in one tight loop
                // (the byte-at-a-time state machine was most of this scanner's cost).
                if !id {
                    let n = chunk[i..].iter().position(|&c| ends_name(c));
                    match n {
                        Some(0) => {}
                        Some(n) => return i + n,
                        None => return chunk.len(),
                    }
                }
                self.state = match b {
                    b'=' => State::BeforeValue { id },
                    b'>' => self.end_tag(),
                    b'/' => State::Attrs,
                    _ if b.is_ascii_whitespace() => State::AfterName { id },
                    _ => {
                        let id = match len {
                            0 => b.eq_ignore_ascii_case(&b'i'),
                            1 => id && b.eq_ignore_ascii_case(&b'd'),
                            _ => false,
                        };
                        State::AttrName {
                            len: len.saturating_add(1),
                            id,
                        }
                    }
                };
                // `id` is a whole name: "i", "idx" and "lid" are not.
                if let State::BeforeValue { id } | State::AfterName { id } = &mut self.state {
                    *id &= len == 2;
                }
            }
            State::AfterName { id } => {
                self.state = match b {
                    b'=' => State::BeforeValue { id },
                    b'>' => self.end_tag(),
                    _ if b.is_ascii_whitespace() => State::AfterName { id },
                    _ => return self.attr_start(i),
                }
            }
            State::BeforeValue { id } => {
                self.value.clear();
                self.state = match b {
                    b'"' | b'\'' => State::Quoted { quote: b, id },
                    b'>' => self.end_tag(),
                    _ if b.is_ascii_whitespace() => State::BeforeValue { id },
                    _ => return self.unquoted(chunk, i, id, push),
                }
            }
            State::Quoted { quote, id } => {
                let rest = &chunk[i..];
                let end = memchr(quote, rest);
                if id {
                    self.keep(&rest[..end.unwrap_or(rest.len())]);
                }
                let Some(end) = end else {
                    return chunk.len();
                };
                if id {
                    self.finish(push);
                }
                self.state = State::Attrs;
                return i + end + 1;
            }
            State::Unquoted { id } => return self.unquoted(chunk, i, id, push),
            State::Comment { dashes } => match b {
                b'>' if dashes >= 2 => self.state = State::Text,
                b'-' => {
                    self.state = State::Comment {
                        dashes: (dashes + 1).min(2),
                    }
                }
                _ => {
                    // Nothing ends a comment but `-->`: on to the next `-`.
                    self.state = State::Comment { dashes: 0 };
                    return memchr(b'-', &chunk[i..]).map_or(chunk.len(), |at| i + at);
                }
            },
            State::Raw { matched } => return self.raw_text(chunk, i, matched),
        }
        i + 1
    }

    /// A tag's name from `chunk[i]` on: its first byte and its end by [`Self::tag_name`],
    /// the bytes between in a tight loop; where to go on.
    fn tag_name_run(&mut self, chunk: &[u8], mut i: usize) -> usize {
        while i < chunk.len() {
            let b = chunk[i];
            i += 1;
            if self.name_len == 0 || b == b'>' || b == b'/' || b.is_ascii_whitespace() {
                self.state = self.tag_name(b);
                if self.state != State::TagName {
                    return i;
                }
                continue;
            }
            if self.name_len < NAME_MAX {
                self.name[self.name_len] = b.to_ascii_lowercase();
            }
            self.name_len += 1;
            if self.name_len == 3 && &self.name[..3] == b"!--" {
                self.state = State::Comment { dashes: 0 };
                return i;
            }
        }
        i
    }

    fn tag_name(&mut self, b: u8) -> State {
        if self.name_len == 0 && !(b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?')) {
            // `a < b`: a `<` that starts no tag is text.
            return if b == b'<' {
                State::TagName
            } else {
                State::Text
            };
        }
        if b == b'>' || (b == b'/' && self.name_len > 0) || b.is_ascii_whitespace() {
            let name = &self.name[..self.name_len.min(NAME_MAX)];
            self.raw = RAW_TEXT.iter().copied().find(|raw| *raw == name);
            return if b == b'>' {
                self.end_tag()
            } else {
                State::Attrs
            };
        }
        if self.name_len < NAME_MAX {
            self.name[self.name_len] = b.to_ascii_lowercase();
        }
        self.name_len += 1;
        if self.name_len == 3 && &self.name[..3] == b"!--" {
            return State::Comment { dashes: 0 };
        }
        State::TagName
    }

    fn attrs(&mut self, b: u8) -> State {
        match b {
            b'>' => self.end_tag(),
            _ if b.is_ascii_whitespace() || b == b'/' => State::Attrs,
            _ => State::AttrName {
                len: 1,
                id: b.eq_ignore_ascii_case(&b'i'),
            },
        }
    }

    /// Between attributes at `chunk[i]`: the spaces up to the next attribute, or the next
    /// attribute whole (name, `=`, value) when it ends within `chunk`, as the byte-at-a-time
    /// states would read it. `None`, and nothing changed, when it does not.
    fn attr_whole(
        &mut self,
        chunk: &[u8],
        i: usize,
        push: &mut impl FnMut(&[u8]),
    ) -> Option<usize> {
        let between = |c: u8| c.is_ascii_whitespace() || c == b'/';
        let skip = |from: usize| chunk[from..].iter().position(|&c| !c.is_ascii_whitespace());
        let rest = &chunk[i..];
        if between(rest[0]) {
            let n = rest.iter().position(|&c| !between(c)).unwrap_or(rest.len());
            return Some(i + n);
        }
        if rest[0] == b'>' {
            return None;
        }
        let name = 1 + rest[1..].iter().position(|&c| ends_name(c))?;
        let id = name == 2 && rest[..2].eq_ignore_ascii_case(b"id");
        let at = i + name;
        let eq = at + skip(at)?;
        if chunk[eq] != b'=' {
            // No value: `>`, `/` or the next name, read as between attributes.
            self.state = State::Attrs;
            return Some(eq);
        }
        let value = eq + 1 + skip(eq + 1)?;
        self.value.clear();
        match chunk[value] {
            quote @ (b'"' | b'\'') => {
                let end = value + 1 + memchr(quote, &chunk[value + 1..])?;
                if id {
                    self.keep(&chunk[value + 1..end]);
                    self.finish(push);
                }
                self.state = State::Attrs;
                Some(end + 1)
            }
            b'>' => {
                self.state = self.end_tag();
                Some(value + 1)
            }
            _ => Some(self.unquoted(chunk, value, id, push)),
        }
    }

    /// A new attribute name starts at `chunk[i]`.
    fn attr_start(&mut self, i: usize) -> usize {
        self.state = State::Attrs;
        i
    }

    /// The tag ended: its content is markup, or raw text up to its end tag.
    fn end_tag(&mut self) -> State {
        match self.raw {
            Some(_) => State::Raw { matched: 0 },
            None => State::Text,
        }
    }

    fn unquoted(
        &mut self,
        chunk: &[u8],
        i: usize,
        id: bool,
        push: &mut impl FnMut(&[u8]),
    ) -> usize {
        let rest = &chunk[i..];
        let end = rest
            .iter()
            .position(|&c| c == b'>' || c.is_ascii_whitespace());
        if id {
            self.keep(&rest[..end.unwrap_or(rest.len())]);
        }
        let Some(end) = end else {
            self.state = State::Unquoted { id };
            return chunk.len();
        };
        if id {
            self.finish(push);
        }
        self.state = State::Attrs;
        // The `>` or space is read as the tag's.
        i + end
    }

    /// In a raw-text element: look for `</NAME` (any case), then for the tag's end.
    fn raw_text(&mut self, chunk: &[u8], i: usize, matched: u8) -> usize {
        let end = self.raw.unwrap_or(b"script");
        if matched == 0 {
            return match memchr(b'<', &chunk[i..]) {
                Some(at) => {
                    self.state = State::Raw { matched: 1 };
                    i + at + 1
                }
                None => chunk.len(),
            };
        }
        // `matched` is 1 after `<`, 2 after `</`, 2 + k after k bytes of the name.
        let want = match usize::from(matched) {
            1 => b'/',
            m => end[m - 2],
        };
        if chunk[i].to_ascii_lowercase() != want {
            self.state = State::Raw { matched: 0 };
            return i;
        }
        if usize::from(matched) + 1 == 2 + end.len() {
            // `</script` read: the end tag's `>` follows.
            self.raw = None;
            self.state = State::Attrs;
        } else {
            self.state = State::Raw {
                matched: matched + 1,
            };
        }
        i + 1
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = (ID_MAX + 1).saturating_sub(self.value.len());
        self.value
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn finish(&mut self, push: &mut impl FnMut(&[u8])) {
        if !self.value.is_empty() && self.value.len() <= ID_MAX {
            push(&self.value);
        }
        self.value.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lol_html::{element, HtmlRewriter, Settings};
    use std::cell::RefCell;

    fn scanned(chunks: &[&[u8]]) -> Vec<String> {
        let mut scan = IdScan::default();
        let mut out = Vec::new();
        for chunk in chunks {
            scan.feed(chunk, &mut |raw| {
                out.push(String::from_utf8_lossy(raw).into_owned())
            });
        }
        out
    }

    /// What lol_html's own tokenizer finds, as the oracle, empty ids aside (no fragment
    /// names one; the scanner drops them).
    fn oracle(html: &str) -> Vec<String> {
        let found = RefCell::new(Vec::new());
        let mut rewriter = HtmlRewriter::new(
            Settings {
                element_content_handlers: vec![element!("[id]", |el| {
                    let id = el.get_attribute("id").unwrap();
                    if !id.is_empty() {
                        found.borrow_mut().push(id);
                    }
                    Ok(())
                })],
                ..Settings::new()
            },
            |_: &[u8]| {},
        );
        rewriter.write(html.as_bytes()).unwrap();
        rewriter.end().unwrap();
        found.into_inner()
    }

    const DOCS: [&str; 7] = [
        r#"<h1 id="top">x</h1><p class=a ID='caps' data-id="no">t</p><div id=bare>x</div>"#,
        "<section\n  class=\"c\"\n  id=\"multi-line\"\n>y</section><br/><img id=img/>",
        r#"<!-- <p id="in-comment"> --><p id="after">a < b and c id=d</p><!---->"#,
        r#"<script>var s = "<div id='in-script'>"; if (a<b) {}</script><p id="after-script">"#,
        r#"<style>p[id="x"] { }</style><textarea><b id="no"></b></textarea><i id="i-1">"#,
        r#"<a href="/x?y=1>2" id="gt-in-value">l</a><p lid="no" idx="no" id = "spaced">"#,
        r#"<p id=>x</p><p class id="b"/><p id><i =id="no" id='yes'><b id="c"//>z<u  id=u>"#,
    ];

    #[test]
    fn finds_what_lol_html_finds() {
        for doc in DOCS {
            let want = oracle(doc);
            assert_eq!(scanned(&[doc.as_bytes()]), want, "{doc}");
            for at in 0..=doc.len() {
                let (a, b) = doc.as_bytes().split_at(at);
                assert_eq!(scanned(&[a, b]), want, "{doc} split at {at}");
            }
            let bytes: Vec<&[u8]> = doc.as_bytes().chunks(1).collect();
            assert_eq!(scanned(&bytes), want, "{doc} byte by byte");
        }
    }

    #[test]
    fn overlong_values_are_dropped() {
        let long = format!("<p id=\"{}\"><p id=ok>", "x".repeat(ID_MAX + 1));
        assert_eq!(scanned(&[long.as_bytes()]), ["ok"]);
    }
}
