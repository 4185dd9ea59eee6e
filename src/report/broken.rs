//! `broken`: the links a site's owner should look at, each with its class (see
//! `check::classify`): one row per (target, source page, link kind) whose target is in a
//! class asked for, and one per (target#fragment, source page) whose fragment names nothing
//! on a fetched HTML page. Ordered by target. A target nothing links to (a failed seed) is
//! listed once with no source. `line`, `column` and `anchor` are those of the first such
//! link on the source page (edges are stored in document order).
//!
//! Two queries, each a scan of `edges` joined to `urls` by primary key and sorted by SQLite
//! (on disk when large), merged by target as they stream:
//! - targets: URLs that may be in a class asked for (`check::candidates_sql`), classified
//!   row by row;
//! - fragments: edges with a fragment, in target order, so each target's ids are read
//!   once, by primary key, when its first link comes (never joined per edge: a page's ids
//!   can be long), and held as a set while its links are judged.
//!
//! A permanent redirect reached through another redirect is left to the `redirects`
//! report: only links and seeds are listed as `redirected`, not hops of a chain. A
//! `redirected` row names where the redirect leads (`redirect`): what the link should
//! say instead. That hop is read by the redirected URL's id from a map of the permanent
//! redirects, built by one scan of the redirect edges when `redirected` is asked for
//! (`edges` has no index by source, and redirects are few).

use std::collections::HashMap;

use super::output::{Cell, Out};
use super::{kind_name, sql, ReportError};
use crate::check::{
    candidates_sql, classify, judge, ClassCounts, Fragment, Ids, LinkClass, LinkClasses,
};
use crate::link::LinkKind;
use crate::store::{SqliteStore, UrlState};

/// The columns, in order.
pub(super) const COLUMNS: &[&str] = &[
    "target", "class", "status", "error", "redirect", "source", "line", "column", "kind", "anchor",
];

/// One row: a link to fix (or a URL to fix that nothing links to).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BrokenLink {
    /// The target's canonical key: rows come in its order (`trawl diff` merges by it).
    pub key: String,
    /// The target as fetched, with `#fragment` for a fragment row.
    pub target: String,
    pub class: LinkClass,
    /// The target's HTTP status.
    pub status: Option<i64>,
    /// The target's error kind (`dns`, `timeout`, ...).
    pub error: Option<String>,
    /// The error in words (not a column: CI messages quote it).
    pub detail: Option<String>,
    /// Where a `redirected` target leads: what the link should name instead.
    pub redirect: Option<String>,
    /// A fragment row's fragment, as stored (percent-encoded).
    pub fragment: Option<String>,
    /// The linking page, as fetched.
    pub source: Option<String>,
    pub line: Option<i64>,
    pub column: Option<i64>,
    /// The link kind's name (`a`, `redirect`, ...).
    pub kind: Option<&'static str>,
    pub anchor: Option<String>,
}

/// Where the rows go: a table, CSV or JSON ([`Out`]), a CI format, or a count.
pub(super) trait Sink {
    /// Whether more rows are wanted (`--limit`): the scan stops when not.
    fn wants_more(&self) -> bool;
    /// Take one row.
    fn link(&mut self, link: BrokenLink) -> Result<(), ReportError>;
}

impl Sink for Out<'_> {
    fn wants_more(&self) -> bool {
        Out::wants_more(self)
    }

    fn link(&mut self, l: BrokenLink) -> Result<(), ReportError> {
        self.row(vec![
            Cell::Text(l.target),
            Cell::Text(l.class.as_str().to_owned()),
            Cell::opt_int(l.status),
            Cell::opt_text(l.error),
            Cell::opt_text(l.redirect),
            Cell::opt_text(l.source),
            Cell::opt_int(l.line),
            Cell::opt_int(l.column),
            Cell::opt_text(l.kind.map(str::to_owned)),
            Cell::opt_text(l.anchor),
        ])
    }
}

impl Sink for ClassCounts {
    fn wants_more(&self) -> bool {
        true
    }

    fn link(&mut self, link: BrokenLink) -> Result<(), ReportError> {
        self.add(link.class);
        Ok(())
    }
}

/// Write the report's columns, then its rows, to `o`.
pub(super) fn write(
    store: &SqliteStore,
    classes: LinkClasses,
    o: &mut Out<'_>,
) -> Result<(), ReportError> {
    o.columns(COLUMNS)?;
    run(store, classes, o)
}

/// Hand every row of the classes `classes` to `sink`, in target order.
pub(super) fn run(
    store: &SqliteStore,
    classes: LinkClasses,
    sink: &mut dyn Sink,
) -> Result<(), ReportError> {
    let err = |e| sql(store, e);
    let mut targets_st = store.conn().prepare(&targets_query(classes)).map_err(err)?;
    let hops = match classes.contains(LinkClass::Redirected) {
        true => permanent_hops(store).map_err(err)?,
        false => HashMap::new(),
    };
    let mut targets = Targets {
        rows: targets_st.query([]).map_err(err)?,
        classes,
        hops,
    };
    let mut fragments_st = store.conn().prepare(FRAGMENTS).map_err(err)?;
    let mut fragments = match classes.contains(LinkClass::Fragment) {
        true => Some(Fragments {
            rows: fragments_st.query([]).map_err(err)?,
            current: None,
        }),
        false => None,
    };
    let mut a = targets.next(store)?;
    let mut b = next_of(&mut fragments, store)?;
    while sink.wants_more() {
        // Targets first on a tie, though a target with a class has no fragment rows.
        let from_targets = match (&a, &b) {
            (None, None) => break,
            (Some(x), Some(y)) => x.0 <= y.0,
            (x, _) => x.is_some(),
        };
        if from_targets {
            sink.link(a.take().expect("a target row").1)?;
            a = targets.next(store)?;
        } else {
            sink.link(b.take().expect("a fragment row").1)?;
            b = next_of(&mut fragments, store)?;
        }
    }
    Ok(())
}

/// Where each permanent redirect (301, 308) leads, by the redirecting URL's id.
fn permanent_hops(store: &SqliteStore) -> rusqlite::Result<HashMap<i64, String>> {
    let sql = format!(
        "SELECT e.src, coalesce(t.url, t.key)
         FROM edges e JOIN urls r ON r.id = e.src JOIN urls t ON t.id = e.dst
         WHERE e.kind = {} AND r.status IN (301, 308)",
        LinkKind::Redirect.code()
    );
    let mut st = store.conn().prepare(&sql)?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// A row with its sort key (the target's canonical key, as SQLite sorted it).
type Keyed = (String, BrokenLink);

/// Targets in a class, per (target, source, kind), and those nothing links to.
fn targets_query(classes: LinkClasses) -> String {
    let candidates = candidates_sql("d", classes);
    format!(
        "SELECT coalesce(d.url, d.key), d.state, d.status, d.error_kind, d.title, d.error,
                coalesce(s.url, s.key), e.kind AS kind, d.key AS dk, s.key AS sk,
                min(e.rowid), e.line, e.col, e.anchor, d.id
         FROM edges e JOIN urls d ON d.id = e.dst JOIN urls s ON s.id = e.src
         WHERE {candidates}
         GROUP BY e.dst, e.src, e.kind
         UNION ALL
         SELECT coalesce(d.url, d.key), d.state, d.status, d.error_kind, d.title, d.error,
                NULL, NULL, d.key, NULL, NULL, NULL, NULL, NULL, d.id
         FROM urls d WHERE {candidates} AND d.id NOT IN (SELECT dst FROM edges)
         ORDER BY dk, sk, kind"
    )
}

/// Links with a fragment to fetched URLs, one per (target, fragment, source), in target
/// order. An empty fragment (`page#`) is the top of the page: never missing.
const FRAGMENTS: &str = "
    SELECT e.dst, coalesce(d.url, d.key), e.fragment, coalesce(s.url, s.key), e.kind,
           d.key AS dk, s.key AS sk, min(e.rowid), e.line, e.col, e.anchor
    FROM edges e JOIN urls d ON d.id = e.dst JOIN urls s ON s.id = e.src
    WHERE e.fragment IS NOT NULL AND e.fragment <> '' AND d.state = 1
    GROUP BY e.dst, e.fragment, e.src
    ORDER BY dk, e.fragment, sk";

/// One fetched target's result and ids, by primary key.
const TARGET: &str = "SELECT status, error_kind, title, ids FROM urls WHERE id = ?1";

struct Targets<'s> {
    rows: rusqlite::Rows<'s>,
    classes: LinkClasses,
    /// [`permanent_hops`], when `redirected` is asked for.
    hops: HashMap<i64, String>,
}

impl Targets<'_> {
    /// The next row in a class asked for.
    fn next(&mut self, store: &SqliteStore) -> Result<Option<Keyed>, ReportError> {
        let err = |e| sql(store, e);
        while let Some(r) = self.rows.next().map_err(err)? {
            let state: i64 = r.get(1).map_err(err)?;
            let status: Option<i64> = r.get(2).map_err(err)?;
            let error: Option<String> = r.get(3).map_err(err)?;
            let title: Option<String> = r.get(4).map_err(err)?;
            let kind: Option<i64> = r.get(7).map_err(err)?;
            let class = UrlState::from_code(state).and_then(|state| {
                classify(state, as_status(status), error.as_deref(), title.as_deref())
            });
            let Some(class) = class.filter(|&c| self.classes.contains(c)) else {
                continue;
            };
            if class == LinkClass::Redirected && kind == Some(LinkKind::Redirect.code()) {
                continue;
            }
            let redirect = match class {
                LinkClass::Redirected => self.hops.get(&r.get::<_, i64>(14).map_err(err)?),
                _ => None,
            };
            let key: String = r.get(8).map_err(err)?;
            let link = BrokenLink {
                key: key.clone(),
                target: r.get(0).map_err(err)?,
                class,
                status,
                error,
                detail: r.get(5).map_err(err)?,
                redirect: redirect.cloned(),
                fragment: None,
                source: r.get(6).map_err(err)?,
                line: r.get(11).map_err(err)?,
                column: r.get(12).map_err(err)?,
                kind: kind.map(kind_name),
                anchor: r.get(13).map_err(err)?,
            };
            return Ok(Some((key, link)));
        }
        Ok(None)
    }
}

struct Fragments<'s> {
    rows: rusqlite::Rows<'s>,
    /// The target whose links are being read: its id, its status, and its ids when its
    /// fragments can be judged (a fine HTML page whose ids were collected).
    current: Option<(i64, Option<i64>, Option<Ids>)>,
}

fn next_of(
    fragments: &mut Option<Fragments<'_>>,
    store: &SqliteStore,
) -> Result<Option<Keyed>, ReportError> {
    match fragments {
        Some(f) => f.next(store),
        None => Ok(None),
    }
}

impl Fragments<'_> {
    /// The next link whose fragment names nothing on its page.
    fn next(&mut self, store: &SqliteStore) -> Result<Option<Keyed>, ReportError> {
        let err = |e| sql(store, e);
        while let Some(r) = self.rows.next().map_err(err)? {
            let dst: i64 = r.get(0).map_err(err)?;
            if self.current.as_ref().is_none_or(|c| c.0 != dst) {
                self.current = Some(load(store, dst).map_err(err)?);
            }
            let (_, status, ids) = self.current.as_ref().expect("loaded");
            let fragment: String = r.get(2).map_err(err)?;
            if judge(&fragment, ids.as_ref()) != Fragment::Missing {
                continue;
            }
            let target: String = r.get(1).map_err(err)?;
            let kind: i64 = r.get(4).map_err(err)?;
            let key: String = r.get(5).map_err(err)?;
            let link = BrokenLink {
                key: key.clone(),
                target: format!("{target}#{fragment}"),
                class: LinkClass::Fragment,
                status: *status,
                error: None,
                detail: None,
                redirect: None,
                fragment: Some(fragment),
                source: r.get(3).map_err(err)?,
                line: r.get(8).map_err(err)?,
                column: r.get(9).map_err(err)?,
                kind: Some(kind_name(kind)),
                anchor: r.get(10).map_err(err)?,
            };
            return Ok(Some((key, link)));
        }
        Ok(None)
    }
}

/// Target `id`'s status, and its ids when its fragments are judged: it is fine itself (a
/// broken target's links are listed as such) and its ids were collected.
fn load(store: &SqliteStore, id: i64) -> rusqlite::Result<(i64, Option<i64>, Option<Ids>)> {
    let mut lookup = store.conn().prepare_cached(TARGET)?;
    lookup.query_row([id], |r| {
        let status: Option<i64> = r.get(0)?;
        let error: Option<String> = r.get(1)?;
        let title: Option<String> = r.get(2)?;
        let fine = classify(
            UrlState::Done,
            as_status(status),
            error.as_deref(),
            title.as_deref(),
        )
        .is_none();
        let ids = match fine {
            true => r.get::<_, Option<String>>(3)?.as_deref().map(Ids::new),
            false => None,
        };
        Ok((id, status, ids))
    })
}

fn as_status(status: Option<i64>) -> Option<u16> {
    status.and_then(|s| u16::try_from(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::OpenMode;

    impl Sink for Vec<BrokenLink> {
        fn wants_more(&self) -> bool {
            true
        }

        fn link(&mut self, link: BrokenLink) -> Result<(), ReportError> {
            self.push(link);
            Ok(())
        }
    }

    /// A crawl file with one URL of each class, and links with and without fragments:
    /// written row by row, as the crawl would leave them.
    fn crawl(dir: &std::path::Path) -> SqliteStore {
        let path = dir.join("c.db");
        drop(SqliteStore::open(&path, OpenMode::Crawl).unwrap());
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO hosts (id, name) VALUES (1, 'h'), (2, 'dead');
             INSERT INTO urls (id, key, host_id, depth, state, status, error_kind, error, title, ids) VALUES
               (1, 'http://h/', 1, 0, 1, 200, NULL, NULL, 'Home', 'top-section'),
               (2, 'http://h/doc', 1, 1, 1, 200, NULL, NULL, 'Doc', 'intro' || char(10) || 'café' || char(10) || 'old'),
               (3, 'http://h/missing', 1, 1, 1, 404, NULL, NULL, 'Not Found', 'x'),
               (4, 'http://h/private', 1, 1, 1, 403, NULL, NULL, NULL, NULL),
               (5, 'http://h/slow', 1, 1, 2, NULL, 'timeout', 'no answer in 30s', NULL, NULL),
               (6, 'http://h/moved', 1, 1, 1, 301, NULL, NULL, NULL, NULL),
               (7, 'http://h/final', 1, 1, 1, 200, NULL, NULL, NULL, ''),
               (8, 'http://h/noids', 1, 1, 1, 200, NULL, NULL, NULL, NULL),
               (9, 'http://dead/', 2, 0, 2, NULL, 'dns', 'no such host', NULL, NULL),
               (10, 'http://h/challenge', 1, 1, 1, 503, NULL, NULL, 'Just a moment...', NULL);
             INSERT INTO edges (src, dst, kind, fragment, line, col, anchor) VALUES
               (1, 2, 0, 'intro', 3, 5, 'ok'),
               (1, 2, 0, 'missing', 4, 1, 'x'),
               (1, 2, 0, 'missing', 9, 9, 'later'),
               (1, 2, 0, 'caf%C3%A9', 5, 2, 'encoded'),
               (1, 2, 0, 'TOP', 5, 9, 'top'),
               (1, 2, 0, '', 5, 12, 'empty'),
               (1, 8, 0, 'nothing', 6, 1, 'not judged'),
               (1, 3, 0, NULL, 7, 1, 'gone'),
               (1, 3, 0, 'frag', 7, 20, 'gone again'),
               (1, 4, 0, NULL, 8, 1, 'private'),
               (1, 5, 1, NULL, 8, 30, NULL),
               (1, 6, 0, NULL, 9, 1, 'moved'),
               (6, 7, 5, NULL, NULL, NULL, NULL),
               (1, 10, 0, NULL, 10, 1, 'challenge'),
               (2, 1, 0, 'top-section', 1, 1, 'home'),
               (2, 1, 0, 'nope', 2, 3, 'n');",
        )
        .unwrap();
        drop(conn);
        SqliteStore::open(&path, OpenMode::Read).unwrap()
    }

    fn links(store: &SqliteStore, classes: &str) -> Vec<BrokenLink> {
        let mut rows = Vec::new();
        run(store, classes.parse().unwrap(), &mut rows).unwrap();
        rows
    }

    /// (target, class, source, line, column).
    type Brief<'a> = (&'a str, &'a str, Option<&'a str>, Option<i64>, Option<i64>);

    fn summary(rows: &[BrokenLink]) -> Vec<Brief<'_>> {
        rows.iter()
            .map(|r| {
                let source = r.source.as_deref();
                (
                    r.target.as_str(),
                    r.class.as_str(),
                    source,
                    r.line,
                    r.column,
                )
            })
            .collect()
    }

    #[test]
    fn classes_and_fragments_in_target_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = crawl(dir.path());
        let rows = links(&store, "broken,fragment,blocked,transient");
        let doc = Some("http://h/doc");
        let home = Some("http://h/");
        assert_eq!(
            summary(&rows),
            [
                ("http://dead/", "broken", None, None, None),
                ("http://h/#nope", "fragment", doc, Some(2), Some(3)),
                ("http://h/challenge", "blocked", home, Some(10), Some(1)),
                // The first of the two links on the page: its place and its text.
                ("http://h/doc#missing", "fragment", home, Some(4), Some(1)),
                // A broken target's links are listed once, fragment or not.
                ("http://h/missing", "broken", home, Some(7), Some(1)),
                ("http://h/private", "blocked", home, Some(8), Some(1)),
                ("http://h/slow", "transient", home, Some(8), Some(30)),
            ]
        );
        assert_eq!(rows[3].anchor.as_deref(), Some("x"));
        assert_eq!(rows[3].fragment.as_deref(), Some("missing"));
        assert_eq!(rows[3].status, Some(200));
        assert_eq!(rows[4].anchor.as_deref(), Some("gone"));
        assert_eq!(rows[6].kind, Some("area"));
        assert_eq!(rows[6].error.as_deref(), Some("timeout"));
        assert_eq!(rows[0].detail.as_deref(), Some("no such host"));
    }

    #[test]
    fn the_class_filter_chooses_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = crawl(dir.path());
        let targets = |classes| -> Vec<String> {
            links(&store, classes)
                .into_iter()
                .map(|r| r.target)
                .collect()
        };
        assert_eq!(
            targets("fragment"),
            ["http://h/#nope", "http://h/doc#missing"]
        );
        // The link to the redirect, not the redirect's own hop.
        assert_eq!(targets("redirected"), ["http://h/moved"]);
        let moved = &links(&store, "redirected")[0];
        assert_eq!(moved.redirect.as_deref(), Some("http://h/final"));
        assert_eq!(targets("transient,blocked").len(), 3);
        let counts = super::super::count_links(&store, LinkClasses::ALL).unwrap();
        assert_eq!(
            counts.describe(LinkClasses::ALL),
            "broken 2, fragment 2, blocked 2, transient 1, redirected 1"
        );
    }

    #[test]
    fn the_table_has_the_columns_and_stops_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let store = crawl(dir.path());
        let mut buf = Vec::new();
        let mut o = Out::new(super::super::output::Tabular::Csv, Some(2), &mut buf);
        write(&store, LinkClasses::REPORTED, &mut o).unwrap();
        assert_eq!(o.finish().unwrap(), 2);
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "target,class,status,error,redirect,source,line,column,kind,anchor\n\
             http://dead/,broken,,dns,,,,,,\n\
             http://h/#nope,fragment,200,,,http://h/doc,2,3,a,n\n"
        );
    }
}
