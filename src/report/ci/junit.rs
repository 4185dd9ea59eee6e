//! JUnit XML, what CI test reports read: one `<testsuite>` of a `<testcase>` per link
//! listed, each with a `<failure>` whose `type` is the link's class.
//!
//! One suite, not one per page: rows come in target order, and regrouping them by page
//! would mean holding the whole report. Test viewers group by `classname` instead, which
//! is the linking page's URL (the target's own for a URL nothing links to); `name` is the
//! target (and the link's kind when it is not `a`), `file` and `line` say where the link
//! is. A report with no links holds one passing testcase, so a clean run shows as passed
//! rather than as no tests. Counts come in the head, so the testcases are spooled.

use std::io::{self, Write};

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use super::spool::Spool;
use super::{answer, located_at, message, place, BrokenLink, Writer};
use crate::check::{ClassCounts, LinkClasses};

pub(super) struct Junit<'a> {
    out: &'a mut dyn Write,
    body: quick_xml::Writer<Spool>,
    counts: ClassCounts,
    classes: LinkClasses,
}

impl<'a> Junit<'a> {
    /// A report of links of `classes`, written to `out` when it ends.
    pub(super) fn new(out: &'a mut dyn Write, classes: LinkClasses) -> Junit<'a> {
        Junit {
            out,
            body: quick_xml::Writer::new(Spool::default()),
            counts: ClassCounts::default(),
            classes,
        }
    }
}

impl Writer for Junit<'_> {
    fn link(&mut self, l: &BrokenLink) -> io::Result<()> {
        self.counts.add(l.class);
        let name = match l.kind {
            Some(kind) if kind != "a" => format!("{} ({kind})", l.target),
            _ => l.target.clone(),
        };
        let mut case = BytesStart::new("testcase");
        case.push_attribute(("name", xml_safe(&name).as_str()));
        case.push_attribute(("classname", xml_safe(located_at(l)).as_str()));
        case.push_attribute(("file", xml_safe(located_at(l)).as_str()));
        if let Some(line) = l.line {
            case.push_attribute(("line", line.to_string().as_str()));
        }
        let mut failure = BytesStart::new("failure");
        failure.push_attribute(("type", l.class.as_str()));
        failure.push_attribute(("message", xml_safe(&message(l)).as_str()));
        let w = &mut self.body;
        w.write_event(Event::Start(case))?;
        w.write_event(Event::Start(failure))?;
        w.write_event(Event::Text(BytesText::new(&xml_safe(&details(l)))))?;
        w.write_event(Event::End(BytesEnd::new("failure")))?;
        w.write_event(Event::End(BytesEnd::new("testcase")))?;
        w.get_mut().write_all(b"\n")
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        let Junit {
            out,
            body,
            counts,
            classes,
        } = *self;
        let failures = counts.total().to_string();
        // A clean report still has a test: the check itself, passed.
        let tests = counts.total().max(1).to_string();
        let mut w = quick_xml::Writer::new(&mut *out);
        w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        w.get_mut().write_all(b"\n")?;
        let mut suites = BytesStart::new("testsuites");
        suites.push_attribute(("name", "trawl"));
        suites.push_attribute(("tests", tests.as_str()));
        suites.push_attribute(("failures", failures.as_str()));
        suites.push_attribute(("errors", "0"));
        w.write_event(Event::Start(suites))?;
        w.get_mut().write_all(b"\n")?;
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", "trawl link check"));
        suite.push_attribute(("tests", tests.as_str()));
        suite.push_attribute(("failures", failures.as_str()));
        suite.push_attribute(("errors", "0"));
        suite.push_attribute(("skipped", "0"));
        w.write_event(Event::Start(suite))?;
        w.get_mut().write_all(b"\n")?;
        if counts.total() == 0 {
            let mut case = BytesStart::new("testcase");
            let name = format!("no links of the classes {classes}");
            case.push_attribute(("name", name.as_str()));
            case.push_attribute(("classname", "trawl"));
            w.write_event(Event::Empty(case))?;
            w.get_mut().write_all(b"\n")?;
        }
        body.into_inner().copy_to(w.get_mut())?;
        w.write_event(Event::End(BytesEnd::new("testsuite")))?;
        w.get_mut().write_all(b"\n")?;
        w.write_event(Event::End(BytesEnd::new("testsuites")))?;
        w.get_mut().write_all(b"\n")?;
        out.flush()
    }
}

/// The failure's text: every fact about the link, a line each.
fn details(l: &BrokenLink) -> String {
    let mut lines = vec![
        format!("target: {}", l.target),
        format!("class: {}", l.class),
        format!("answer: {}", answer(l)),
        format!("at: {}", place(l)),
    ];
    if let Some(kind) = l.kind {
        lines.push(format!("kind: {kind}"));
    }
    if let Some(anchor) = &l.anchor {
        lines.push(format!("anchor: {anchor}"));
    }
    lines.join("\n")
}

/// `s` with the characters XML 1.0 cannot hold at all (C0 controls other than tab,
/// newline and carriage return; U+FFFE, U+FFFF) as U+FFFD: page text does contain them,
/// and quick-xml escapes markup, not these.
fn xml_safe(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
            _ => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{render, rows};
    use super::*;
    use crate::check::LinkClasses;

    fn junit(rows: &[super::BrokenLink]) -> String {
        render(|b| Box::new(Junit::new(b, LinkClasses::REPORTED)), rows)
    }

    #[test]
    fn a_testcase_per_link_with_counts_and_escaping() {
        let xml = junit(&rows());
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"trawl\" tests=\"4\" failures=\"4\""), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 4);
        assert!(xml.contains("<failure type=\"broken\""));
        assert!(xml.contains("<failure type=\"fragment\""));
        assert!(xml.contains("classname=\"http://h/\" file=\"http://h/\" line=\"3\""));
        // Markup escaped, a control character replaced, nothing raw.
        assert!(xml.contains("&lt;&amp;&gt;"), "{xml}");
        assert!(!xml.contains('\u{1}'));
        assert!(xml.contains('\u{fffd}'));
        // Reads back: every element closed.
        let mut reader = quick_xml::Reader::from_str(&xml);
        let mut depth = 0i32;
        loop {
            match reader.read_event().unwrap() {
                Event::Start(_) => depth += 1,
                Event::End(_) => depth -= 1,
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(depth, 0);
    }

    #[test]
    fn a_clean_report_is_one_passing_test() {
        let xml = junit(&[]);
        assert!(xml.contains("tests=\"1\" failures=\"0\""), "{xml}");
        assert!(xml.contains("<testcase name=\"no links of the classes broken,fragment,blocked,transient\" classname=\"trawl\"/>"), "{xml}");
    }
}
