//! Writing the entries of a Redis crawl's results streams into its SQLite file, through
//! the local store's row writers (`store::local::writer`): what each entry type means as
//! rows, and which URLs an entry needs written before it.

use std::collections::{HashMap, HashSet};

use rusqlite::Transaction;

use super::records::{
    decode_edges, decode_json_edges, decode_keyed_edges, ReadEdges, Row, EDGES_FIELD,
};
use super::ByKeyHash;
use super::DistError;
use crate::admit::SkipReason;
use crate::result::PageResult;
use crate::store::local::pending::{Edge, HostId, NewHost, NewUrl, PageRecord, PendingRows, UrlId};
use crate::store::local::writer::{write_page, write_rows};
use crate::store::StoreError;
use crate::url_norm::{host_key, key_hash};

/// One entry of a results stream: its id and its fields (names, then values; a page's
/// outlinks are binary).
#[derive(Debug)]
pub(super) struct Entry {
    pub id: String,
    pub fields: Vec<Vec<u8>>,
    /// The key hash of a URL without a row that held this entry back last time: until
    /// it has one, the entry is not read again.
    pub blocked: Option<u128>,
}

impl Entry {
    /// An entry as read from its stream.
    pub fn new(id: String, fields: Vec<Vec<u8>>) -> Entry {
        Entry {
            id,
            fields,
            blocked: None,
        }
    }

    fn bytes(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .chunks_exact(2)
            .find(|kv| kv[0] == name.as_bytes())
            .map(|kv| kv[1].as_slice())
    }

    /// A text field: empty when missing, an error when not UTF-8.
    fn field(&self, name: &str) -> Result<&str, WriteError> {
        std::str::from_utf8(self.bytes(name).unwrap_or_default()).map_err(|e| {
            WriteError::Corrupt(format!("the field {name:?} of an entry"), e.to_string())
        })
    }
}

/// A SQLite error on the file `shown`.
pub(super) fn sql_error(shown: &str, e: rusqlite::Error) -> DistError {
    DistError::Store(StoreError::Sqlite {
        path: shown.to_owned(),
        source: e,
    })
}

/// Why an entry could not be written.
pub(super) enum WriteError {
    Sql(rusqlite::Error),
    Corrupt(String, String),
}

impl WriteError {
    pub fn at(self, shown: &str) -> DistError {
        match self {
            WriteError::Sql(e) => sql_error(shown, e),
            WriteError::Corrupt(what, detail) => DistError::Corrupt { what, detail },
        }
    }
}

impl From<rusqlite::Error> for WriteError {
    fn from(e: rusqlite::Error) -> Self {
        WriteError::Sql(e)
    }
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, WriteError> {
    serde_json::from_str(text).map_err(|e| WriteError::Corrupt(what.to_owned(), e.to_string()))
}

/// The ids of the file's URLs (by key hash) and hosts, and the next of each to give.
#[derive(Default)]
pub(super) struct Known {
    pub urls: ByKeyHash<UrlId>,
    pub hosts: HashMap<String, HostId>,
    pub next_url: UrlId,
    pub next_host: HostId,
}

/// Writing a round's entries: the ids known, and whether unknown URLs get rows of their
/// own (`force`) rather than waiting for their rows.
pub(super) struct Ids<'a> {
    pub known: &'a mut Known,
    pub force: bool,
    /// The URL that held the last entry back.
    pub blocked: Option<u128>,
}

impl Ids<'_> {
    fn url(&self, key: &str) -> Option<UrlId> {
        self.known.urls.get(&key_hash(key)).copied()
    }

    fn host(&mut self, name: &str, rows: &mut PendingRows) -> HostId {
        if let Some(id) = self.known.hosts.get(name) {
            return *id;
        }
        let id = self.known.next_host;
        self.known.next_host += 1;
        self.known.hosts.insert(name.to_owned(), id);
        rows.hosts.push(NewHost {
            id,
            name: name.to_owned(),
        });
        id
    }

    fn assign(&mut self, key: &str) -> UrlId {
        let id = self.known.next_url;
        self.known.next_url += 1;
        self.known.urls.insert(key_hash(key), id);
        id
    }

    /// The id of `key`, or (when forced) a new row for it; `None`: wait for its row.
    fn need(&mut self, key: &str, rows: &mut PendingRows) -> Option<UrlId> {
        let hash = key_hash(key);
        if let Some(id) = self.known.urls.get(&hash) {
            return Some(*id);
        }
        if !self.force {
            self.blocked = Some(hash);
            return None;
        }
        let host = url::Url::parse(key)
            .map(|u| host_key(&u))
            .unwrap_or_default();
        let host = self.host(&host, rows);
        let id = self.assign(key);
        rows.urls.push(NewUrl {
            id,
            host,
            key: key.to_owned(),
            url: None,
            depth: 0,
            referrer: None,
            skip: None,
        });
        Some(id)
    }

    /// Write one entry of `host`'s stream; false when it names a URL not written yet.
    pub fn write(
        &mut self,
        tx: &Transaction<'_>,
        host: &str,
        e: &mut Entry,
    ) -> Result<bool, WriteError> {
        // An entry held back stays so, unread, until the URL that held it has a row.
        if let Some(hash) = e.blocked {
            if !self.force && !self.known.urls.contains_key(&hash) {
                return Ok(false);
            }
        }
        let mut rows = PendingRows::default();
        self.blocked = None;
        let written = self.write_entry(tx, host, e, &mut rows)?;
        e.blocked = self.blocked.take();
        if !written {
            // Not written: the host rows it made are not in the file, and their ids are
            // given again.
            for h in &rows.hosts {
                self.known.hosts.remove(&h.name);
                self.known.next_host = self.known.next_host.min(h.id);
            }
        }
        Ok(written)
    }

    fn write_entry(
        &mut self,
        tx: &Transaction<'_>,
        host: &str,
        e: &Entry,
        rows: &mut PendingRows,
    ) -> Result<bool, WriteError> {
        let host_id = self.host(host, rows);
        match e.field("t")? {
            "a" => {
                let lines = Lines::parse(e.field("r")?)?;
                // Referrers first: the entry is written whole or not at all.
                let mine: HashSet<u128> = lines.new_keys().map(key_hash).collect();
                for r in lines.referrers() {
                    if !mine.contains(&key_hash(r)) && self.need(r, rows).is_none() {
                        return Ok(false);
                    }
                }
                for line in &lines.0 {
                    self.admitted(line, host_id, rows);
                }
            }
            "p" => {
                let key = e.field("k")?;
                let result: PageResult = parse(e.field("r")?, key)?;
                let bad = |e: String| WriteError::Corrupt(format!("the outlinks of {key}"), e);
                let edges = match (e.bytes(EDGES_FIELD), e.bytes("b")) {
                    (Some(c), _) => {
                        self.edges(decode_edges(c).map_err(|e| bad(e.to_string()))?, rows)
                    }
                    (None, Some(b)) => {
                        let read = decode_keyed_edges(b).map_err(|e| bad(e.to_string()))?;
                        self.edges(read, rows)
                    }
                    (None, None) => match e.field("e")? {
                        "" => Some(Vec::new()),
                        t => {
                            self.edges(decode_json_edges(t).map_err(|e| bad(e.to_string()))?, rows)
                        }
                    },
                };
                let Some(edges) = edges else {
                    return Ok(false);
                };
                let Some(id) = self.need(key, rows) else {
                    return Ok(false);
                };
                write_rows(tx, rows)?;
                write_page(tx, &PageRecord { id, result, edges })?;
                return Ok(true);
            }
            "s" => {
                let key = e.field("k")?;
                let Some(id) = self.need(key, rows) else {
                    return Ok(false);
                };
                if let Ok(reason) = e.field("why")?.parse::<SkipReason>() {
                    rows.skips.push((id, reason));
                }
            }
            "h" => {
                if let Ok(until) = e.field("until")?.parse() {
                    rows.pauses.push((host_id, until));
                }
            }
            other => {
                return Err(WriteError::Corrupt(
                    format!("a results stream of {host}"),
                    format!("an entry of unknown type {other:?}"),
                ))
            }
        }
        write_rows(tx, rows)?;
        Ok(true)
    }

    /// A page's outlinks with their targets' ids; `None`: a target has no row yet (or,
    /// when forced, gets one).
    fn edges(&mut self, read: ReadEdges<'_>, rows: &mut PendingRows) -> Option<Vec<Edge>> {
        let mut ids = Vec::with_capacity(read.keys.len());
        for key in &read.keys {
            ids.push(self.need(key, rows)?);
        }
        // The indexes were checked against the keys when the entry was read.
        let edges = read.edges.into_iter();
        Some(
            edges
                .map(|(i, spec)| Edge {
                    dst: ids[i as usize],
                    spec,
                })
                .collect(),
        )
    }

    /// One line of an admission entry.
    fn admitted(&mut self, line: &Line, host: HostId, rows: &mut PendingRows) {
        let known = self.url(&line.row.key);
        match (line.code, known) {
            ('n', None) => {
                let referrer = line
                    .row
                    .referrer
                    .as_deref()
                    .and_then(|r| self.need(r, rows));
                let id = self.assign(&line.row.key);
                rows.urls.push(NewUrl {
                    id,
                    host,
                    key: line.row.key.clone(),
                    url: line.row.url.clone(),
                    depth: line.depth,
                    referrer,
                    skip: line.skip,
                });
            }
            ('n' | 'd', Some(id)) => rows.depths.push((id, line.depth)),
            ('q', Some(id)) => rows.requeues.push((id, line.depth)),
            _ => {}
        }
    }
}

/// One line of an admission entry (see `scripts::ADMIT`).
struct Line {
    code: char,
    skip: Option<SkipReason>,
    depth: u32,
    row: Row,
}

struct Lines(Vec<Line>);

impl Lines {
    fn parse(text: &str) -> Result<Lines, WriteError> {
        let bad = |detail: String| WriteError::Corrupt("an admission entry".into(), detail);
        let mut out = Vec::new();
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            let mut parts = line.splitn(4, '\t');
            let (Some(code), Some(skip), Some(depth), Some(row)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(bad(format!("line {line:?}")));
            };
            let skip = if skip.is_empty() {
                None
            } else {
                Some(skip.parse::<SkipReason>().map_err(bad)?)
            };
            out.push(Line {
                code: code.chars().next().unwrap_or(' '),
                skip,
                depth: depth.parse().map_err(|_| bad(format!("depth {depth:?}")))?,
                row: parse(row, "an admitted row")?,
            });
        }
        Ok(Lines(out))
    }

    fn new_keys(&self) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .filter(|l| l.code == 'n')
            .map(|l| l.row.key.as_str())
    }

    fn referrers(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|l| l.row.referrer.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_lines_parse() {
        let text = "n\t\t0\t{\"k\":\"http://a/\"}\nn\tout-of-scope\t1\t{\"k\":\"http://b/\",\"r\":\"http://a/\"}";
        let lines = Lines::parse(text).ok().unwrap();
        assert_eq!(lines.0.len(), 2);
        assert_eq!(lines.0[1].skip, Some(SkipReason::OutOfScope));
        assert_eq!(lines.referrers().collect::<Vec<_>>(), ["http://a/"]);
        assert!(Lines::parse("n\t\tx\t{}").is_err());
    }
}
