//! GitHub Actions workflow commands: one annotation per link, `::error` for broken links
//! and missing fragments, `::warning` for blocked and transient ones, `::notice` for
//! permanent redirects:
//!
//! ```text
//! ::error file=https://example.org/,line=12,col=5,title=broken::broken link to ...
//! ```
//!
//! `file` is the linking page's URL (the URL itself for one nothing links to): GitHub
//! shows the annotation on the run, and on a file only when `file` is a path in the
//! repository. Escaped as GitHub's toolkit does (`@actions/core`, `command.ts`): `%`, CR
//! and LF in the message; those and `:` and `,` in properties. GitHub shows a limited
//! number of annotations per step; the Markdown format lists every link.

use std::io::{self, Write};

use super::{level, located_at, message, BrokenLink, Level, Writer};

pub(super) struct Github<'a> {
    out: &'a mut dyn Write,
}

impl<'a> Github<'a> {
    pub(super) fn new(out: &'a mut dyn Write) -> Github<'a> {
        Github { out }
    }
}

impl Writer for Github<'_> {
    fn link(&mut self, l: &BrokenLink) -> io::Result<()> {
        let command = match level(l.class) {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "notice",
        };
        let mut properties = vec![format!("file={}", property(located_at(l)))];
        if let Some(line) = l.line {
            properties.push(format!("line={line}"));
        }
        if let Some(col) = l.column {
            properties.push(format!("col={col}"));
        }
        properties.push(format!("title={}", property(l.class.as_str())));
        writeln!(
            self.out,
            "::{command} {}::{}",
            properties.join(","),
            data(&message(l))
        )
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        self.out.flush()
    }
}

/// A command's message: `%`, CR and LF escaped (`escapeData`).
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value: also `:` and `,` (`escapeProperty`).
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{render, rows};
    use super::*;

    #[test]
    fn one_command_per_link_escaped() {
        let text = render(|b| Box::new(Github::new(b)), &rows());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0],
            "::error file=http%3A//h/,line=3,col=7,title=broken::broken link to http://h/missing (HTTP 404), link text \"gone\""
        );
        assert!(lines[1].starts_with("::error file=http%3A//h/,line=3,col=7,title=fragment::"));
        assert!(
            lines[2].starts_with("::warning file=http%3A//h/x%2Cy%3Az%25%0D%0A,title=blocked::link to http://h/a|b`c,d:e%25f not checked"),
            "{}",
            lines[2]
        );
        assert!(lines[3].starts_with("::error file=http%3A//dead.invalid/,title=broken::"));
    }
}
