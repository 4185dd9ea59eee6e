//! The text of an `<a>`, read from the page's bytes.
//!
//! lol_html can hand over the text inside each element, but its text machinery (a text
//! token, a decoder and two handler calls per text node, end-tag bookkeeping per element)
//! cost more than the rest of a link did: 13 % of the instructions per page of a crawl of
//! 50-link pages (BENCHMARKS.md). The start tag's position is all it takes instead: the
//! text follows it in the bytes just fed, and this small scanner reads on from there until
//! the anchor ends, across chunk boundaries.
//!
//! The anchor ends, as for lol_html's handlers, at `</a>`, at the next `<a>`, or at the end
//! tag of an element it sits in (`<li><a href=x>text</li>`). Text in child elements counts
//! (`<a><b>bold</b> text</a>`); markup, comments and the content of `<script>`, `<style>`
//! and the like do not. Character references are left for the caller to decode.

/// Raw bytes gathered per anchor at most: far more than the 256 characters kept, so that
/// padding and markup-free whitespace don't eat into them.
pub(super) const MAX_RAW: usize = 8 << 10;

/// Elements whose content is not markup: their text is skipped up to their end tag.
pub(super) const RAW_TEXT: [&[u8]; 8] = [
    b"script",
    b"style",
    b"textarea",
    b"title",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
];

/// Elements that never have content, so have no end tag to wait for.
const VOID: [&[u8]; 14] = [
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta", b"param",
    b"source", b"track", b"wbr",
];

/// Longest tag name tracked; longer names never match one we care about.
const NAME_MAX: usize = 10;

/// Open elements inside the anchor tracked; deeper nesting is not followed (its end tags
/// are then ignored rather than taken for the anchor's parent's).
const DEPTH_MAX: usize = 16;

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Name {
    bytes: [u8; NAME_MAX],
    /// `NAME_MAX + 1` once the name is too long to keep.
    len: usize,
}

impl Name {
    fn push(&mut self, b: u8) {
        if self.len < NAME_MAX {
            self.bytes[self.len] = b.to_ascii_lowercase();
            self.len += 1;
        } else {
            self.len = NAME_MAX + 1;
        }
    }

    fn is(&self, name: &[u8]) -> bool {
        self.len <= NAME_MAX && &self.bytes[..self.len] == name
    }

    fn is_one_of(&self, names: &[&[u8]]) -> bool {
        names.iter().any(|n| self.is(n))
    }
}

#[derive(Clone, Copy)]
enum State {
    Text,
    /// Just after `<`.
    Open,
    /// Just after `</`.
    OpenEnd,
    TagName {
        end: bool,
        name: Name,
    },
    /// Past a tag's name, up to its `>`.
    Attributes {
        end: bool,
        name: Name,
        quote: Option<u8>,
        slash: bool,
    },
    /// After `<!`, counting the dashes of a comment's start.
    Bang {
        dashes: u8,
    },
    Comment {
        dashes: u8,
    },
    /// `<?...>` or `<!...>` that is not a comment: up to `>`.
    Bogus,
    /// Inside a raw-text element: `matched` bytes of `</name` seen so far.
    RawText {
        name: Name,
        matched: usize,
    },
}

/// What [`Scanner::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fed {
    /// The anchor ended within the bytes.
    Ended,
    /// All the bytes were read and the anchor goes on.
    More,
}

/// Reads one anchor's text, fed the bytes after its start tag in as many pieces as they
/// come.
pub(super) struct Scanner {
    state: State,
    open: [Name; DEPTH_MAX],
    depth: usize,
    /// More elements opened than `open` holds.
    overflow: bool,
}

impl Scanner {
    pub(super) fn new() -> Scanner {
        Scanner {
            state: State::Text,
            open: [Name::default(); DEPTH_MAX],
            depth: 0,
            overflow: false,
        }
    }

    /// Reads `bytes`, appending the text in them to `text` while it is shorter than
    /// [`MAX_RAW`].
    pub(super) fn feed(&mut self, bytes: &[u8], text: &mut Vec<u8>) -> Fed {
        let mut i = 0;
        while i < bytes.len() {
            if let State::Text = self.state {
                // Most of an anchor is text: copy it up to the next tag at once.
                let run = &bytes[i..];
                let len = memchr::memchr(b'<', run).unwrap_or(run.len());
                keep(text, &run[..len]);
                i += len;
                if i < bytes.len() {
                    self.state = State::Open;
                    i += 1;
                }
                continue;
            }
            // Inside a tag only quotes, `>`, `/` and whitespace matter, and in a bogus
            // comment only `>`: skip the rest at once (byte by byte, attributes of the
            // spans inside anchors were most of this scanner's cost).
            if let Some(n) = self.skippable(&bytes[i..]) {
                i += n;
                continue;
            }
            let b = bytes[i];
            match self.step(b, text) {
                Step::Next => i += 1,
                Step::Again => {}
                Step::Ended => return Fed::Ended,
            }
        }
        Fed::More
    }

    /// How many bytes at the start of `run` change nothing but what `step` would make of
    /// them in a quick run; `None` when the first one needs `step`.
    fn skippable(&mut self, run: &[u8]) -> Option<usize> {
        let n = match &mut self.state {
            State::Attributes { quote, slash, .. } => {
                let n = match *quote {
                    Some(q) => memchr::memchr(q, run).unwrap_or(run.len()),
                    None => run
                        .iter()
                        .position(|&c| {
                            matches!(c, b'"' | b'\'' | b'>' | b'/') || c.is_ascii_whitespace()
                        })
                        .unwrap_or(run.len()),
                };
                if n > 0 {
                    *slash = false;
                }
                n
            }
            State::Bogus => memchr::memchr(b'>', run).unwrap_or(run.len()),
            _ => 0,
        };
        (n > 0).then_some(n)
    }

    fn step(&mut self, b: u8, text: &mut Vec<u8>) -> Step {
        match self.state {
            State::Text => unreachable!("text is read in runs"),
            State::Open => match b {
                b'/' => self.state = State::OpenEnd,
                b'!' => self.state = State::Bang { dashes: 0 },
                b'?' => self.state = State::Bogus,
                _ if b.is_ascii_alphabetic() => {
                    let mut name = Name::default();
                    name.push(b);
                    self.state = State::TagName { end: false, name };
                }
                _ => {
                    // Not a tag: the `<` is text.
                    keep(text, b"<");
                    self.state = State::Text;
                    return Step::Again;
                }
            },
            State::OpenEnd => match b {
                _ if b.is_ascii_alphabetic() => {
                    let mut name = Name::default();
                    name.push(b);
                    self.state = State::TagName { end: true, name };
                }
                b'>' => self.state = State::Text,
                _ => self.state = State::Bogus,
            },
            State::TagName { end, mut name } => {
                if b.is_ascii_whitespace() || b == b'/' || b == b'>' {
                    if name.is(b"a") {
                        return Step::Ended;
                    }
                    if end && !self.close(&name) {
                        return Step::Ended;
                    }
                    self.state = State::Attributes {
                        end,
                        name,
                        quote: None,
                        slash: false,
                    };
                    return Step::Again;
                }
                name.push(b);
                self.state = State::TagName { end, name };
            }
            State::Attributes {
                end,
                name,
                quote,
                slash,
            } => {
                let (quote, slash) = match (quote, b) {
                    (Some(q), _) if b == q => (None, false),
                    (Some(q), _) => (Some(q), false),
                    (None, b'"' | b'\'') => (Some(b), false),
                    (None, b'>') => {
                        self.state = State::Text;
                        if !end {
                            self.opened(name, slash);
                        }
                        return Step::Next;
                    }
                    (None, b'/') => (None, true),
                    (None, _) if b.is_ascii_whitespace() => (None, slash),
                    (None, _) => (None, false),
                };
                self.state = State::Attributes {
                    end,
                    name,
                    quote,
                    slash,
                };
            }
            State::Bang { dashes } => match b {
                // Counted as two dashes already, so that `<!-->` and `<!--->` end where
                // they start, as the HTML tokenizer has it.
                b'-' if dashes == 1 => self.state = State::Comment { dashes: 2 },
                b'-' => self.state = State::Bang { dashes: 1 },
                b'>' => self.state = State::Text,
                _ => self.state = State::Bogus,
            },
            State::Comment { dashes } => {
                self.state = match b {
                    b'-' => State::Comment {
                        dashes: (dashes + 1).min(2),
                    },
                    b'>' if dashes == 2 => State::Text,
                    _ => State::Comment { dashes: 0 },
                }
            }
            State::Bogus => {
                if b == b'>' {
                    self.state = State::Text;
                }
            }
            State::RawText { name, matched } => {
                let want = |k: usize| match k {
                    0 => b'<',
                    1 => b'/',
                    k => name.bytes[k - 2],
                };
                if matched == name.len + 2 {
                    if b.is_ascii_whitespace() || b == b'/' || b == b'>' {
                        self.state = State::Attributes {
                            end: true,
                            name,
                            quote: None,
                            slash: false,
                        };
                        return Step::Again;
                    }
                    self.state = State::RawText { name, matched: 0 };
                    return Step::Again;
                }
                let matched = if b.to_ascii_lowercase() == want(matched) {
                    matched + 1
                } else if b == b'<' {
                    1
                } else {
                    0
                };
                self.state = State::RawText { name, matched };
            }
        }
        Step::Next
    }

    /// A start tag ended: its element is open inside the anchor, unless it has no content.
    fn opened(&mut self, name: Name, self_closing: bool) {
        if name.is_one_of(&RAW_TEXT) {
            self.state = State::RawText { name, matched: 0 };
            return;
        }
        if self_closing || name.len > NAME_MAX || name.is_one_of(&VOID) {
            return;
        }
        if self.depth < DEPTH_MAX {
            self.open[self.depth] = name;
            self.depth += 1;
        } else {
            self.overflow = true;
        }
    }

    /// An end tag: closes the innermost open element of that name inside the anchor.
    /// False when there is none, i.e. it closes an element the anchor sits in.
    fn close(&mut self, name: &Name) -> bool {
        match self.open[..self.depth].iter().rposition(|n| n == name) {
            Some(at) => {
                self.depth = at;
                true
            }
            // Past DEPTH_MAX the end tag may well be for an element not tracked.
            None => self.overflow,
        }
    }
}

enum Step {
    Next,
    /// Look at the same byte again in the new state.
    Again,
    Ended,
}

fn keep(text: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_RAW.saturating_sub(text.len());
    text.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text and whether the anchor ended, the bytes fed in one piece and then in
    /// pieces split at every position.
    fn scan(html: &str) -> (String, bool) {
        let whole = scan_pieces(&[html.as_bytes()]);
        for cut in 0..=html.len() {
            let (a, b) = html.as_bytes().split_at(cut);
            assert_eq!(scan_pieces(&[a, b]), whole, "split at {cut}");
        }
        whole
    }

    fn scan_pieces(pieces: &[&[u8]]) -> (String, bool) {
        let mut s = Scanner::new();
        let mut text = Vec::new();
        for p in pieces {
            if s.feed(p, &mut text) == Fed::Ended {
                return (String::from_utf8(text).unwrap(), true);
            }
        }
        (String::from_utf8(text).unwrap(), false)
    }

    fn ended(text: &str) -> (String, bool) {
        (text.to_owned(), true)
    }

    #[test]
    fn ends_at_its_end_tag_or_the_next_anchor() {
        assert_eq!(scan("Docs</a> more"), ended("Docs"));
        assert_eq!(scan("Docs</A > more"), ended("Docs"));
        assert_eq!(scan("one<a href=/2>two"), ended("one"));
        assert_eq!(scan("open to the end"), ("open to the end".into(), false));
    }

    #[test]
    fn child_elements_text_counts_markup_does_not() {
        assert_eq!(
            scan("<b>bold</b> and <img src='/x.png' alt=\"a>b\"/> <span class=x>more</span></a>"),
            ended("bold and  more")
        );
        assert_eq!(scan("a <!-- </a> --> b</a>"), ended("a  b"));
        assert_eq!(scan("a<!-->b<!--->c<!---->d</a>"), ended("abcd"));
        assert_eq!(scan("a <!doctype x> b <?pi?> c</a>"), ended("a  b  c"));
        assert_eq!(scan("x<script>if (a</b) '</a>'</script>y</a>"), ended("xy"));
        assert_eq!(scan("x<STYLE>a{}</style >y</a>"), ended("xy"));
    }

    #[test]
    fn an_end_tag_of_an_enclosing_element_ends_it() {
        assert_eq!(scan("item</li><li>next"), ended("item"));
        assert_eq!(scan("<p>para</p>still</a>"), ended("parastill"));
        assert_eq!(scan("<div><i>deep</div>on"), ("deepon".into(), false));
        assert_eq!(scan("<div><i>deep</i></div></td>"), ended("deep"));
    }

    #[test]
    fn attribute_values_and_bogus_comments_hide_their_markup() {
        // Runs of attribute bytes are skipped at once: quotes hide `>`, `/` and `</a>`;
        // a `/` then a name is no self-closing slash; a bogus comment ends at its `>`.
        assert_eq!(
            scan("<span title='x > </a> y' data-a=\"/>\">in</span> <br/ class=z>out</a>"),
            ended("in out")
        );
        assert_eq!(scan("<i a=b/c>x</i>y</a>"), ended("xy"));
        // As the HTML tokenizer has it, the first `>` ends a bogus comment, even one of `</a>`.
        assert_eq!(scan("a<?bogus ?>b<!x y>c</a>"), ended("abc"));
        assert_eq!(scan("a<?bogus </a> ?>b</a>"), ended("a ?>b"));
    }

    #[test]
    fn a_lone_less_than_is_text() {
        assert_eq!(scan("1 < 2 <3</a>"), ended("1 < 2 <3"));
        assert_eq!(scan("x</>y</a>"), ended("xy"));
    }

    #[test]
    fn text_is_capped() {
        let long = "x".repeat(MAX_RAW + 100);
        let (text, done) = scan_pieces(&[long.as_bytes(), b"</a>"]);
        assert_eq!((text.len(), done), (MAX_RAW, true));
    }
}
