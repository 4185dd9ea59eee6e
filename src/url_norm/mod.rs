//! Canonical URLs and crawl scope: pure functions, table-tested.
//!
//! Every extracted link is turned into a *canonical key*: the string that two spellings
//! of one resource share. The key is hashed into the visited set and matched against the
//! scope rules. The URL that is actually fetched is kept apart from the key: it is the
//! link as the `url` crate parsed it, minus the fragment, because servers may care about
//! spellings the key deliberately forgets (escape case, say).
//!
//! This is the crawler's hot path (dozens of links per page, millions of pages), so the
//! key has a buffer-reusing variant and a fast path for the common URL with no `%`.

// What the user typed, parsed once per crawl: forgiving where links are not.
mod seed;
// Run on every link, so kept free of anything built per crawl: the key, its hash, the
// host's queue key.
mod canonical;
// Built once from the seeds, then asked about every link: the only part with state.
mod scope;
// Named by limits, robots and filters as much as by scope: due to move to admission.

pub(crate) use canonical::ByKeyHash;
pub use canonical::{canonical_key, canonical_key_into, host_key, is_fetchable_scheme, key_hash};
pub use scope::{Miss, Scope, ScopeMode};
pub use seed::{parse_seed, read_seeds_file};

/// A seed or a pattern the user gave could not be used.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// The text does not parse as an absolute URL with a host.
    #[error("{input:?} is not a valid URL ({reason}); give an absolute http:// or https:// URL such as https://example.org/")]
    Invalid {
        /// What the user typed.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The URL parses, but trawl cannot fetch its scheme.
    #[error("{input:?} has scheme {scheme:?}; trawl crawls http and https only")]
    UnsupportedScheme {
        /// What the user typed.
        input: String,
        /// The scheme found.
        scheme: String,
    },
    /// An `--include` / `--exclude` regex does not compile.
    #[error("invalid --{option} pattern {pattern:?}: {reason}")]
    BadPattern {
        /// `"include"` or `"exclude"`.
        option: &'static str,
        /// The pattern as given.
        pattern: String,
        /// The regex compiler's message.
        reason: String,
    },
    /// The `seeds-file` cannot be read.
    #[error("cannot read the seeds file {path}: {source}; give a readable file of one URL per line, or - for standard input")]
    SeedsFile {
        /// The path given (`-` for standard input).
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line of the `seeds-file` is not a URL trawl can crawl.
    #[error("{path} line {line}: {source}; fix or remove the line (blank lines and lines starting with # are skipped)")]
    SeedsFileLine {
        /// The path given (`-` for standard input).
        path: String,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        source: Box<UrlError>,
    },
}
