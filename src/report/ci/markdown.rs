//! Markdown for a CI job summary (GitHub's `$GITHUB_STEP_SUMMARY`, GitLab's and others'
//! Markdown reports): a heading, one line counting the links per class asked for, then a
//! table of the links. Cells are text: `|` and `` ` `` are backslash-escaped, and so are
//! the other characters that would start emphasis, links or code (`\`, `*`, `_`, `[`, `]`);
//! `<`, `>` and `&` become entities (no HTML gets through), line breaks become spaces.
//! The counts come first, so the table is spooled.

use std::io::{self, Write};

use super::spool::Spool;
use super::{answer, BrokenLink, Writer};
use crate::check::{ClassCounts, LinkClasses};

const HEADER: &str = "| Target | Class | Status | Source | Line | Column | Anchor |\n\
                      |---|---|---|---|---|---|---|\n";

pub(super) struct Markdown<'a> {
    out: &'a mut dyn Write,
    body: Spool,
    counts: ClassCounts,
    classes: LinkClasses,
}

impl<'a> Markdown<'a> {
    /// A summary of links of `classes`, written to `out` when it ends.
    pub(super) fn new(out: &'a mut dyn Write, classes: LinkClasses) -> Markdown<'a> {
        Markdown {
            out,
            body: Spool::default(),
            counts: ClassCounts::default(),
            classes,
        }
    }
}

impl Writer for Markdown<'_> {
    fn link(&mut self, l: &BrokenLink) -> io::Result<()> {
        self.counts.add(l.class);
        let number = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_default();
        let status = match (l.status, &l.error) {
            (_, Some(_)) | (None, _) => answer(l),
            (Some(s), None) => s.to_string(),
        };
        let cells = [
            cell(&l.target),
            l.class.to_string(),
            cell(&status),
            cell(l.source.as_deref().unwrap_or("")),
            number(l.line),
            number(l.column),
            cell(l.anchor.as_deref().unwrap_or("")),
        ];
        writeln!(self.body, "| {} |", cells.join(" | "))
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        let Markdown {
            out,
            body,
            counts,
            classes,
        } = *self;
        let total = counts.total();
        writeln!(out, "### trawl link check\n")?;
        let links = if total == 1 { "link" } else { "links" };
        writeln!(out, "**{total} {links}**: {}\n", counts.describe(classes))?;
        if total == 0 {
            writeln!(out, "No links of the classes {classes}.")?;
        } else {
            out.write_all(HEADER.as_bytes())?;
            body.copy_to(out)?;
        }
        out.flush()
    }
}

/// `s` as the text of one table cell (see the module doc).
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '`' | '\\' | '*' | '_' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' | '\n' | '\t' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{render, rows};
    use super::*;

    #[test]
    fn counts_first_then_one_row_per_link() {
        let md = render(
            |b| Box::new(Markdown::new(b, LinkClasses::REPORTED)),
            &rows(),
        );
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "### trawl link check");
        assert_eq!(
            lines[2],
            "**4 links**: broken 2, fragment 1, blocked 1, transient 0"
        );
        assert!(lines[4].starts_with("| Target | Class |"));
        assert_eq!(
            lines[6],
            "| http://h/missing | broken | 404 | http://h/ | 3 | 7 | gone |"
        );
        // Pipes and backticks escaped, no line broken, no HTML.
        assert!(
            lines[8].starts_with("| http://h/a\\|b\\`c,d:e%f | blocked | 403 |"),
            "{}",
            lines[8]
        );
        assert!(
            lines[8].contains("&lt;&amp;&gt; \"q\" \\| \\`t\\`"),
            "{}",
            lines[8]
        );
        assert_eq!(
            lines[9],
            "| http://dead.invalid/ | broken | dns: no such host |  |  |  |  |"
        );
        assert_eq!(lines.len(), 10);
    }

    #[test]
    fn an_empty_summary_says_so() {
        let md = render(|b| Box::new(Markdown::new(b, LinkClasses::ERRORS)), &[]);
        assert_eq!(
            md,
            "### trawl link check\n\n**0 links**: broken 0, fragment 0\n\nNo links of the classes broken,fragment.\n"
        );
    }
}
