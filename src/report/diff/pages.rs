//! The pages part of `trawl diff`: the two generations' fetched URLs, each with its
//! redirect target, merged by id (URL rows keep their ids from one generation to the
//! next), and each pair told into its kinds of change here.

use super::{row, Change, DiffOptions, Side};
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
const SIDE: &str = "u.id, coalesce(u.url, u.key), u.state, u.status, u.error_kind, u.title, \
                    u.content_hash, r.target";

/// One generation's fetched URLs in id order (its table's own order: no sort), each with
/// where it redirects.
fn side_query(side: &Side) -> String {
    let (urls, edges) = (side.urls(), side.edges());
    format!(
        "SELECT {SIDE} FROM {urls} u
         LEFT JOIN (SELECT e.src, min(coalesce(t.url, t.key)) AS target
                    FROM {edges} e JOIN {urls} t ON t.id = e.dst
                    WHERE e.kind = {redirect} GROUP BY e.src) r ON r.src = u.id
         WHERE u.state IN (1, 2)
         ORDER BY u.id",
        redirect = LinkKind::Redirect.code()
    )
}

/// A row of [`side_query`]: the URL's id, as shown, and what its generation says.
fn seen(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, Seen)> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        Seen {
            state: r.get(2)?,
            status: r.get(3)?,
            error_kind: r.get(4)?,
            title: r.get(5)?,
            content_hash: r.get(6)?,
            redirect: r.get(7)?,
        },
    ))
}

/// Write the pages part: both generations' rows, each in id order on its own statement
/// (one connection steps both), merged by id here. A full outer join in SQL took minutes
/// at 100,000 pages; this is two scans.
pub(super) fn run(
    store: &SqliteStore,
    from: Side,
    to: Side,
    options: &DiffOptions,
    o: &mut Out<'_>,
) -> Result<(), ReportError> {
    let err = |e| sql(store, e);
    let (mut sa, mut sb) = (
        store.conn().prepare(&side_query(&from)).map_err(err)?,
        store.conn().prepare(&side_query(&to)).map_err(err)?,
    );
    let mut ra = sa.query_and_then([], seen).map_err(err)?;
    let mut rb = sb.query_and_then([], seen).map_err(err)?;
    let (mut a, mut b) = (
        ra.next().transpose().map_err(err)?,
        rb.next().transpose().map_err(err)?,
    );
    while o.wants_more() {
        let (before, after) = match (&a, &b) {
            (None, None) => break,
            (Some(x), Some(y)) if x.0 == y.0 => (a.take(), b.take()),
            (Some(x), Some(y)) if x.0 < y.0 => (a.take(), None),
            (Some(_), None) => (a.take(), None),
            _ => (None, b.take()),
        };
        if before.is_some() {
            a = ra.next().transpose().map_err(err)?;
        }
        if after.is_some() {
            b = rb.next().transpose().map_err(err)?;
        }
        // The later generation's spelling of the URL, as the rest of the diff shows it.
        let url = match (&before, &after) {
            (_, Some(y)) => &y.1,
            (Some(x), None) => &x.1,
            (None, None) => unreachable!("one side has a row"),
        };
        let (x, y) = (before.as_ref().map(|r| &r.2), after.as_ref().map(|r| &r.2));
        for change in changes(x, y) {
            if options.wants(change) {
                let (f, t) = values(change, x, y);
                row(o, change, url.clone(), f, t, None, None)?;
            }
        }
    }
    Ok(())
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
