//! Where in the page a link's element starts: its byte offset, as lol_html reports it,
//! turned into a line and column while the page streams.
//!
//! The newlines of each chunk are noted before lol_html reads it; an element is reported
//! once its tag has been read, possibly chunks later, so the offsets of the newlines since
//! the last resolved link are kept, and those before it dropped (links come in document
//! order). A page that never links keeps at most [`MAX_KEPT`] of them.

use std::collections::VecDeque;

/// Where an element starts: line and byte column, both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// Line, from 1.
    pub line: u32,
    /// Byte offset in the line, from 1.
    pub col: u32,
}

/// Newline offsets kept at most. Past it all but the newest half of that are forgotten:
/// only a tag that spans that many lines (a hostile page) can then be placed on a later
/// line than it is.
const MAX_KEPT: usize = 1 << 16;

/// The page's lines so far.
#[derive(Debug, Default)]
pub(super) struct Lines {
    /// Offsets of the newlines not yet passed by a resolved offset.
    newlines: VecDeque<usize>,
    /// Newlines passed.
    passed: u32,
    /// Where the line after the last passed newline starts.
    line_start: usize,
}

impl Lines {
    /// Note the newlines of `chunk`, which starts at `fed` in the page.
    pub(super) fn feed(&mut self, fed: usize, chunk: &[u8]) {
        self.newlines
            .extend(memchr::memchr_iter(b'\n', chunk).map(|i| fed + i));
        if self.newlines.len() > MAX_KEPT {
            let forget = self.newlines.len() - MAX_KEPT / 2;
            self.pass(forget);
        }
    }

    /// The position of byte `offset`. Offsets are asked in increasing order; an earlier
    /// one than asked before gets column 1 of the current line.
    pub(super) fn position(&mut self, offset: usize) -> Position {
        let before = self.newlines.partition_point(|&nl| nl < offset);
        self.pass(before);
        Position {
            line: self.passed.saturating_add(1),
            col: u32::try_from(offset.saturating_sub(self.line_start) + 1).unwrap_or(u32::MAX),
        }
    }

    fn pass(&mut self, n: usize) {
        if let Some(&last) = n.checked_sub(1).and_then(|i| self.newlines.get(i)) {
            self.line_start = last + 1;
            self.passed = self.passed.saturating_add(n as u32);
            self.newlines.drain(..n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_across_chunks() {
        let page = b"ab\ncd<a>\n\nxy<a>";
        for cut in 0..=page.len() {
            let mut lines = Lines::default();
            lines.feed(0, &page[..cut]);
            lines.feed(cut, &page[cut..]);
            assert_eq!(lines.position(0), Position { line: 1, col: 1 });
            assert_eq!(lines.position(5), Position { line: 2, col: 3 });
            assert_eq!(lines.position(12), Position { line: 4, col: 3 });
            // Earlier than asked before: still on the line reached.
            assert_eq!(lines.position(11).line, 4);
        }
    }

    #[test]
    fn a_page_of_newlines_keeps_a_bounded_index() {
        let mut lines = Lines::default();
        let chunk = vec![b'\n'; 1 << 20];
        for i in 0..4 {
            lines.feed(i << 20, &chunk);
        }
        assert!(lines.newlines.len() <= MAX_KEPT);
        assert_eq!(lines.position(4 << 20).line, (4 << 20) + 1);
    }
}
