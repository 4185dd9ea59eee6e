//! The visited set: every URL trawl has seen, keyed by the 128-bit hash of its canonical
//! key, mapped to its id.
//!
//! Keys are hashes, not strings, so ten million URLs cost a few hundred megabytes rather
//! than gigabytes; at 128 bits the chance of any collision among 10^10 URLs is about
//! 10^-19, far below the chance of a disk error, so a collision is not checked for.
//! The row of a new URL is written to the store's pending buffer while its map shard is
//! still locked, so no other worker can see the id before its row exists.

use std::hash::{BuildHasherDefault, Hasher};

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;

use crate::store::UrlId;

/// The keys are already uniform hashes: hashing them again would only cost time.
#[derive(Default)]
pub struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64 ^ (n >> 64) as u64;
    }
}

/// See the module doc.
#[derive(Default)]
pub struct Visited {
    map: DashMap<u128, UrlId, BuildHasherDefault<PreHashed>>,
}

impl Visited {
    /// An empty set.
    pub fn new() -> Visited {
        Visited::default()
    }

    /// The id of a URL already seen.
    pub fn get(&self, hash: u128) -> Option<UrlId> {
        self.map.get(&hash).map(|r| *r)
    }

    /// Record a URL known from the store (resume).
    pub fn insert_known(&self, hash: u128, id: UrlId) {
        self.map.insert(hash, id);
    }

    /// The URL's id, and whether it is new. For a new URL, `make` runs while the entry is
    /// locked and returns the id to record.
    pub fn get_or_admit(&self, hash: u128, make: impl FnOnce() -> UrlId) -> (UrlId, bool) {
        match self.map.entry(hash) {
            Entry::Occupied(e) => (*e.get(), false),
            Entry::Vacant(e) => {
                let id = make();
                e.insert(id);
                (id, true)
            }
        }
    }

    /// URLs known.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No URL known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_once() {
        let v = Visited::new();
        let mut calls = 0;
        assert_eq!(
            v.get_or_admit(7 << 70 | 3, || {
                calls += 1;
                10
            }),
            (10, true)
        );
        assert_eq!(
            v.get_or_admit(7 << 70 | 3, || {
                calls += 1;
                11
            }),
            (10, false)
        );
        assert_eq!(calls, 1);
        // Same low 64 bits, different high bits: a different URL.
        assert_eq!(v.get_or_admit(8 << 70 | 3, || 12), (12, true));
        assert_eq!(v.get(8 << 70 | 3), Some(12));
        assert_eq!(v.len(), 2);
    }
}
