//! What the scripts take and give: queue elements, rows for the results stream, leases,
//! budgets.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DistError;
use crate::admit::EdgeSpec;
use crate::extract::Position;
use crate::link::LinkKind;
use crate::url_norm::ByKeyHash;

/// A URL in a host's queue: what a process needs to fetch it. The queue element is its key
/// hash (32 hex digits, so the scripts find its `seen` entry without parsing JSON) followed
/// by this as JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Queued {
    /// Canonical key.
    #[serde(rename = "k")]
    pub key: String,
    /// The URL to fetch, when it differs from the canonical key.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// For a redirect target: the key hashes of the chain that led here, for loop
    /// detection (hexadecimal: Lua numbers are doubles).
    #[serde(
        rename = "c",
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "hex_hashes"
    )]
    pub chain: Vec<u128>,
    /// In a refresh: the previous generation's validators, to ask conditionally.
    #[serde(rename = "v", default, skip_serializing_if = "Option::is_none")]
    pub validators: Option<crate::refresh::Validators>,
}

impl Queued {
    /// The queue element: `hash` then the JSON.
    pub fn element(&self, hash: &str) -> String {
        let json = serde_json::to_string(self).expect("serialising a queued URL");
        format!("{hash}{json}")
    }

    /// Read a queue element back.
    pub fn parse(element: &str) -> Result<Queued, DistError> {
        let json = element.get(HASH_LEN..).unwrap_or_default();
        serde_json::from_str(json).map_err(|e| DistError::Corrupt {
            what: format!("the queue element {element:?}"),
            detail: e.to_string(),
        })
    }
}

/// Hex digits of a key hash.
pub const HASH_LEN: usize = 32;

/// A newly known URL's row as the results stream carries it (depth and skip reason travel
/// beside it, decided by the admission script).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Row {
    /// Canonical key.
    #[serde(rename = "k")]
    pub key: String,
    /// The URL, when it differs from the key.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Canonical key of the first page linking here.
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
}

/// `Vec<u128>` as hexadecimal strings.
mod hex_hashes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u128], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|h| format!("{h:032x}")))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u128>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|h| u128::from_str_radix(h, 16).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// A URL to admit, as the admission script takes it.
#[derive(Debug, Clone)]
pub struct Admit {
    /// Its key hash (hex).
    pub hash: String,
    /// Its queue element.
    pub element: String,
    /// Its row JSON for the results stream.
    pub row: String,
    /// Click depth where it was found.
    pub depth: u32,
    /// Why it will not be fetched, if so (as judged where it was found now).
    pub skip: Option<&'static str>,
    /// Found by a link that is followed (not on a `nofollow` page).
    pub follow: bool,
    /// The hash of its query group (`traps::query_group`), if it has a query.
    pub group: Option<String>,
}

/// What admitting a batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Admitted {
    /// URLs known to nobody before.
    pub new: usize,
    /// Known URLs held back (too deep, nofollow) and now queued, found along a shorter
    /// path or by a followed link.
    pub requeued: usize,
}

impl Admitted {
    /// Whether work changed hands (see [`Queue::is_drained`]).
    pub fn moved(&self) -> bool {
        self.new + self.requeued > 0
    }
}

/// A leased URL.
#[derive(Debug, Clone)]
pub struct Lease {
    /// `host[:port]`.
    pub host: String,
    /// The shard it is in.
    pub shard: usize,
    /// The host's token its fetch holds (see `scripts::GRANT`).
    pub token: String,
    /// Its queue element, as leased (the member of the leases set).
    pub element: String,
    /// Its key hash (hex).
    pub hash: String,
    /// What to fetch.
    pub queued: Queued,
    /// Click depth now.
    pub depth: u32,
    /// Attempts made before this one.
    pub tries: u32,
}

/// What asking a host for request slots gave.
#[derive(Debug, Default)]
pub struct Granted {
    /// Wait this long before asking the host again (paused, or inside its interval).
    pub wait: Duration,
    /// The host's slots still free crawl-wide after this take.
    pub room: usize,
    /// Tokens now ours, one per request.
    pub tokens: Vec<String>,
}

/// What a pop from one host's part in a shard gave.
#[derive(Debug, Default)]
pub struct Popped {
    /// Expired leases put back in the queue.
    pub reclaimed: u64,
    /// URLs now leased to us, each still to be given a token.
    pub leases: Vec<Lease>,
}

/// One outlink of a page as its completion carries it: the target's canonical key, its
/// [`key_hash`](crate::url_norm::key_hash) (taken once, when the link was planned) and what admission planned of the
/// edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEdge {
    pub key: String,
    pub hash: u128,
    pub spec: EdgeSpec,
}

/// An outlink as entries of the `b` field carry it: target key, kind code, nofollow,
/// anchor text, fragment, (line, column). A tuple of borrowed strings: a page's outlinks
/// are read back without a copy of each string.
type WireEdge<'a> = (
    &'a str,
    i64,
    bool,
    Option<&'a str>,
    Option<&'a str>,
    Option<(u32, u32)>,
);

/// An outlink in the `c` field: [`WireEdge`] with the index of its target in the page's
/// list of distinct targets instead of the key.
type CompactEdge<'a> = (
    u32,
    i64,
    bool,
    Option<&'a str>,
    Option<&'a str>,
    Option<(u32, u32)>,
);

/// The stream entry's field for [`encode_edges`]' form.
pub const EDGES_FIELD: &str = "c";

/// A page's outlinks as the results stream carries them (the entry's [`EDGES_FIELD`]):
/// postcard, not JSON (whose escaping and parsing back were 6-7 % of a Redis crawl's CPU),
/// and nothing for none. Each distinct target's key is written once, as the length it
/// shares with the key before it and the rest: half of a documentation page's links go to
/// a target it links to already (sidebars, a method's name and its `§`), its targets share
/// the site's address and most of their path, and every byte of a script's argument costs
/// redis-server twice, copied and hashed whole by its Lua (BENCHMARKS.md, "Redis: each
/// target once per page").
pub fn encode_edges(edges: &[StoredEdge]) -> Vec<u8> {
    if edges.is_empty() {
        return Vec::new();
    }
    let mut index: ByKeyHash<u32> = ByKeyHash::default();
    let mut keys: Vec<(u32, &str)> = Vec::new();
    let mut last = "";
    let wire: Vec<CompactEdge<'_>> = edges
        .iter()
        .map(|StoredEdge { key, hash, spec: e }| {
            let i = *index.entry(*hash).or_insert_with(|| {
                let shared = shared_prefix(last, key);
                keys.push((shared as u32, &key[shared..]));
                last = key.as_str();
                keys.len() as u32 - 1
            });
            (
                i,
                e.kind.code(),
                e.nofollow,
                e.anchor.as_deref(),
                e.fragment.as_deref(),
                e.at.map(|p| (p.line, p.col)),
            )
        })
        .collect();
    postcard::to_allocvec(&(keys, wire)).expect("serialising outlinks")
}

/// How many leading bytes `a` and `b` share, cut back to a character's start.
fn shared_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // The bytes before `n` are the same in both, so a boundary in one is one in the other.
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// A page's outlinks as read back: its distinct targets' keys, and each edge with the
/// index of its target among them (so that each target's id is looked up once).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReadEdges<'a> {
    /// The targets' canonical keys, borrowed from the entry where it holds them whole.
    pub keys: Vec<Cow<'a, str>>,
    /// Each edge, in page order, with the index of its key in `keys`.
    pub edges: Vec<(u32, EdgeSpec)>,
}

impl<'a> ReadEdges<'a> {
    /// One key per edge, in order (the older forms).
    fn keyed<K>(
        read: impl Iterator<Item = (K, EdgeSpec)>,
        key: impl Fn(K) -> Cow<'a, str>,
    ) -> ReadEdges<'a> {
        let mut out = ReadEdges::default();
        for (i, (k, spec)) in read.enumerate() {
            out.keys.push(key(k));
            out.edges.push((i as u32, spec));
        }
        out
    }
}

/// A page's outlinks read back from [`encode_edges`]' form.
pub fn decode_edges(bytes: &[u8]) -> Result<ReadEdges<'_>, postcard::Error> {
    if bytes.is_empty() {
        return Ok(ReadEdges::default());
    }
    let bad = postcard::Error::DeserializeBadEncoding;
    let (table, wire): (Vec<(u32, &str)>, Vec<CompactEdge<'_>>) = postcard::from_bytes(bytes)?;
    let mut keys: Vec<Cow<'_, str>> = Vec::with_capacity(table.len());
    for (shared, rest) in table {
        let key = match shared {
            0 => Cow::Borrowed(rest),
            n => {
                let last = keys.last().ok_or(bad.clone())?;
                let head = last.get(..n as usize).ok_or(bad.clone())?;
                Cow::Owned([head, rest].concat())
            }
        };
        keys.push(key);
    }
    let edges = wire
        .into_iter()
        .map(|(i, kind, nofollow, anchor, fragment, at)| {
            keys.get(i as usize).ok_or(bad.clone())?;
            Ok((i, owned_spec(kind, nofollow, anchor, fragment, at)))
        })
        .collect::<Result<_, _>>()?;
    Ok(ReadEdges { keys, edges })
}

/// Outlinks in the `b` field, one key per edge: entries written before [`encode_edges`]
/// kept each target once, still read after an upgrade mid-crawl.
pub fn decode_keyed_edges(bytes: &[u8]) -> Result<ReadEdges<'_>, postcard::Error> {
    if bytes.is_empty() {
        return Ok(ReadEdges::default());
    }
    let wire: Vec<WireEdge<'_>> = postcard::from_bytes(bytes)?;
    let read = wire
        .into_iter()
        .map(|(key, kind, nofollow, anchor, fragment, at)| {
            (key, owned_spec(kind, nofollow, anchor, fragment, at))
        });
    Ok(ReadEdges::keyed(read, Cow::Borrowed))
}

fn owned_spec(
    kind: i64,
    nofollow: bool,
    anchor: Option<&str>,
    fragment: Option<&str>,
    at: Option<(u32, u32)>,
) -> EdgeSpec {
    let (anchor, fragment) = (anchor.map(str::to_owned), fragment.map(str::to_owned));
    spec_of(kind, nofollow, anchor, fragment, at)
}

/// Outlinks as JSON, the `e` field of entries written before [`encode_edges`]: a
/// crawl's streams may still hold some when its processes are upgraded mid-crawl.
pub fn decode_json_edges(text: &str) -> Result<ReadEdges<'static>, serde_json::Error> {
    type JsonEdge = (
        String,
        i64,
        bool,
        Option<String>,
        Option<String>,
        Option<(u32, u32)>,
    );
    let wire: Vec<JsonEdge> = serde_json::from_str(text)?;
    let read = wire
        .into_iter()
        .map(|(key, kind, nofollow, anchor, fragment, at)| {
            (key, spec_of(kind, nofollow, anchor, fragment, at))
        });
    Ok(ReadEdges::keyed(read, Cow::Owned))
}

fn spec_of(
    kind: i64,
    nofollow: bool,
    anchor: Option<String>,
    fragment: Option<String>,
    at: Option<(u32, u32)>,
) -> EdgeSpec {
    EdgeSpec {
        kind: LinkKind::from_code(kind).unwrap_or(LinkKind::A),
        nofollow,
        anchor,
        fragment,
        at: at.map(|(line, col)| Position { line, col }),
    }
}

/// Entries a host's results stream may hold before a completing process waits for the
/// collector: the fixed buffer of results in transit.
pub const RESULTS_IN_TRANSIT: usize = 1000;

/// Limits the admission scripts enforce.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// `max-pages`, 0 for none.
    pub max_pages: u64,
    /// `max-pages-per-host`, 0 for none.
    pub max_pages_per_host: u64,
    /// `max-depth`, 0 for none: a URL held back as too deep is queued when a shorter path
    /// brings it within.
    pub max_depth: u32,
    /// `max-query-variants`, 0 for none.
    pub max_query_variants: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edges as a completion carries them, from (key, edge) pairs.
    fn stored(pairs: &[(String, EdgeSpec)]) -> Vec<StoredEdge> {
        let stored = |(key, spec): &(String, EdgeSpec)| StoredEdge {
            key: key.clone(),
            hash: crate::url_norm::key_hash(key),
            spec: spec.clone(),
        };
        pairs.iter().map(stored).collect()
    }

    /// Each edge with its key, as written.
    fn flat(read: ReadEdges<'_>) -> Vec<(String, EdgeSpec)> {
        let keys = &read.keys;
        read.edges
            .iter()
            .map(|(i, e)| (keys[*i as usize].to_string(), e.clone()))
            .collect()
    }

    fn edge(anchor: Option<&str>, at: Option<(u32, u32)>) -> EdgeSpec {
        EdgeSpec {
            kind: LinkKind::Iframe,
            nofollow: true,
            anchor: anchor.map(str::to_owned),
            fragment: Some("sec-2".into()),
            at: at.map(|(line, col)| Position { line, col }),
        }
    }

    #[test]
    fn outlinks_read_back_as_written() {
        let edges = vec![
            (
                "http://a/\u{e9}t\u{e9}".to_owned(),
                edge(Some("a \"b\"\n\t\u{1f600}"), Some((3, 17))),
            ),
            ("http://a/x".to_owned(), EdgeSpec::plain(LinkKind::Redirect)),
            ("http://a/y".to_owned(), edge(None, None)),
        ];
        let bytes = encode_edges(&stored(&edges));
        assert_eq!(flat(decode_edges(&bytes).unwrap()), edges);
        assert!(decode_edges(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(
            decode_edges(&encode_edges(&[])).unwrap(),
            ReadEdges::default()
        );
        assert_eq!(decode_edges(&[]).unwrap(), ReadEdges::default());
    }

    #[test]
    fn a_target_linked_again_is_written_once() {
        let key = "http://a/a-long-path-linked-from-the-sidebar-and-the-body.html";
        let once = vec![(key.to_owned(), edge(Some("x"), Some((1, 2))))];
        let thrice: Vec<(String, EdgeSpec)> = (0..3)
            .map(|i| (key.to_owned(), edge(Some("x"), Some((1, i)))))
            .collect();
        let (one, three) = (encode_edges(&stored(&once)), encode_edges(&stored(&thrice)));
        assert!(three.len() < one.len() + key.len(), "{one:?} {three:?}");
        let read = decode_edges(&three).unwrap();
        assert_eq!(read.keys, [key]);
        assert_eq!(flat(read), thrice);
    }

    #[test]
    fn keys_are_written_as_what_they_share_with_the_one_before_and_the_rest() {
        let keys = [
            "http://a/std/vec/struct.Vec.html",
            "http://a/std/vec/struct.Vec.html?x",
            "http://a/std/vec/index.html",
            "http://b/",
            // Shared bytes that end inside a character are not cut there.
            "http://b/\u{e9}t\u{e9}",
            "http://b/\u{e8}",
        ];
        let edges: Vec<(String, EdgeSpec)> = keys
            .iter()
            .chain(&keys)
            .map(|k| (k.to_string(), edge(None, None)))
            .collect();
        let bytes = encode_edges(&stored(&edges));
        let holds = |k: &str| bytes.windows(k.len()).any(|w| w == k.as_bytes());
        assert!(holds(keys[0]), "the first key is whole");
        assert!(
            !holds(keys[1]) && !holds(keys[2]) && !holds(keys[3]),
            "the others are not"
        );
        let read = decode_edges(&bytes).unwrap();
        assert_eq!(read.keys, keys);
        assert_eq!(flat(read), edges);
        assert_eq!(shared_prefix("\u{e9}", "\u{e8}"), 0);
        assert_eq!(shared_prefix("ab\u{e9}", "ab\u{e9}c"), 4);
    }

    #[test]
    fn a_corrupt_index_or_shared_length_is_an_error() {
        type Table<'a> = Vec<(u32, &'a str)>;
        let none = |i: u32| {
            (
                i,
                0i64,
                false,
                None::<&str>,
                None::<&str>,
                None::<(u32, u32)>,
            )
        };
        let write = |keys: Table<'_>, edges| postcard::to_allocvec(&(keys, edges)).unwrap();
        // An index past the targets.
        assert!(decode_edges(&write(vec![(0, "http://a/")], vec![none(1)])).is_err());
        // A shared length past the key before, or with no key before.
        assert!(decode_edges(&write(vec![(0, "a"), (2, "b")], vec![none(0)])).is_err());
        assert!(decode_edges(&write(vec![(1, "a")], vec![none(0)])).is_err());
        assert!(decode_edges(&write(vec![(0, "ab"), (1, "c")], vec![none(1)])).is_ok());
    }

    #[test]
    fn outlinks_of_an_older_entry_keyed_per_edge_are_read() {
        let wire: Vec<WireEdge<'_>> = vec![
            ("http://a/x", 2, true, Some("t"), Some("f"), Some((4, 9))),
            ("http://a/x", 0, false, None, None, None),
        ];
        let bytes = postcard::to_allocvec(&wire).unwrap();
        let back = flat(decode_keyed_edges(&bytes).unwrap());
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].0, "http://a/x");
        assert_eq!(back[0].1.kind, LinkKind::from_code(2).unwrap());
        assert_eq!(back[0].1.fragment.as_deref(), Some("f"));
        assert_eq!(back[1].1.at, None);
        assert_eq!(decode_keyed_edges(&[]).unwrap(), ReadEdges::default());
    }

    #[test]
    fn json_outlinks_of_an_older_entry_are_read() {
        let text = r#"[["http://a/x",0,false,"text",null,[2,5]]]"#;
        let back = flat(decode_json_edges(text).unwrap());
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, "http://a/x");
        assert_eq!(back[0].1.anchor.as_deref(), Some("text"));
        assert_eq!(back[0].1.at, Some(Position { line: 2, col: 5 }));
        assert_eq!(back[0].1.kind, LinkKind::from_code(0).unwrap());
    }
}
