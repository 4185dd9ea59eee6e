//! DOT, for Graphviz (`dot -Tsvg`, `sfdp`) and the many tools that read it.
//!
//! Node ids are `"n{urls.id}"` and labels the URLs, so a graph stays valid whatever the
//! URLs contain. Pages that failed or answered 4xx/5xx are drawn red, redirects and URLs
//! never fetched grey, and nofollow links dashed: enough to spot problems in a drawing.

use std::io::Write;

use super::filter::{EdgeOrder, Filter};
use super::rows::{edge_row, for_each, page_row};
use super::ExportError;
use crate::store::SqliteStore;

/// The whole graph, nodes then edges. Returns nodes plus edges written.
pub fn graph(
    store: &SqliteStore,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    out.write_all(b"digraph trawl {\n  node [shape=box, fontsize=10];\n  edge [fontsize=8];\n")?;
    let mut n = for_each(store, &filter.pages_sql(), page_row, |p| {
        write!(out, "  \"n{}\" [label=", p.id)?;
        quoted(out, &p.url)?;
        let color = match p.status() {
            _ if p.state == "failed" => Some("red"),
            Some(400..) => Some("red"),
            Some(300..=399) => Some("grey"),
            None => Some("grey"),
            Some(_) => None,
        };
        if let Some(c) = color {
            write!(out, ", color={c}")?;
        }
        if let Some(s) = p.status() {
            write!(out, ", status={s}")?;
        }
        out.write_all(b"];\n")?;
        Ok(())
    })?;
    let collapse = filter.collapse;
    n += for_each(
        store,
        &filter.edges_sql(EdgeOrder::Stored),
        |r| edge_row(r, collapse),
        |e| {
            write!(out, "  \"n{}\" -> \"n{}\" [kind={}", e.src, e.dst, e.kind)?;
            match e.count {
                Some(c) if c > 1 => write!(out, ", label=\"{} ({c})\", count={c}", e.kind)?,
                Some(c) => write!(out, ", label={}, count={c}", e.kind)?,
                None => write!(out, ", label={}", e.kind)?,
            }
            if e.nofollow {
                out.write_all(b", style=dashed")?;
            }
            out.write_all(b"];\n")?;
            Ok(())
        },
    )?;
    out.write_all(b"}\n")?;
    Ok(n)
}

/// A DOT double-quoted string. A backslash is an escape in Graphviz labels (`\n`, `\l`,
/// `\N`), so it is doubled along with quotes; line breaks and other controls cannot appear
/// raw in a one-line label and are replaced.
fn quoted(out: &mut dyn Write, s: &str) -> std::io::Result<()> {
    out.write_all(b"\"")?;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let rep: &str = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{0}'..='\u{1f}' | '\u{7f}' => "\u{fffd}",
            _ => continue,
        };
        out.write_all(&s.as_bytes()[start..i])?;
        out.write_all(rep.as_bytes())?;
        start = i + c.len_utf8();
    }
    out.write_all(&s.as_bytes()[start..])?;
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_and_backslashes_are_escaped() {
        let mut v = Vec::new();
        super::quoted(&mut v, "a\"b\\c\nd").unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "\"a\\\"b\\\\c\u{fffd}d\"");
    }
}
