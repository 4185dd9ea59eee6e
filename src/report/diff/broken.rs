//! The broken-links part of `trawl diff`: each generation's `broken` report, produced by
//! the report itself on its own read connection and thread (so the rule for what is
//! broken is written once, in `check`), streamed here over a bounded channel in target
//! order and merged one target at a time. A link is (target, page, kind): `broken-new`
//! when the later generation lists it and the earlier did not, or in another class
//! (`from` names the earlier class); `broken-fixed` when only the earlier lists it.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use super::{row, Change, DiffOptions};
use crate::check::{LinkClass, LinkClasses};
use crate::report::broken::{self as report, BrokenLink, Sink};
use crate::report::output::Out;
use crate::report::{sql, ReportError};
use crate::store::{OpenMode, SqliteStore};

/// How many rows each reader may run ahead of the merge.
const AHEAD: usize = 256;

/// What a reader thread sends: a row, or the error that ended its report.
type Message = Result<BrokenLink, ReportError>;

/// Hands each row to the merge; stops the report when the merge has hung up.
struct Channel {
    tx: SyncSender<Message>,
    open: bool,
}

impl Sink for Channel {
    fn wants_more(&self) -> bool {
        self.open
    }

    fn link(&mut self, link: BrokenLink) -> Result<(), ReportError> {
        self.open = self.tx.send(Ok(link)).is_ok();
        Ok(())
    }
}

/// Run the `broken` report of generation `generation` of `path` into `tx`.
fn read(path: &Path, generation: i64, tx: SyncSender<Message>) {
    let mut sink = Channel {
        tx: tx.clone(),
        open: true,
    };
    let result = (|| {
        let store = SqliteStore::open(path, OpenMode::Read)?;
        store.read_generation(generation)?;
        let _snapshot = store
            .conn()
            .unchecked_transaction()
            .map_err(|e| sql(&store, e))?;
        report::run(&store, LinkClasses::REPORTED, &mut sink)
    })();
    if let Err(e) = result {
        let _ = tx.send(Err(e));
    }
}

/// One side's stream, read one target's rows at a time.
struct Stream {
    rx: Receiver<Message>,
    next: Option<BrokenLink>,
}

impl Stream {
    fn new(rx: Receiver<Message>) -> Result<Stream, ReportError> {
        let mut s = Stream { rx, next: None };
        s.next = s.recv()?;
        Ok(s)
    }

    fn recv(&self) -> Result<Option<BrokenLink>, ReportError> {
        self.rx.recv().ok().transpose()
    }

    /// The key of the next target, if any.
    fn key(&self) -> Option<&str> {
        self.next.as_ref().map(|l| l.key.as_str())
    }

    /// Every row of the next target when its key is `key`; none otherwise.
    fn take(&mut self, key: &str) -> Result<Vec<BrokenLink>, ReportError> {
        let mut group = Vec::new();
        while self.key() == Some(key) {
            group.push(self.next.take().expect("a row"));
            self.next = self.recv()?;
        }
        Ok(group)
    }
}

/// Write the broken-links part for generations `from` and `to` of `path`.
pub(super) fn run(
    path: &Path,
    from: i64,
    to: i64,
    options: &DiffOptions,
    o: &mut Out<'_>,
) -> Result<(), ReportError> {
    std::thread::scope(|scope| {
        let (tx_a, rx_a) = sync_channel(AHEAD);
        let (tx_b, rx_b) = sync_channel(AHEAD);
        scope.spawn(move || read(path, from, tx_a));
        scope.spawn(move || read(path, to, tx_b));
        // Dropping the receivers on return (an error, `--limit`) stops both readers.
        let mut a = Stream::new(rx_a)?;
        let mut b = Stream::new(rx_b)?;
        while o.wants_more() {
            let key = match (a.key(), b.key()) {
                (None, None) => break,
                (Some(x), Some(y)) => x.min(y).to_owned(),
                (Some(x), None) | (None, Some(x)) => x.to_owned(),
            };
            let (before, after) = (a.take(&key)?, b.take(&key)?);
            merge(&before, &after, options, o)?;
        }
        Ok(())
    })
}

/// What names a link within its target: the target as written (with its fragment), the
/// page, the link kind.
type Identity<'a> = (&'a str, Option<&'a str>, Option<&'static str>);

fn identity(l: &BrokenLink) -> Identity<'_> {
    (&l.target, l.source.as_deref(), l.kind)
}

/// The changes within one target: `before` and `after` are its rows in each generation.
fn merge(
    before: &[BrokenLink],
    after: &[BrokenLink],
    options: &DiffOptions,
    o: &mut Out<'_>,
) -> Result<(), ReportError> {
    // A popular target has many linking pages: look them up, never scan per row.
    let was: HashMap<Identity<'_>, LinkClass> =
        before.iter().map(|l| (identity(l), l.class)).collect();
    let now: HashSet<Identity<'_>> = after.iter().map(identity).collect();
    for link in after {
        let was = was.get(&identity(link)).copied();
        if was != Some(link.class) && options.wants(Change::BrokenNew) {
            emit(o, Change::BrokenNew, link, was, Some(link.class))?;
        }
    }
    for link in before {
        if !now.contains(&identity(link)) && options.wants(Change::BrokenFixed) {
            emit(o, Change::BrokenFixed, link, Some(link.class), None)?;
        }
    }
    Ok(())
}

fn emit(
    o: &mut Out<'_>,
    change: Change,
    link: &BrokenLink,
    from: Option<LinkClass>,
    to: Option<LinkClass>,
) -> Result<(), ReportError> {
    let name = |c: Option<LinkClass>| c.map(|c| c.as_str().to_owned());
    let (url, page) = (link.target.clone(), link.source.clone());
    row(o, change, url, name(from), name(to), page, link.kind)
}
