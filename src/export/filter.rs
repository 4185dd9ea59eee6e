//! Export filters (`--internal-only`, `--status`, `--collapse`), turned into SQL so that
//! SQLite drops the rows and memory stays constant.
//!
//! The SQL built here only ever contains fixed fragments chosen by enum values, never text
//! from the user, so formatting it into a statement is safe.

use std::str::FromStr;

use crate::store::local::columns;

/// A class of outcome a page can be kept for with `--status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusClass {
    /// 200-299.
    Success,
    /// 300-399.
    Redirect,
    /// 400-499.
    ClientError,
    /// 500-599.
    ServerError,
    /// No usable response (state `failed`: timeout, connect, redirect-loop, ...).
    Failed,
}

impl StatusClass {
    /// The SQL condition on the `urls` row aliased `u`.
    fn sql(self, u: &str) -> String {
        let range = |lo: u16| format!("({u}.status BETWEEN {lo} AND {})", lo + 99);
        match self {
            StatusClass::Success => range(200),
            StatusClass::Redirect => range(300),
            StatusClass::ClientError => range(400),
            StatusClass::ServerError => range(500),
            StatusClass::Failed => format!("({u}.state = 2)"),
        }
    }
}

impl FromStr for StatusClass {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "2xx" => StatusClass::Success,
            "3xx" => StatusClass::Redirect,
            "4xx" => StatusClass::ClientError,
            "5xx" => StatusClass::ServerError,
            "failed" => StatusClass::Failed,
            _ => {
                return Err(format!(
                    "unknown status class {s:?}; use 2xx, 3xx, 4xx, 5xx or failed"
                ))
            }
        })
    }
}

/// Which rows an export keeps, and whether repeated edges are merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Drop URLs skipped as out of scope, and the edges pointing at them.
    pub internal_only: bool,
    /// One edge per (from, to, kind) with the number of occurrences.
    pub collapse: bool,
    /// Keep only pages in one of these classes (and edges whose two ends are kept);
    /// empty keeps everything.
    pub status: Vec<StatusClass>,
}

/// The order edges come out in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EdgeOrder {
    /// As stored (for collapsed edges: by first occurrence).
    Stored,
    /// Grouped under their source page, in document order within it.
    BySource,
}

impl Filter {
    /// The condition a `urls` row aliased `u` must meet; `1` keeps all.
    pub(super) fn page_condition(&self, u: &str) -> String {
        let mut parts = Vec::new();
        if self.internal_only {
            parts.push(format!(
                "NOT ({u}.state = 3 AND {u}.skip_reason IS 'out-of-scope')"
            ));
        }
        if !self.status.is_empty() {
            let any: Vec<String> = self.status.iter().map(|c| c.sql(u)).collect();
            parts.push(format!("({})", any.join(" OR ")));
        }
        if parts.is_empty() {
            "1".to_owned()
        } else {
            parts.join(" AND ")
        }
    }

    /// Pages, in id order; columns as [`super::rows::page_row`] reads them.
    pub(super) fn pages_sql(&self) -> String {
        format!(
            "SELECT u.id, coalesce(u.url, u.key), u.state, u.depth, u.skip_reason, {}
             FROM urls u WHERE {} ORDER BY u.id",
            columns::names_of("u."),
            self.page_condition("u")
        )
    }

    /// Edges whose two ends pass the page condition; columns as
    /// [`super::rows::edge_row`] reads them (src, dst, from, to, kind, nofollow, count,
    /// anchor; collapsed, one of the group's anchors).
    ///
    /// Collapsed, a group is nofollow only when every occurrence is: one followable link
    /// is enough for the target to be reached.
    pub(super) fn edges_sql(&self, order: EdgeOrder) -> String {
        let cond = format!(
            "{} AND {}",
            self.page_condition("s"),
            self.page_condition("d")
        );
        let from = "FROM edges e JOIN urls s ON s.id = e.src JOIN urls d ON d.id = e.dst";
        let cols = "e.src, e.dst, coalesce(s.url, s.key), coalesce(d.url, d.key), e.kind";
        if self.collapse {
            let order = match order {
                EdgeOrder::Stored => "min(e.rowid)",
                EdgeOrder::BySource => "e.src, min(e.rowid)",
            };
            format!(
                "SELECT {cols}, min(e.nofollow), count(*), max(e.anchor) {from} WHERE {cond}
                 GROUP BY e.src, e.dst, e.kind ORDER BY {order}"
            )
        } else {
            let order = match order {
                EdgeOrder::Stored => "e.rowid",
                EdgeOrder::BySource => "e.src, e.rowid",
            };
            format!("SELECT {cols}, e.nofollow, 1, e.anchor {from} WHERE {cond} ORDER BY {order}")
        }
    }
}

/// SQL true when the Content-Type in `col` is HTML (`text/html` or
/// `application/xhtml+xml`, any parameters, any case).
pub(crate) fn is_html_sql(col: &str) -> String {
    let mut any = Vec::new();
    for t in ["text/html", "application/xhtml+xml"] {
        any.push(format!("trim({col}) LIKE '{t}'"));
        any.push(format!("trim({col}) LIKE '{t};%'"));
        any.push(format!("trim({col}) LIKE '{t} %'"));
    }
    format!("({})", any.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse() {
        assert_eq!("4xx".parse(), Ok(StatusClass::ClientError));
        assert_eq!("FAILED".parse(), Ok(StatusClass::Failed));
        assert!("404".parse::<StatusClass>().is_err());
    }

    #[test]
    fn no_filter_keeps_everything() {
        assert_eq!(Filter::default().page_condition("u"), "1");
    }

    #[test]
    fn html_types() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for (ct, html) in [
            ("text/html", true),
            ("TEXT/HTML; charset=utf-8", true),
            (" application/xhtml+xml", true),
            ("text/htmlx", false),
            ("text/css", false),
        ] {
            let got: bool = conn
                .query_row(&format!("SELECT {}", is_html_sql("?1")), [ct], |r| r.get(0))
                .unwrap();
            assert_eq!(got, html, "{ct}");
        }
    }

    #[test]
    fn statements_prepare() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for sql in crate::store::local::sqlite::MIGRATIONS {
            conn.execute_batch(sql).unwrap();
        }
        let filters = [
            Filter::default(),
            Filter {
                internal_only: true,
                collapse: true,
                status: vec![StatusClass::Success, StatusClass::Failed],
            },
        ];
        for f in filters {
            conn.prepare(&f.pages_sql()).unwrap();
            conn.prepare(&f.edges_sql(EdgeOrder::Stored)).unwrap();
            conn.prepare(&f.edges_sql(EdgeOrder::BySource)).unwrap();
        }
    }
}
