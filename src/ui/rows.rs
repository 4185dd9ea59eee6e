//! A report's rows for a table on the page: the report's own queries (the same rows as
//! `trawl report KIND --format json`), filtered by a URL substring and cut to one page as
//! they stream, so memory holds one page of rows whatever the crawl's size.
//!
//! The reports write JSON one row per line; [`Collector`] reads those lines as they are
//! written, keeps the rows wanted and, once it has one more than a page (which says there
//! is a next page), stops the report by failing the write with [`Enough`]. Without a filter
//! the report is also given the limit itself, so `top` stops in SQL.

use std::io::Write;

use serde::Serialize;
use serde_json::{Map, Value};

use super::UiError;
use crate::report::{self, Kind, Options, OutputFormat, ReportError};
use crate::store::SqliteStore;

/// Rows per page when the request names none, and the most it may name.
pub(super) const DEFAULT_LIMIT: u64 = 50;
const MAX_LIMIT: u64 = 1000;

/// Which rows a table wants: `?q=&offset=&limit=`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Window {
    /// Only rows with a URL containing this (ASCII case-insensitive).
    pub q: Option<String>,
    /// Matching rows skipped first.
    pub offset: u64,
    /// Rows at most.
    pub limit: u64,
}

impl Window {
    /// From a query string; bad numbers fall back to the defaults.
    pub(super) fn parse(query: &str) -> Window {
        let mut w = Window {
            limit: DEFAULT_LIMIT,
            ..Window::default()
        };
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "q" if !v.is_empty() => w.q = Some(v.to_ascii_lowercase()),
                "offset" => w.offset = v.parse().unwrap_or(0),
                "limit" => w.limit = v.parse().unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
                _ => {}
            }
        }
        w
    }

    /// Whether `row` passes the filter: some URL-like text in it contains `q`.
    fn matches(&self, row: &Map<String, Value>) -> bool {
        let Some(q) = &self.q else { return true };
        let has = |s: &str| s.to_ascii_lowercase().contains(q.as_str());
        row.values().any(|v| match v {
            Value::String(s) => has(s),
            Value::Array(items) => items.iter().any(|i| i.as_str().is_some_and(has)),
            _ => false,
        })
    }
}

/// One page of a table.
#[derive(Debug, Serialize)]
pub(super) struct Rows {
    pub offset: u64,
    pub limit: u64,
    /// Whether rows follow this page.
    pub more: bool,
    pub rows: Vec<Map<String, Value>>,
}

/// The rows of report `kind` in `window`.
pub(super) fn read(store: &SqliteStore, kind: Kind, window: &Window) -> Result<Rows, UiError> {
    let wanted = window.offset.saturating_add(window.limit).saturating_add(1);
    let options = Options {
        // With a filter the report cannot know which rows count: the collector stops it.
        limit: match (&window.q, kind) {
            (None, _) => Some(wanted),
            (Some(_), Kind::Top) => Some(u64::MAX),
            (Some(_), _) => None,
        },
        ..Options::new(OutputFormat::Json)
    };
    let mut c = Collector::new(window);
    match report::run(store, kind, &options, &mut c) {
        Ok(_) => {}
        Err(ReportError::Io(e)) if is_enough(&e) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Rows {
        offset: window.offset,
        limit: window.limit,
        more: c.more,
        rows: c.rows,
    })
}

/// The write error that stops a report once the page is full.
#[derive(Debug, thiserror::Error)]
#[error("the page is full")]
struct Enough;

fn is_enough(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Enough>())
}

/// Reads a report's JSON rows as they are written (see the module doc).
struct Collector<'w> {
    window: &'w Window,
    /// The line being written.
    line: Vec<u8>,
    skipped: u64,
    rows: Vec<Map<String, Value>>,
    more: bool,
}

impl<'w> Collector<'w> {
    fn new(window: &'w Window) -> Collector<'w> {
        Collector {
            window,
            line: Vec::new(),
            skipped: 0,
            rows: Vec::new(),
            more: false,
        }
    }

    fn take_line(&mut self) -> std::io::Result<()> {
        let line = std::mem::take(&mut self.line);
        let text = line.trim_ascii();
        let text = text.strip_suffix(b",").unwrap_or(text);
        if !text.starts_with(b"{") {
            return Ok(()); // `[` and `]`
        }
        let row: Map<String, Value> = serde_json::from_slice(text)?;
        if !self.window.matches(&row) {
            return Ok(());
        }
        if self.skipped < self.window.offset {
            self.skipped += 1;
        } else if (self.rows.len() as u64) < self.window.limit {
            self.rows.push(row);
        } else {
            self.more = true;
            return Err(std::io::Error::other(Enough));
        }
        Ok(())
    }
}

impl Write for Collector<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..i]);
            self.take_line()?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.take_line()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(window: &Window, text: &str) -> (Vec<String>, bool) {
        let mut c = Collector::new(window);
        // Split mid-row: the report's writes need not end at a line.
        let stopped = c
            .write_all(&text.as_bytes()[..7])
            .and_then(|()| c.write_all(&text.as_bytes()[7..]))
            .and_then(|()| c.flush());
        if let Err(e) = stopped {
            assert!(is_enough(&e), "{e}");
        }
        let urls = c.rows.iter().map(|r| r["url"].to_string()).collect();
        (urls, c.more)
    }

    const REPORT: &str =
        "[\n{\"url\":\"http://h/a\"},\n{\"url\":\"http://h/B\"},\n{\"url\":\"http://h/c\"}\n]\n";

    #[test]
    fn pages_and_filters_as_rows_stream() {
        let w = |q: Option<&str>, offset, limit| Window {
            q: q.map(str::to_owned),
            offset,
            limit,
        };
        assert_eq!(
            collect(&w(None, 0, 2), REPORT),
            (vec!["\"http://h/a\"".into(), "\"http://h/B\"".into()], true)
        );
        assert_eq!(
            collect(&w(None, 2, 2), REPORT),
            (vec!["\"http://h/c\"".into()], false)
        );
        assert_eq!(
            collect(&w(Some("/b"), 0, 5), REPORT),
            (vec!["\"http://h/B\"".into()], false)
        );
    }

    #[test]
    fn the_query_string_is_read_with_bounds() {
        let w = Window::parse("q=%2FP&offset=5&limit=99999&token=x");
        assert_eq!(w.q.as_deref(), Some("/p"));
        assert_eq!((w.offset, w.limit), (5, MAX_LIMIT));
        assert_eq!(Window::parse("limit=zz").limit, DEFAULT_LIMIT);
    }
}
