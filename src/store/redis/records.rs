//! What the scripts take and give: queue elements, rows for the results stream, leases,
//! budgets.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DistError;
use crate::admit::EdgeSpec;
use crate::extract::Position;
use crate::link::LinkKind;
use crate::url_norm::{key_hash, ByKeyHash};

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

/// One outlink of a page as its completion carries it: the target's canonical key and what
/// admission planned of the edge.
pub type StoredEdge = (String, EdgeSpec);

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
/// each distinct target's key once, and nothing for none. Half of a documentation page's
/// links go to a target it links to already (sidebars, a method's name and its `§`), and
/// every byte of a script's argument costs redis-server twice, copied and hashed whole by
/// its Lua (BENCHMARKS.md, "Redis: each target once per page").
pub fn encode_edges(edges: &[StoredEdge]) -> Vec<u8> {
    if edges.is_empty() {
        return Vec::new();
    }
    let mut index: ByKeyHash<u32> = ByKeyHash::default();
    let mut keys: Vec<&str> = Vec::new();
    let wire: Vec<CompactEdge<'_>> = edges
        .iter()
        .map(|(key, e)| {
            let i = *index.entry(key_hash(key)).or_insert_with(|| {
                keys.push(key);
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

/// A page's outlinks read back from [`encode_edges`]' form: each target's key, borrowed,
/// and its edge.
pub fn decode_edges(bytes: &[u8]) -> Result<Vec<(&str, EdgeSpec)>, postcard::Error> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let (keys, wire): (Vec<&str>, Vec<CompactEdge<'_>>) = postcard::from_bytes(bytes)?;
    wire.into_iter()
        .map(|(i, kind, nofollow, anchor, fragment, at)| {
            let key = *keys
                .get(i as usize)
                .ok_or(postcard::Error::DeserializeBadEncoding)?;
            Ok((key, owned_spec(kind, nofollow, anchor, fragment, at)))
        })
        .collect()
}

/// Outlinks in the `b` field, one key per edge: entries written before [`encode_edges`]
/// kept each target once, still read after an upgrade mid-crawl.
pub fn decode_keyed_edges(bytes: &[u8]) -> Result<Vec<(&str, EdgeSpec)>, postcard::Error> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let wire: Vec<WireEdge<'_>> = postcard::from_bytes(bytes)?;
    Ok(wire
        .into_iter()
        .map(|(key, kind, nofollow, anchor, fragment, at)| {
            (key, owned_spec(kind, nofollow, anchor, fragment, at))
        })
        .collect())
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
pub fn decode_json_edges(text: &str) -> Result<Vec<(String, EdgeSpec)>, serde_json::Error> {
    type JsonEdge = (
        String,
        i64,
        bool,
        Option<String>,
        Option<String>,
        Option<(u32, u32)>,
    );
    let wire: Vec<JsonEdge> = serde_json::from_str(text)?;
    Ok(wire
        .into_iter()
        .map(|(key, kind, nofollow, anchor, fragment, at)| {
            (key, spec_of(kind, nofollow, anchor, fragment, at))
        })
        .collect())
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
        let bytes = encode_edges(&edges);
        let back = decode_edges(&bytes).unwrap();
        let back: Vec<(String, EdgeSpec)> =
            back.into_iter().map(|(k, e)| (k.to_owned(), e)).collect();
        assert_eq!(back, edges);
        assert!(decode_edges(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(decode_edges(&encode_edges(&[])).unwrap(), vec![]);
        assert_eq!(decode_edges(&[]).unwrap(), vec![]);
    }

    #[test]
    fn a_target_linked_again_is_written_once() {
        let key = "http://a/a-long-path-linked-from-the-sidebar-and-the-body.html";
        let once = vec![(key.to_owned(), edge(Some("x"), Some((1, 2))))];
        let thrice: Vec<StoredEdge> = (0..3)
            .map(|i| (key.to_owned(), edge(Some("x"), Some((1, i)))))
            .collect();
        let (one, three) = (encode_edges(&once), encode_edges(&thrice));
        assert!(
            three.len() < one.len() + key.len(),
            "{} {}",
            one.len(),
            three.len()
        );
        let back = decode_edges(&three).unwrap();
        assert_eq!(back.len(), 3);
        assert!(back.iter().all(|(k, _)| *k == key));
        assert_eq!(back[2].1.at, Some(Position { line: 1, col: 2 }));
        // An index past the targets is a corrupt entry, not a panic.
        let bad = postcard::to_allocvec(&(
            vec![key],
            vec![(
                1u32,
                0i64,
                false,
                None::<&str>,
                None::<&str>,
                None::<(u32, u32)>,
            )],
        ))
        .unwrap();
        assert!(decode_edges(&bad).is_err());
    }

    #[test]
    fn outlinks_of_an_older_entry_keyed_per_edge_are_read() {
        let wire: Vec<WireEdge<'_>> = vec![
            ("http://a/x", 2, true, Some("t"), Some("f"), Some((4, 9))),
            ("http://a/x", 0, false, None, None, None),
        ];
        let bytes = postcard::to_allocvec(&wire).unwrap();
        let back = decode_keyed_edges(&bytes).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].0, "http://a/x");
        assert_eq!(back[0].1.kind, LinkKind::from_code(2).unwrap());
        assert_eq!(back[0].1.fragment.as_deref(), Some("f"));
        assert_eq!(back[1].1.at, None);
        assert_eq!(decode_keyed_edges(&[]).unwrap(), vec![]);
    }

    #[test]
    fn json_outlinks_of_an_older_entry_are_read() {
        let text = r#"[["http://a/x",0,false,"text",null,[2,5]]]"#;
        let back = decode_json_edges(text).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, "http://a/x");
        assert_eq!(back[0].1.anchor.as_deref(), Some("text"));
        assert_eq!(back[0].1.at, Some(Position { line: 2, col: 5 }));
        assert_eq!(back[0].1.kind, LinkKind::from_code(0).unwrap());
    }
}
