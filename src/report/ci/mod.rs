//! `broken` in the formats CI systems read: SARIF 2.1.0 (code scanning), JUnit XML (test
//! reports), Markdown (a job summary) and GitHub Actions workflow commands (annotations).
//! One file per format; each takes the report's rows one at a time, as `broken` streams
//! them, so only JUnit and Markdown, whose counts come before their rows, hold their rows
//! back (in a [`spool::Spool`]: memory, then a temporary file).
//!
//! Every format says the same things the same way: the level of each class
//! ([`Level`]) and a message naming the target, what it answered and what to do
//! ([`message`]).

mod github;
mod junit;
mod markdown;
mod sarif;
mod spool;

use std::io::{self, Write};

use super::broken::{self, BrokenLink, Sink};
use super::{OutputFormat, ReportError};
use crate::check::{LinkClass, LinkClasses};
use crate::store::SqliteStore;

/// A CI format's writer: a link at a time, then the end.
trait Writer {
    /// Write one link.
    fn link(&mut self, link: &BrokenLink) -> io::Result<()>;
    /// End the document and flush it.
    fn finish(self: Box<Self>) -> io::Result<()>;
}

/// Write `broken`'s links of `classes` on `store` to `out` in the CI format `format`, at
/// most `limit`. Returns the links written.
pub(super) fn write(
    store: &SqliteStore,
    format: OutputFormat,
    classes: LinkClasses,
    limit: Option<u64>,
    out: &mut dyn Write,
) -> Result<u64, ReportError> {
    let writer: Box<dyn Writer + '_> = match format {
        OutputFormat::Sarif => Box::new(sarif::Sarif::start(out)?),
        OutputFormat::Junit => Box::new(junit::Junit::new(out, classes)),
        OutputFormat::Markdown => Box::new(markdown::Markdown::new(out, classes)),
        OutputFormat::Github => Box::new(github::Github::new(out)),
        tabular => unreachable!("{tabular} is not a CI format"),
    };
    let mut limited = Limited {
        writer,
        limit,
        rows: 0,
    };
    broken::run(store, classes, &mut limited)?;
    let rows = limited.rows;
    limited.writer.finish()?;
    Ok(rows)
}

/// A writer under `--limit`.
struct Limited<'a> {
    writer: Box<dyn Writer + 'a>,
    limit: Option<u64>,
    rows: u64,
}

impl Sink for Limited<'_> {
    fn wants_more(&self) -> bool {
        self.limit.is_none_or(|l| self.rows < l)
    }

    fn link(&mut self, link: BrokenLink) -> Result<(), ReportError> {
        self.rows += 1;
        self.writer.link(&link)?;
        Ok(())
    }
}

/// How loudly a class is reported: SARIF's `level`, GitHub's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The link is wrong: broken, or a fragment that names nothing.
    Error,
    /// The link may be fine, the check could not tell: blocked, transient.
    Warning,
    /// The link works and could be better: a permanent redirect.
    Note,
}

fn level(class: LinkClass) -> Level {
    match class {
        LinkClass::Broken | LinkClass::Fragment => Level::Error,
        LinkClass::Blocked | LinkClass::Transient => Level::Warning,
        LinkClass::Redirected => Level::Note,
    }
}

/// One line saying what is wrong with a link, what its target answered, and what to do.
fn message(l: &BrokenLink) -> String {
    let target = &l.target;
    let answer = answer(l);
    let mut m = match l.class {
        LinkClass::Broken => format!("broken link to {target} ({answer})"),
        LinkClass::Fragment => {
            let name = l.fragment.as_deref().map(decoded).unwrap_or_default();
            format!("link to {target}: the page ({answer}) has no element with id or name {name:?}")
        }
        LinkClass::Blocked => {
            format!("link to {target} not checked: the site refused the checker ({answer}); check it in a browser")
        }
        LinkClass::Transient => {
            format!("link to {target} not checked: no answer for now ({answer}); it may work later")
        }
        LinkClass::Redirected => match &l.redirect {
            Some(to) => {
                format!("link to {target} is permanently redirected ({answer}): link to {to}")
            }
            None => format!(
                "link to {target} is permanently redirected ({answer}): link to where it leads"
            ),
        },
    };
    if let Some(anchor) = l.anchor.as_deref().filter(|a| !a.is_empty()) {
        m.push_str(&format!(", link text {anchor:?}"));
    }
    m
}

/// What the target answered: its status, or what failed.
fn answer(l: &BrokenLink) -> String {
    match (&l.error, &l.detail, l.status) {
        (Some(kind), Some(detail), _) => format!("{kind}: {detail}"),
        (Some(kind), None, _) => kind.clone(),
        (None, _, Some(status)) => format!("HTTP {status}"),
        (None, _, None) => "no response".into(),
    }
}

/// A stored fragment as people read it (percent-decoded).
fn decoded(fragment: &str) -> String {
    percent_encoding::percent_decode_str(fragment)
        .decode_utf8_lossy()
        .into_owned()
}

/// Where the link is, as `PAGE:LINE:COLUMN` (as much of it as is known), or the target
/// itself for a URL nothing links to.
fn place(l: &BrokenLink) -> String {
    let mut place = l.source.clone().unwrap_or_else(|| l.target.clone());
    for n in [l.line, l.column].into_iter().map_while(|n| n) {
        place.push_str(&format!(":{n}"));
    }
    place
}

/// The page a result is located at: the linking page, or for a URL nothing links to (a
/// seed) the URL itself, without a fragment.
fn located_at(l: &BrokenLink) -> &str {
    match &l.source {
        Some(source) => source,
        None => l.target.split('#').next().unwrap_or(&l.target),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of each kind the formats must write: a broken link with a place, a
    /// missing fragment, a blocked one with awkward text, a seed nobody links to.
    pub(super) fn rows() -> Vec<BrokenLink> {
        let base = BrokenLink {
            key: "http://h/missing".into(),
            target: "http://h/missing".into(),
            class: LinkClass::Broken,
            status: Some(404),
            error: None,
            detail: None,
            redirect: None,
            fragment: None,
            source: Some("http://h/".into()),
            line: Some(3),
            column: Some(7),
            kind: Some("a"),
            anchor: Some("gone".into()),
        };
        vec![
            base.clone(),
            BrokenLink {
                target: "http://h/doc#caf%C3%A9".into(),
                class: LinkClass::Fragment,
                status: Some(200),
                fragment: Some("caf%C3%A9".into()),
                ..base.clone()
            },
            BrokenLink {
                target: "http://h/a|b`c,d:e%f".into(),
                class: LinkClass::Blocked,
                status: Some(403),
                source: Some("http://h/x,y:z%\r\n".into()),
                anchor: Some("<&> \"q\" | `t` \u{1}".into()),
                line: None,
                column: None,
                ..base.clone()
            },
            BrokenLink {
                target: "http://dead.invalid/".into(),
                class: LinkClass::Broken,
                status: None,
                error: Some("dns".into()),
                detail: Some("no such host".into()),
                source: None,
                line: None,
                column: None,
                kind: None,
                anchor: None,
                ..base
            },
        ]
    }

    /// `rows` written by the writer `make` builds over a buffer.
    pub(super) fn render(
        make: impl FnOnce(&mut Vec<u8>) -> Box<dyn Writer + '_>,
        rows: &[BrokenLink],
    ) -> String {
        let mut buf = Vec::new();
        let mut w = make(&mut buf);
        for r in rows {
            w.link(r).unwrap();
        }
        w.finish().unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn messages_name_target_and_answer() {
        let rows = rows();
        assert_eq!(
            message(&rows[0]),
            "broken link to http://h/missing (HTTP 404), link text \"gone\""
        );
        assert!(message(&rows[1]).contains("no element with id or name \"café\""));
        assert!(message(&rows[2]).contains("(HTTP 403)"));
        assert_eq!(
            message(&rows[3]),
            "broken link to http://dead.invalid/ (dns: no such host)"
        );
        assert_eq!(place(&rows[0]), "http://h/:3:7");
        assert_eq!(place(&rows[3]), "http://dead.invalid/");
        assert_eq!(located_at(&rows[1]), "http://h/");
    }
}
