//! Key names. Everything of a crawl starts with `trawl:` and carries a Redis Cluster hash
//! tag:
//!
//! - `{ID}` for the few crawl-wide keys;
//! - `{ID/HOST}` for a host's own state: its politeness (next start, pause, the tokens that
//!   count its requests in flight against `--per-host`), its budget, and which shards hold
//!   its URLs;
//! - one tag per shard (`CrawlKeys::shards`, chosen when the crawl is created) for the
//!   visited set, the queue, the leases and the results stream of each host's URLs that
//!   hash to that shard. A URL's shard comes from the hash of its key up to the query
//!   (`traps::query_group`), so the variants of one path share a shard and the
//!   `max-query-variants` count stays in one slot.
//!
//! So every step on a host's URLs is one Lua script on one shard's slot, and a single-site
//! crawl spreads over as many slots as there are shards.

/// Longest crawl id accepted.
const MAX_ID_LEN: usize = 100;

/// Why a crawl id is refused.
pub fn check_crawl_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("the crawl id is empty".into());
    }
    if id.len() > MAX_ID_LEN {
        return Err(format!("the crawl id is longer than {MAX_ID_LEN} bytes"));
    }
    if let Some(c) = id
        .chars()
        .find(|c| matches!(c, '{' | '}' | '/') || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "the crawl id contains {c:?}; use letters, digits, '-', '_', '.' or ':'"
        ));
    }
    Ok(())
}

/// The crawl-wide keys, and the crawl's shards.
#[derive(Debug, Clone)]
pub struct CrawlKeys {
    id: String,
    /// Hash: seeds, config, version, started and finished times, the shards' hash tags
    /// (`shards`, JSON), and where the results are collected (`results`: the collector's
    /// machine and SQLite file).
    pub meta: String,
    /// Set: every host that has keys.
    pub hosts: String,
    /// Set: the hosts that ever had a URL to fetch (a subset of `hosts`: not those known
    /// only from out-of-scope links). Dispatchers and the drain check walk this one.
    pub active: String,
    /// Counter bumped after every admission, so "nothing left anywhere" can be read
    /// without one atomic view of every host (see `queue::Queue::is_drained`).
    pub generation: String,
    /// Counter of URLs admitted for fetching, for `max-pages`.
    pub admitted: String,
    /// Hash: process id → its last heartbeat (JSON), for `trawl status`.
    pub processes: String,
    /// Set: results streams written to since the collector last looked (`Stream::member`;
    /// it reads every stream now and then too, so a mark lost with a process is no loss).
    pub unread: String,
    /// The shards' hash tags.
    shards: Vec<String>,
}

impl CrawlKeys {
    /// Keys of the crawl `id` (already checked with [`check_crawl_id`]), with one shard
    /// until [`CrawlKeys::set_shards`] says otherwise.
    pub fn new(id: &str) -> CrawlKeys {
        let p = format!("trawl:{{{id}}}:");
        CrawlKeys {
            id: id.to_owned(),
            meta: format!("{p}meta"),
            hosts: format!("{p}hosts"),
            active: format!("{p}active"),
            generation: format!("{p}gen"),
            admitted: format!("{p}admitted"),
            processes: format!("{p}procs"),
            unread: format!("{p}unread"),
            shards: vec![shard_tag(id, 0)],
        }
    }

    /// The crawl id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Use these shard tags (as the crawl's record lists them).
    pub fn set_shards(&mut self, tags: Vec<String>) {
        if !tags.is_empty() {
            self.shards = tags;
        }
    }

    /// The shards' hash tags.
    pub fn shard_tags(&self) -> &[String] {
        &self.shards
    }

    /// How many shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard of a URL, by the key hash of its canonical key up to the query
    /// (`traps::query_group`; the whole key's hash for a URL without a query).
    pub fn shard_of(&self, group_hash: u128) -> usize {
        (group_hash % self.shards.len() as u128) as usize
    }

    /// A host's own keys (`host[:port]`).
    pub fn host(&self, host: &str) -> HostKeys {
        let p = format!("trawl:{{{}/{host}}}:", self.id);
        HostKeys {
            state: format!("{p}state"),
            tokens: format!("{p}tokens"),
            shards: format!("{p}shards"),
            out: format!("{p}out"),
        }
    }

    /// The keys of `host`'s URLs in shard `shard`.
    pub fn part(&self, host: &str, shard: usize) -> PartKeys {
        let p = format!("trawl:{{{}}}:{host}:", self.shards[shard]);
        PartKeys {
            seen: format!("{p}seen"),
            queue: format!("{p}q"),
            leases: format!("{p}lease"),
            retries: format!("{p}retry"),
            tries: format!("{p}tries"),
            variants: format!("{p}variants"),
            counts: format!("{p}counts"),
            out: format!("{p}out"),
        }
    }

    /// The stream key of `stream`.
    pub fn stream(&self, stream: &Stream) -> String {
        match stream.shard {
            Some(i) => self.part(&stream.host, i).out,
            None => self.host(&stream.host).out,
        }
    }
}

/// The hash tag of shard `i` of crawl `id`, before any search for an even spread.
pub fn shard_tag(id: &str, i: usize) -> String {
    format!("{id}/s{i}")
}

/// One results stream: a host's own (pauses), or a host's part in a shard.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stream {
    /// `host[:port]`.
    pub host: String,
    /// The shard, or `None` for the host's own stream.
    pub shard: Option<usize>,
}

impl Stream {
    /// As a member of the `unread` set, and as the `collected` table names it.
    pub fn member(&self) -> String {
        match self.shard {
            Some(i) => format!("{}\t{i}", self.host),
            None => format!("{}\t-", self.host),
        }
    }

    /// Read a member back.
    pub fn parse(member: &str) -> Option<Stream> {
        let (host, shard) = member.rsplit_once('\t')?;
        let shard = match shard {
            "-" => None,
            n => Some(n.parse().ok()?),
        };
        Some(Stream {
            host: host.to_owned(),
            shard,
        })
    }
}

/// A host's own keys: one slot per host.
#[derive(Debug, Clone)]
pub struct HostKeys {
    /// Hash: `next_at`, `started_at`, `paused_until` (Unix ms), `admitted` (for
    /// `max-pages-per-host`), `sitemaps` (claimed).
    pub state: String,
    /// Sorted set: request slots taken (one token per URL being fetched, or per sitemap
    /// read), scored by expiry (Unix ms, Redis clock): what `--per-host` counts, crawl-wide.
    pub tokens: String,
    /// Set: the shards holding URLs of this host.
    pub shards: String,
    /// Stream: the host's pauses, on their way to the SQLite file (see `collect`).
    pub out: String,
}

/// The keys of one host's URLs in one shard: all in the shard's slot.
///
/// URLs are named by their key hash (`url_norm::key_hash`, 32 hex digits) wherever the text
/// is not needed: the URL text lives only in the queue (to be fetched) and in the results
/// stream (on its way to the SQLite file).
#[derive(Debug, Clone)]
pub struct PartKeys {
    /// Hash: key hash → `DEPTH` and a state letter (see `scripts`). The first write here
    /// decides which process owns a URL.
    pub seen: String,
    /// List: queue elements (key hash then the URL's JSON, see `queue::Queued`), oldest
    /// first.
    pub queue: String,
    /// Sorted set: leased queue elements scored by lease expiry (Unix ms, Redis clock).
    pub leases: String,
    /// Sorted set: queue elements waiting to be tried again, scored by when.
    pub retries: String,
    /// Hash: key hash → attempts made so far.
    pub tries: String,
    /// Hash: the hash of a URL without its query → URLs with a query admitted for fetching
    /// (for `max-query-variants`, see `traps::query_group`).
    pub variants: String,
    /// Hash: `stored` and `skipped`, for `trawl status`.
    pub counts: String,
    /// Stream: what happened to these URLs, on its way to the SQLite file (see `collect`).
    pub out: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_tags() {
        let mut k = CrawlKeys::new("site");
        assert_eq!(k.meta, "trawl:{site}:meta");
        assert_eq!(
            k.host("example.org:8080").tokens,
            "trawl:{site/example.org:8080}:tokens"
        );
        assert_eq!(
            k.part("example.org:8080", 0).queue,
            "trawl:{site/s0}:example.org:8080:q"
        );
        k.set_shards(vec!["site/s0".into(), "site/s1.7".into()]);
        assert_eq!(k.part("a", 1).seen, "trawl:{site/s1.7}:a:seen");
        let s = Stream {
            host: "a:80".into(),
            shard: Some(3),
        };
        assert_eq!(Stream::parse(&s.member()), Some(s));
        let s = Stream {
            host: "a".into(),
            shard: None,
        };
        assert_eq!(Stream::parse(&s.member()), Some(s));
        assert!(check_crawl_id("a-b_c.d:1").is_ok());
        assert!(check_crawl_id("").is_err());
        assert!(check_crawl_id("a{b").is_err());
        assert!(check_crawl_id("a b").is_err());
        assert!(check_crawl_id(&"x".repeat(101)).is_err());
    }
}
