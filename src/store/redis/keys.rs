//! Key names. Everything of a crawl starts with `trawl:` and carries a Redis Cluster hash
//! tag: `{ID}` for the few crawl-wide keys, `{ID/HOST}` for a host's keys. A host's keys
//! share one slot, so each step on a host (admit, take, complete) is one Lua script; the
//! hosts of a crawl spread over the cluster's slots.

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

/// The crawl-wide keys.
#[derive(Debug, Clone)]
pub struct CrawlKeys {
    id: String,
    /// Hash: seeds, config, version, started and finished times, and where the results
    /// are collected (`results`: the collector's machine and SQLite file).
    pub meta: String,
    /// Set: every host that has keys (`HostKeys`).
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
    /// Set: hosts whose results stream was written to since the collector last looked
    /// (it reads every stream now and then too, so a mark lost with a process is no loss).
    pub unread: String,
}

impl CrawlKeys {
    /// Keys of the crawl `id` (already checked with [`check_crawl_id`]).
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
        }
    }

    /// The crawl id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Keys of one host (`host[:port]`).
    pub fn host(&self, host: &str) -> HostKeys {
        let p = format!("trawl:{{{}/{host}}}:", self.id);
        HostKeys {
            seen: format!("{p}seen"),
            queue: format!("{p}q"),
            leases: format!("{p}lease"),
            retries: format!("{p}retry"),
            tries: format!("{p}tries"),
            state: format!("{p}state"),
            out: format!("{p}out"),
            variants: format!("{p}variants"),
        }
    }
}

/// One host's keys: all in one cluster slot.
///
/// URLs are named by their key hash (`url_norm::key_hash`, 32 hex digits) wherever the text
/// is not needed: the URL text lives only in the queue (to be fetched) and in the results
/// stream (on its way to the SQLite file).
#[derive(Debug, Clone)]
pub struct HostKeys {
    /// Hash: key hash → `DEPTH` and a state letter (see `scripts`). `HSETNX`-like here
    /// decides which process owns a URL.
    pub seen: String,
    /// List: queue elements (key hash then the job's JSON, see `queue::Element`), oldest
    /// first.
    pub queue: String,
    /// Sorted set: leased queue elements scored by lease expiry (Unix ms, Redis clock).
    pub leases: String,
    /// Sorted set: queue elements waiting to be tried again, scored by when.
    pub retries: String,
    /// Hash: key hash → attempts made so far.
    pub tries: String,
    /// Hash: `next_at`, `paused_until` (Unix ms), `admitted` (for `max-pages-per-host`),
    /// `stored` and `skipped` (counts for `trawl status`).
    pub state: String,
    /// Stream: the host's results on their way to the SQLite file (see `collect`).
    pub out: String,
    /// Hash: the hash of a URL without its query → URLs with a query admitted for fetching
    /// (for `max-query-variants`, see `traps::query_group`).
    pub variants: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_tags() {
        let k = CrawlKeys::new("site");
        assert_eq!(k.meta, "trawl:{site}:meta");
        let h = k.host("example.org:8080");
        assert_eq!(h.queue, "trawl:{site/example.org:8080}:q");
        assert!(check_crawl_id("a-b_c.d:1").is_ok());
        assert!(check_crawl_id("").is_err());
        assert!(check_crawl_id("a{b").is_err());
        assert!(check_crawl_id("a b").is_err());
        assert!(check_crawl_id(&"x".repeat(101)).is_err());
    }
}
