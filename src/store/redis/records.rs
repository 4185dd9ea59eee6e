//! What the scripts take and give: queue elements, rows for the results stream, leases,
//! budgets.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DistError;
use crate::admit::EdgeSpec;
use crate::extract::Position;
use crate::link::LinkKind;

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

/// One outlink as the results stream carries it: target key, kind code, nofollow, anchor
/// text, fragment, (line, column). A tuple, so each is a short JSON array.
pub type StoredEdge = (
    String,
    i64,
    bool,
    Option<String>,
    Option<String>,
    Option<(u32, u32)>,
);

/// The stream's form of an edge to the URL filed under `key`.
pub fn stored_edge(key: String, e: EdgeSpec) -> StoredEdge {
    let at = e.at.map(|p| (p.line, p.col));
    (key, e.kind.code(), e.nofollow, e.anchor, e.fragment, at)
}

/// An edge read back from the stream: the target's key and what admission planned of it.
pub fn edge_of(stored: StoredEdge) -> (String, EdgeSpec) {
    let (key, kind, nofollow, anchor, fragment, at) = stored;
    let spec = EdgeSpec {
        kind: LinkKind::from_code(kind).unwrap_or(LinkKind::A),
        nofollow,
        anchor,
        fragment,
        at: at.map(|(line, col)| Position { line, col }),
    };
    (key, spec)
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
