//! `trawl diff`: what changed between two generations of a crawl (`trawl crawl --refresh`
//! makes them), one row per change, in three parts written one after the other:
//!
//! - pages (`pages`): a URL fetched in one generation and not the other (`added`), a page
//!   that now fails as broken (`removed`), another change of status or error (`status`),
//!   a redirect that leads elsewhere (`redirect`), a page whose content hash changed
//!   (`changed`) or whose title did (`title`); one row per kind that applies, in URL order;
//! - links (`links`): edges added and removed, as a multiset per (page, target, kind,
//!   fragment): a link that appears twice where it appeared once is one `link-added`;
//! - broken links (`broken`): links in a class `report broken` lists (broken, fragment,
//!   blocked, transient) that are new in the later generation or in another class there
//!   (`broken-new`), and those that are not there any more (`broken-fixed`).
//!
//! Every part streams: SQLite joins and groups the two generations (its sorts spill to
//! disk), and the broken links of each generation come from the `broken` report itself,
//! read on its own connection and thread and merged by target as both stream. What is
//! held in memory is one target's broken links at a time.

mod broken;
mod links;
mod pages;

use std::io::Write;
use std::path::Path;
use std::str::FromStr;

use super::output::{Cell, Out, OutputFormat};
use super::{sql, ReportError};
use crate::store::{Generation, OpenMode, SqliteStore, StoreError};

/// The columns, in order. `from` and `to` are what the change is between (a status, a
/// title, a redirect target, a link's count on its page, a link class); `page` is the
/// linking page of a link row; `kind` its link kind.
const COLUMNS: &[&str] = &["change", "url", "from", "to", "page", "kind"];

/// One kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Change {
    /// Fetched in the later generation, not in the earlier.
    Added,
    /// Fetched in the earlier generation; gone (broken) or not fetched in the later.
    Removed,
    /// Both fetched with a 2xx, content hashes differ.
    Changed,
    /// Another change of HTTP status or error kind.
    Status,
    /// A redirect whose target changed.
    Redirect,
    /// The title changed.
    Title,
    /// A link on a page that was not there (or is there more often).
    LinkAdded,
    /// A link on a page that is not there any more (or less often).
    LinkRemoved,
    /// A link in a broken class that was not broken (or not there) before.
    BrokenNew,
    /// A link in a broken class before that is not now.
    BrokenFixed,
}

impl Change {
    /// Every kind, in the order rows come.
    pub const ALL: [Change; 10] = [
        Change::Added,
        Change::Removed,
        Change::Status,
        Change::Redirect,
        Change::Changed,
        Change::Title,
        Change::LinkAdded,
        Change::LinkRemoved,
        Change::BrokenNew,
        Change::BrokenFixed,
    ];

    /// The name in the `change` column and in `--change`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
            Change::Status => "status",
            Change::Redirect => "redirect",
            Change::Title => "title",
            Change::LinkAdded => "link-added",
            Change::LinkRemoved => "link-removed",
            Change::BrokenNew => "broken-new",
            Change::BrokenFixed => "broken-fixed",
        }
    }
}

impl FromStr for Change {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Change::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Change::ALL.iter().map(|c| c.as_str()).collect();
                format!("unknown change {s:?}; use {}", names.join(", "))
            })
    }
}

/// What `trawl diff` compares and how it writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffOptions {
    /// The earlier generation; `None` for the one before `to`.
    pub from: Option<i64>,
    /// The later generation; `None` for the latest.
    pub to: Option<i64>,
    /// Table, CSV or JSON.
    pub format: OutputFormat,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Only these kinds of change; `None` for all.
    pub changes: Option<Vec<Change>>,
}

impl DiffOptions {
    /// The last two generations, every change, as `format`.
    pub fn new(format: OutputFormat) -> DiffOptions {
        DiffOptions {
            from: None,
            to: None,
            format,
            limit: None,
            changes: None,
        }
    }

    fn wants(&self, change: Change) -> bool {
        self.changes.as_ref().is_none_or(|c| c.contains(&change))
    }
}

/// One generation as the queries of the other parts name its tables.
#[derive(Debug, Clone, Copy)]
struct Side(Generation);

impl Side {
    /// Its `urls` rows, as a table expression.
    fn urls(&self) -> String {
        match self.0.current {
            true => "main.urls".into(),
            false => format!(
                "(SELECT * FROM main.gen_urls WHERE generation = {})",
                self.0.number
            ),
        }
    }

    /// Its `edges` rows, as a table name.
    fn edges(&self) -> String {
        match self.0.current {
            true => "main.edges".into(),
            false => format!("main.gen_edges_{}", self.0.number),
        }
    }
}

/// Write the changes from one generation of the crawl in `path` to another, as `options`
/// say. Returns the rows written.
///
/// ```no_run
/// use trawl::report::{diff, DiffOptions, OutputFormat};
/// let mut out = std::io::stdout();
/// diff(std::path::Path::new("site.db"), &DiffOptions::new(OutputFormat::Csv), &mut out)?;
/// # Ok::<(), trawl::report::ReportError>(())
/// ```
pub fn diff(path: &Path, options: &DiffOptions, out: &mut dyn Write) -> Result<u64, ReportError> {
    let Some(format) = options.format.tabular() else {
        return Err(ReportError::Format {
            format: options.format,
            kind: "diff",
        });
    };
    let store = SqliteStore::open(path, OpenMode::Read)?;
    let (from, to) = choose(&store, options)?;
    let mut o = Out::new(format, options.limit, out);
    o.columns(COLUMNS)?;
    {
        let _snapshot = store
            .conn()
            .unchecked_transaction()
            .map_err(|e| sql(&store, e))?;
        if [
            Change::Added,
            Change::Removed,
            Change::Status,
            Change::Redirect,
        ]
        .into_iter()
        .chain([Change::Changed, Change::Title])
        .any(|c| options.wants(c))
        {
            pages::run(&store, from, to, options, &mut o)?;
        }
        if options.wants(Change::LinkAdded) || options.wants(Change::LinkRemoved) {
            links::run(&store, from, to, options, &mut o)?;
        }
    }
    if o.wants_more() && (options.wants(Change::BrokenNew) || options.wants(Change::BrokenFixed)) {
        broken::run(path, from.0.number, to.0.number, options, &mut o)?;
    }
    o.finish()
}

/// The two generations compared: as asked, else the latest and the one before it.
fn choose(store: &SqliteStore, options: &DiffOptions) -> Result<(Side, Side), ReportError> {
    let kept = store.generations()?;
    if kept.is_empty() {
        return Err(ReportError::NoCrawl {
            path: store.path().display().to_string(),
        });
    }
    let find = |n: i64| -> Result<Side, ReportError> {
        match kept.iter().find(|g| g.number == n) {
            Some(g) => Ok(Side(*g)),
            None => Err(StoreError::NoGeneration {
                path: store.path().display().to_string(),
                asked: n,
                kept: kept.iter().map(|g| g.number.to_string()).collect(),
            }
            .into()),
        }
    };
    let to = match options.to {
        Some(n) => find(n)?,
        None => Side(*kept.last().expect("not empty")),
    };
    let from = match options.from {
        Some(n) => find(n)?,
        None => match kept.iter().rev().find(|g| g.number < to.0.number) {
            Some(g) => Side(*g),
            None => {
                return Err(ReportError::NothingToCompare {
                    path: store.path().display().to_string(),
                    generation: to.0.number,
                })
            }
        },
    };
    Ok((from, to))
}

/// Hand each row of `query` to `f` while `o` wants more.
fn each_row(
    store: &SqliteStore,
    query: &str,
    o: &mut Out<'_>,
    mut f: impl FnMut(&rusqlite::Row<'_>, &mut Out<'_>) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let err = |e| sql(store, e);
    let mut st = store.conn().prepare(query).map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        if !o.wants_more() {
            break;
        }
        f(r, o)?;
    }
    Ok(())
}

/// One row.
fn row(
    o: &mut Out<'_>,
    change: Change,
    url: String,
    from: Option<String>,
    to: Option<String>,
    page: Option<String>,
    kind: Option<&'static str>,
) -> Result<(), ReportError> {
    o.row(vec![
        Cell::Text(change.as_str().to_owned()),
        Cell::Text(url),
        Cell::opt_text(from),
        Cell::opt_text(to),
        Cell::opt_text(page),
        Cell::opt_text(kind.map(str::to_owned)),
    ])
}
