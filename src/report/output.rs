//! The ways a report is written: aligned columns, CSV, or one JSON array of objects (every
//! report); and for `broken` only, the formats CI systems read (`ci/`).
//!
//! Rows stream: CSV and JSON write each row as it comes. The table needs column widths, so
//! it holds the first [`TABLE_SAMPLE`] rows to measure them, then streams the rest with
//! those widths (a longer value past that point just pushes its line out).

use std::io::Write;
use std::str::FromStr;

use super::ReportError;

/// Rows measured before a table's widths are fixed.
const TABLE_SAMPLE: usize = 1000;

/// How a report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Plain aligned columns with a header line, for a terminal.
    Table,
    /// RFC 4180 CSV with a header row; missing values are empty, lists joined by ` -> `.
    Csv,
    /// One JSON array holding one object per row, keys in column order; missing values
    /// are `null`, lists are arrays.
    Json,
    /// `broken` only: JUnit XML, a testcase per link listed.
    Junit,
    /// `broken` only: SARIF 2.1.0, a result per link listed, located at its page.
    Sarif,
    /// `broken` only: a Markdown table for a CI job summary, with counts per class.
    Markdown,
    /// `broken` only: GitHub Actions workflow commands (`::error ...`), one per link.
    Github,
}

impl OutputFormat {
    /// Every format, in the order `--format` lists them.
    pub const ALL: &'static [OutputFormat] = &[
        OutputFormat::Table,
        OutputFormat::Csv,
        OutputFormat::Json,
        OutputFormat::Junit,
        OutputFormat::Sarif,
        OutputFormat::Markdown,
        OutputFormat::Github,
    ];

    /// The name `--format` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Table => "table",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
            OutputFormat::Junit => "junit",
            OutputFormat::Sarif => "sarif",
            OutputFormat::Markdown => "markdown",
            OutputFormat::Github => "github",
        }
    }

    /// The rows-and-columns writer of this format, `None` for the CI formats (which only
    /// `broken` writes).
    pub(super) fn tabular(self) -> Option<Tabular> {
        match self {
            OutputFormat::Table => Some(Tabular::Table),
            OutputFormat::Csv => Some(Tabular::Csv),
            OutputFormat::Json => Some(Tabular::Json),
            _ => None,
        }
    }
}

impl std::fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OutputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OutputFormat::ALL
            .iter()
            .copied()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                format!("unknown report format {s:?}; use table, csv, json, or for broken junit, sarif, markdown or github")
            })
    }
}

/// The formats every report is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tabular {
    Table,
    Csv,
    Json,
}

/// One value of a report row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// No value (`-` in a table, empty in CSV, `null` in JSON).
    Null,
    /// A whole number.
    Int(i64),
    /// A real number.
    Float(f64),
    /// Text.
    Text(String),
    /// A sequence, such as the hops of a redirect chain.
    List(Vec<String>),
}

impl Cell {
    /// `Int` or `Null`.
    pub fn opt_int(v: Option<i64>) -> Cell {
        v.map_or(Cell::Null, Cell::Int)
    }

    /// `Text` or `Null`.
    pub fn opt_text(v: Option<String>) -> Cell {
        v.map_or(Cell::Null, Cell::Text)
    }

    fn plain(&self, null: &str) -> String {
        match self {
            Cell::Null => null.to_owned(),
            Cell::Int(n) => n.to_string(),
            Cell::Float(x) => format_float(*x),
            Cell::Text(s) => s.clone(),
            Cell::List(v) => v.join(" -> "),
        }
    }

    fn is_number(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Float(_))
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            Cell::Null => serde_json::Value::Null,
            Cell::Int(n) => (*n).into(),
            Cell::Float(x) => serde_json::Number::from_f64(*x)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Cell::Text(s) => s.clone().into(),
            Cell::List(v) => v.clone().into(),
        }
    }
}

/// Six significant digits: PageRank values are small, durations are not.
fn format_float(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{x:.digits$}")
}

/// Where a report's rows go instead of a format: each row as cells, with the report's
/// column names, for a program that stores or pages them (the web page's cache).
pub trait RowSink {
    /// Take one row; `columns` names its cells, in order.
    fn row(&mut self, columns: &[&'static str], cells: Vec<Cell>) -> Result<(), ReportError>;
}

/// Where [`Out`] writes.
enum Dest<'a> {
    Format(Tabular, &'a mut dyn Write),
    Rows(&'a mut dyn RowSink),
}

/// A report being written: columns once, then rows, then [`Out::finish`].
pub(super) struct Out<'a> {
    dest: Dest<'a>,
    limit: Option<u64>,
    columns: Vec<&'static str>,
    rows: u64,
    /// Table only: rows held to measure widths, until the widths are fixed.
    sample: Vec<Vec<Cell>>,
    widths: Option<Vec<usize>>,
    /// Table only: columns whose sampled values are all numbers (or missing): right-aligned.
    numeric: Vec<bool>,
}

impl<'a> Out<'a> {
    pub(super) fn new(format: Tabular, limit: Option<u64>, out: &'a mut dyn Write) -> Out<'a> {
        Out::to(Dest::Format(format, out), limit)
    }

    /// Rows handed to `sink` as cells.
    pub(super) fn rows(sink: &'a mut dyn RowSink, limit: Option<u64>) -> Out<'a> {
        Out::to(Dest::Rows(sink), limit)
    }

    fn to(dest: Dest<'a>, limit: Option<u64>) -> Out<'a> {
        Out {
            dest,
            limit,
            columns: Vec::new(),
            rows: 0,
            sample: Vec::new(),
            widths: None,
            numeric: Vec::new(),
        }
    }

    /// Start the report with its column names.
    pub(super) fn columns(&mut self, columns: &[&'static str]) -> Result<(), ReportError> {
        self.columns = columns.to_vec();
        match &mut self.dest {
            Dest::Format(Tabular::Table, _) | Dest::Rows(_) => {}
            Dest::Format(Tabular::Csv, _) => {
                self.csv_line(columns.iter().map(|c| c.to_string()))?
            }
            Dest::Format(Tabular::Json, out) => out.write_all(b"[")?,
        }
        Ok(())
    }

    /// Whether `--limit` still allows rows: reports stop reading when it does not.
    pub(super) fn wants_more(&self) -> bool {
        self.limit.is_none_or(|l| self.rows < l)
    }

    /// Write one row (ignored past the limit).
    pub(super) fn row(&mut self, cells: Vec<Cell>) -> Result<(), ReportError> {
        debug_assert_eq!(cells.len(), self.columns.len());
        if !self.wants_more() {
            return Ok(());
        }
        self.rows += 1;
        let format = match &mut self.dest {
            Dest::Rows(sink) => return sink.row(&self.columns, cells),
            Dest::Format(format, _) => *format,
        };
        match format {
            Tabular::Table => {
                if self.widths.is_some() {
                    self.table_line(&cells, false)?;
                } else {
                    self.sample.push(cells);
                    if self.sample.len() >= TABLE_SAMPLE {
                        self.flush_sample()?;
                    }
                }
            }
            Tabular::Csv => self.csv_line(cells.iter().map(|c| c.plain("")))?,
            Tabular::Json => {
                let sep: &[u8] = if self.rows == 1 { b"\n" } else { b",\n" };
                let Dest::Format(_, out) = &mut self.dest else {
                    unreachable!("matched above")
                };
                out.write_all(sep)?;
                json_object(&self.columns, &cells, &mut **out)?;
            }
        }
        Ok(())
    }

    /// The writer of a format (not called for a row sink).
    fn out(&mut self) -> &mut dyn Write {
        match &mut self.dest {
            Dest::Format(_, out) => &mut **out,
            Dest::Rows(_) => unreachable!("a row sink has no writer"),
        }
    }

    /// End the report; returns the rows written.
    pub(super) fn finish(mut self) -> Result<u64, ReportError> {
        let format = match &self.dest {
            Dest::Rows(_) => return Ok(self.rows),
            Dest::Format(format, _) => *format,
        };
        match format {
            Tabular::Table => {
                if self.widths.is_none() {
                    self.flush_sample()?;
                }
                if self.rows == 0 {
                    self.out().write_all(b"(none)\n")?;
                }
            }
            Tabular::Csv => {}
            Tabular::Json => {
                let end: &[u8] = if self.rows == 0 { b"]\n" } else { b"\n]\n" };
                self.out().write_all(end)?;
            }
        }
        self.out().flush()?;
        Ok(self.rows)
    }

    fn flush_sample(&mut self) -> Result<(), ReportError> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.sample {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.plain("-").chars().count());
            }
        }
        self.numeric = (0..self.columns.len())
            .map(|i| {
                let mut values = self.sample.iter().map(|r| &r[i]);
                values.clone().any(Cell::is_number)
                    && values.all(|c| c.is_number() || *c == Cell::Null)
            })
            .collect();
        let header: Vec<Cell> = self
            .columns
            .iter()
            .map(|c| Cell::Text(c.to_string()))
            .collect();
        self.widths = Some(widths);
        self.table_line(&header, true)?;
        for row in std::mem::take(&mut self.sample) {
            self.table_line(&row, false)?;
        }
        Ok(())
    }

    fn table_line(&mut self, cells: &[Cell], header: bool) -> Result<(), ReportError> {
        let widths = self.widths.as_ref().expect("widths fixed first");
        let mut line = String::new();
        let last = cells.len().saturating_sub(1);
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let text = cell.plain("-");
            let pad = w.saturating_sub(text.chars().count());
            // Numbers line up on the right only in all-number columns: in a mixed column
            // (summary values) they would scatter.
            let right = self.numeric.get(i).copied().unwrap_or(false)
                && (header || cell.is_number() || *cell == Cell::Null);
            if right {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(&text);
            } else {
                line.push_str(&text);
                if i != last {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            if i != last {
                line.push_str("  ");
            }
        }
        line.push('\n');
        self.out().write_all(line.as_bytes())?;
        Ok(())
    }

    fn csv_line(&mut self, fields: impl Iterator<Item = String>) -> Result<(), ReportError> {
        let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
        let fields: Vec<String> = fields.collect();
        w.write_record(&fields)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let bytes = w
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.out().write_all(&bytes)?;
        Ok(())
    }
}

/// One row as a JSON object, keys in column order (written by hand: the map type would
/// sort them).
pub fn json_object(columns: &[&str], cells: &[Cell], out: &mut dyn Write) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (i, (name, cell)) in columns.iter().zip(cells).enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, name)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut *out, &cell.to_json())?;
    }
    out.write_all(b"}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: Tabular, rows: Vec<Vec<Cell>>) -> String {
        let mut buf = Vec::new();
        let mut o = Out::new(format, None, &mut buf);
        o.columns(&["name", "n"]).unwrap();
        for r in rows {
            o.row(r).unwrap();
        }
        o.finish().unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn table_aligns_and_right_aligns_numbers() {
        let t = render(
            Tabular::Table,
            vec![
                vec![Cell::Text("a".into()), Cell::Int(5)],
                vec![Cell::Text("long".into()), Cell::Int(123)],
            ],
        );
        assert_eq!(t, "name    n\na       5\nlong  123\n");
    }

    #[test]
    fn json_is_one_array_with_nulls_and_lists() {
        let t = render(
            Tabular::Json,
            vec![vec![Cell::List(vec!["x".into(), "y".into()]), Cell::Null]],
        );
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(v, serde_json::json!([{"name": ["x", "y"], "n": null}]));
        let empty: serde_json::Value =
            serde_json::from_str(&render(Tabular::Json, vec![])).unwrap();
        assert_eq!(empty, serde_json::json!([]));
    }

    #[test]
    fn csv_quotes() {
        let t = render(
            Tabular::Csv,
            vec![vec![Cell::Text("a,b".into()), Cell::Float(0.5)]],
        );
        assert_eq!(t, "name,n\n\"a,b\",0.500000\n");
    }
}
