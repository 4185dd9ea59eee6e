//! The visited set: every URL trawl has seen, keyed by the 128-bit hash of its canonical
//! key, mapped to its id and the shallowest depth it was found at.
//!
//! Keys are hashes, not strings, so ten million URLs cost a few hundred megabytes rather
//! than gigabytes; at 128 bits the chance of any collision among 10^10 URLs is about
//! 10^-19, far below the chance of a disk error, so a collision is not checked for.
//! The row of a new URL is written to the store's pending buffer while its map shard is
//! still locked, so no other worker can see the id before its row exists.
//!
//! The depth is kept so that a URL first found along a long path and later along a short
//! one gets the short one (workers finish pages out of order, so discovery order is only
//! roughly breadth-first), and so that a URL skipped for `max-depth` is fetched after all
//! when a path within the limit turns up.

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

/// What the set knows of one URL, packed in 64 bits: id (39 bits, half a trillion URLs),
/// depth (24 bits), and whether it was skipped for being too deep (1 bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The URL's id.
    pub id: UrlId,
    /// Shallowest depth found.
    pub depth: u32,
    /// Stored as skipped for `max-depth`.
    pub too_deep: bool,
}

const ID_BITS: u32 = 39;
const DEPTH_BITS: u32 = 24;
const MAX_DEPTH: u32 = (1 << DEPTH_BITS) - 1;

impl Seen {
    fn pack(self) -> u64 {
        debug_assert!(self.id < 1 << ID_BITS, "URL id {} out of range", self.id);
        self.id
            | (u64::from(self.depth.min(MAX_DEPTH)) << ID_BITS)
            | (u64::from(self.too_deep) << 63)
    }
    fn unpack(v: u64) -> Seen {
        Seen {
            id: v & ((1 << ID_BITS) - 1),
            depth: ((v >> ID_BITS) & u64::from(MAX_DEPTH)) as u32,
            too_deep: v >> 63 == 1,
        }
    }
}

/// The outcome of [`Visited::lower_depth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lowered {
    /// The known depth was already as shallow.
    No,
    /// The depth was lowered.
    Depth(UrlId),
    /// The URL had been skipped for `max-depth` and is now within it: fetch it.
    Requeue(UrlId),
}

/// See the module doc.
#[derive(Default)]
pub struct Visited {
    map: DashMap<u128, u64, BuildHasherDefault<PreHashed>>,
}

impl Visited {
    /// An empty set.
    pub fn new() -> Visited {
        Visited::default()
    }

    /// What is known of a URL already seen.
    pub fn get(&self, hash: u128) -> Option<Seen> {
        self.map.get(&hash).map(|r| Seen::unpack(*r))
    }

    /// Record a URL known from the store (resume).
    pub fn insert_known(&self, hash: u128, seen: Seen) {
        self.map.insert(hash, seen.pack());
    }

    /// What is known of the URL, and whether it is new. For a new URL, `make` runs while
    /// the entry is locked and returns what to record.
    pub fn get_or_admit(&self, hash: u128, make: impl FnOnce() -> Seen) -> (Seen, bool) {
        match self.map.entry(hash) {
            Entry::Occupied(e) => (Seen::unpack(*e.get()), false),
            Entry::Vacant(e) => {
                let seen = make();
                e.insert(seen.pack());
                (seen, true)
            }
        }
    }

    /// A path of `depth` to the URL was found: keep it if shorter. `max_depth` (0 for no
    /// limit) decides whether a URL skipped for depth is now to be fetched.
    pub fn lower_depth(&self, hash: u128, depth: u32, max_depth: u32) -> Lowered {
        let Some(mut v) = self.map.get_mut(&hash) else {
            return Lowered::No;
        };
        let mut seen = Seen::unpack(*v);
        if depth >= seen.depth {
            return Lowered::No;
        }
        seen.depth = depth;
        let requeue = seen.too_deep && (max_depth == 0 || depth <= max_depth);
        if requeue {
            seen.too_deep = false;
        }
        *v = seen.pack();
        if requeue {
            Lowered::Requeue(seen.id)
        } else {
            Lowered::Depth(seen.id)
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

    fn seen(id: UrlId, depth: u32) -> Seen {
        Seen {
            id,
            depth,
            too_deep: false,
        }
    }

    #[test]
    fn admits_once() {
        let v = Visited::new();
        let mut calls = 0;
        let h = 7 << 70 | 3;
        assert_eq!(
            v.get_or_admit(h, || {
                calls += 1;
                seen(10, 2)
            }),
            (seen(10, 2), true)
        );
        assert_eq!(
            v.get_or_admit(h, || {
                calls += 1;
                seen(11, 2)
            }),
            (seen(10, 2), false)
        );
        assert_eq!(calls, 1);
        // Same low 64 bits, different high bits: a different URL.
        assert!(v.get_or_admit(8 << 70 | 3, || seen(12, 0)).1);
        assert_eq!(v.get(8 << 70 | 3), Some(seen(12, 0)));
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn packs_without_loss() {
        for s in [
            seen(0, 0),
            seen((1 << ID_BITS) - 1, MAX_DEPTH),
            Seen {
                id: 12345,
                depth: 7,
                too_deep: true,
            },
        ] {
            assert_eq!(Seen::unpack(s.pack()), s);
        }
    }

    #[test]
    fn shorter_paths_win_and_requeue_too_deep_urls() {
        let v = Visited::new();
        v.insert_known(1, seen(5, 4));
        assert_eq!(v.lower_depth(1, 4, 0), Lowered::No);
        assert_eq!(v.lower_depth(1, 2, 0), Lowered::Depth(5));
        assert_eq!(v.get(1).unwrap().depth, 2);
        v.insert_known(
            2,
            Seen {
                id: 6,
                depth: 4,
                too_deep: true,
            },
        );
        assert_eq!(v.lower_depth(2, 3, 2), Lowered::Depth(6), "still too deep");
        assert_eq!(v.lower_depth(2, 2, 2), Lowered::Requeue(6));
        assert!(!v.get(2).unwrap().too_deep);
        assert_eq!(v.lower_depth(9, 0, 0), Lowered::No, "unknown URL");
    }
}
