//! The pages part of `trawl diff`: one full outer join of the two generations' fetched
//! URLs by id (URL rows keep their ids from one generation to the next), with each
//! page's redirect target, keeping only the rows where something differs; SQLite orders
//! them by id. Each row is then told into its kinds of change here.

use super::{each_row, row, Change, DiffOptions, Side};
use crate::check::{classify, LinkClass};
use crate::link::LinkKind;
use crate::report::output::Out;
use crate::report::{sql, ReportError};
use crate::store::{SqliteStore, UrlState};

/// What one generation says of a fetched URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    state: i64,
    status: Option<i64>,
    error_kind: Option<String>,
    title: Option<String>,
    content_hash: Option<String>,
    redirect: Option<String>,
}

impl Seen {
    /// The status as the `from` / `to` columns show it: the HTTP status, or the error
    /// kind of a fetch that got no response.
    fn outcome(&self) -> String {
        match (self.status, &self.error_kind) {
            (Some(s), _) => s.to_string(),
            (None, Some(e)) => e.clone(),
            (None, None) => "-".into(),
        }
    }

    fn class(&self) -> Option<LinkClass> {
        let status = self.status.and_then(|s| u16::try_from(s).ok());
        UrlState::from_code(self.state).and_then(|state| {
            classify(
                state,
                status,
                self.error_kind.as_deref(),
                self.title.as_deref(),
            )
        })
    }

    fn ok(&self) -> bool {
        matches!(self.status, Some(200..=299))
    }
}

/// The changes of one URL seen as `a` before and `b` after, in [`Change::ALL`] order.
fn changes(a: Option<&Seen>, b: Option<&Seen>) -> Vec<Change> {
    let (a, b) = match (a, b) {
        (None, Some(_)) => return vec![Change::Added],
        (Some(_), None) => return vec![Change::Removed],
        (Some(a), Some(b)) => (a, b),
        (None, None) => return Vec::new(),
    };
    let mut found = Vec::new();
    let broken = |s: &Seen| s.class() == Some(LinkClass::Broken);
    if broken(b) && !broken(a) {
        found.push(Change::Removed);
    } else if (a.status, &a.error_kind) != (b.status, &b.error_kind) {
        found.push(Change::Status);
    }
    if a.redirect.is_some() && b.redirect.is_some() && a.redirect != b.redirect {
        found.push(Change::Redirect);
    }
    if a.ok() && b.ok() {
        if a.content_hash != b.content_hash {
            found.push(Change::Changed);
        }
        if a.title != b.title {
            found.push(Change::Title);
        }
    }
    found
}

/// The columns of one side, from the alias `u` and its redirect join `r`.
const SIDE: &str = "u.id, coalesce(u.url, u.key) AS shown, u.state, u.status, u.error_kind, \
                    u.title, u.content_hash, r.target";

fn side_query(side: &Side) -> String {
    let (urls, edges) = (side.urls(), side.edges());
    format!(
        "SELECT {SIDE} FROM {urls} u
         LEFT JOIN (SELECT e.src, min(coalesce(t.url, t.key)) AS target
                    FROM {edges} e JOIN {urls} t ON t.id = e.dst
                    WHERE e.kind = {redirect} GROUP BY e.src) r ON r.src = u.id
         WHERE u.state IN (1, 2)",
        redirect = LinkKind::Redirect.code()
    )
}

fn query(from: &Side, to: &Side) -> String {
    let differs = ["status", "error_kind", "title", "content_hash", "target"]
        .iter()
        .map(|c| format!("a.{c} IS NOT b.{c}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    format!(
        "WITH a AS ({}), b AS ({})
         SELECT coalesce(b.shown, a.shown),
                a.id, a.state, a.status, a.error_kind, a.title, a.content_hash, a.target,
                b.id, b.state, b.status, b.error_kind, b.title, b.content_hash, b.target
         FROM a FULL JOIN b ON a.id = b.id
         WHERE a.id IS NULL OR b.id IS NULL OR {differs}
         ORDER BY coalesce(a.id, b.id)",
        side_query(from),
        side_query(to)
    )
}

/// `row`'s side from column `first` on; `None` where that generation did not fetch it.
fn seen(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Option<Seen>> {
    if row.get::<_, Option<i64>>(first)?.is_none() {
        return Ok(None);
    }
    Ok(Some(Seen {
        state: row.get(first + 1)?,
        status: row.get(first + 2)?,
        error_kind: row.get(first + 3)?,
        title: row.get(first + 4)?,
        content_hash: row.get(first + 5)?,
        redirect: row.get(first + 6)?,
    }))
}

/// Write the pages part.
pub(super) fn run(
    store: &SqliteStore,
    from: Side,
    to: Side,
    options: &DiffOptions,
    o: &mut Out<'_>,
) -> Result<(), ReportError> {
    let err = |e| sql(store, e);
    each_row(store, &query(&from, &to), o, |r, o| {
        let url: String = r.get(0).map_err(err)?;
        let a = seen(r, 1).map_err(err)?;
        let b = seen(r, 8).map_err(err)?;
        for change in changes(a.as_ref(), b.as_ref()) {
            if !options.wants(change) {
                return Ok(());
            }
            let (x, y) = values(change, a.as_ref(), b.as_ref());
            row(o, change, url.clone(), x, y, None, None)?;
        }
        Ok(())
    })
}

/// The `from` and `to` columns of a change.
fn values(change: Change, a: Option<&Seen>, b: Option<&Seen>) -> (Option<String>, Option<String>) {
    let pick = |s: Option<&Seen>, f: fn(&Seen) -> Option<String>| s.and_then(f);
    match change {
        Change::Redirect => (
            pick(a, |s| s.redirect.clone()),
            pick(b, |s| s.redirect.clone()),
        ),
        Change::Title => (pick(a, |s| s.title.clone()), pick(b, |s| s.title.clone())),
        Change::Changed => (
            pick(a, |s| s.content_hash.clone()),
            pick(b, |s| s.content_hash.clone()),
        ),
        _ => (
            pick(a, |s| Some(s.outcome())),
            pick(b, |s| Some(s.outcome())),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(status: i64, title: &str, hash: &str) -> Seen {
        Seen {
            state: 1,
            status: Some(status),
            error_kind: None,
            title: Some(title.into()),
            content_hash: Some(hash.into()),
            redirect: None,
        }
    }

    #[test]
    fn kinds_of_change() {
        let a = seen(200, "A", "h1");
        assert_eq!(changes(None, Some(&a)), [Change::Added]);
        assert_eq!(changes(Some(&a), None), [Change::Removed]);
        assert_eq!(changes(Some(&a), Some(&a)), []);
        assert_eq!(
            changes(Some(&a), Some(&seen(200, "B", "h2"))),
            [Change::Changed, Change::Title]
        );
        // Gone is removed, not a status change; a 500 is a status change.
        assert_eq!(
            changes(Some(&a), Some(&seen(404, "", "x"))),
            [Change::Removed]
        );
        assert_eq!(
            changes(Some(&a), Some(&seen(503, "", "x"))),
            [Change::Status]
        );
        // A page that was gone already and is gone differently is a status change.
        let gone = seen(404, "", "x");
        assert_eq!(
            changes(Some(&gone), Some(&seen(410, "", "x"))),
            [Change::Status]
        );
        let failed = Seen {
            state: 2,
            status: None,
            error_kind: Some("dns".into()),
            title: None,
            content_hash: None,
            redirect: None,
        };
        assert_eq!(changes(Some(&a), Some(&failed)), [Change::Removed]);
        assert_eq!(failed.outcome(), "dns");
    }

    #[test]
    fn redirects_that_lead_elsewhere() {
        let r = |to: &str| Seen {
            redirect: Some(to.into()),
            ..seen(301, "", "")
        };
        assert_eq!(changes(Some(&r("/x")), Some(&r("/y"))), [Change::Redirect]);
        assert_eq!(
            values(Change::Redirect, Some(&r("/x")), Some(&r("/y"))),
            (Some("/x".into()), Some("/y".into()))
        );
    }
}
