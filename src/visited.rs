//! The visited set: every URL trawl has seen, keyed by the 128-bit hash of its canonical
//! key, mapped to its id and the shallowest depth it was found at.
//!
//! Keys are hashes, not strings, so ten million URLs cost a few hundred megabytes rather
//! than gigabytes; at 128 bits the chance of any collision among 10^10 URLs is about
//! 10^-19, far below the chance of a disk error, so a collision is not checked for.
//!
//! The set is the one structure that grows with every URL discovered, so it is laid out
//! for memory rather than taken off the shelf: 24 bytes per entry (the hash and the
//! packed [`Seen`]), in 64 shards, each an open-addressing table with linear probing
//! that grows by an eighth when 85% full. It is therefore always 75-85% full, about
//! 30 bytes per URL, where a hash map that doubles is between 44% and 87% full (up to
//! 57 bytes per URL; and since hashes are uniform, every shard of a sharded map doubles
//! at about the same count). Nothing is ever removed, so there are no tombstones.
//! The row of a new URL is written to the store's pending buffer while its map shard is
//! still locked, so no other worker can see the id before its row exists.
//!
//! The depth is kept so that a URL first found along a long path and later along a short
//! one gets the short one (workers finish pages out of order, so discovery order is only
//! roughly breadth-first), and so that a URL skipped for `max-depth` is fetched after all
//! when a path within the limit turns up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::store::UrlId;

/// Why a known URL is held back from fetching although it could still be fetched later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Held {
    /// Not held: fetched, queued, or skipped for good.
    #[default]
    No,
    /// Skipped for `max-depth`: a shorter path may bring it within the limit.
    TooDeep,
    /// Linked only from `nofollow` pages: a followed link may turn up.
    Nofollow,
}

/// What the set knows of one URL, packed in 64 bits: id (39 bits, half a trillion URLs),
/// depth (23 bits), and why it is held back (2 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The URL's id.
    pub id: UrlId,
    /// Shallowest depth found.
    pub depth: u32,
    /// Held back from fetching, and why.
    pub held: Held,
}

const ID_BITS: u32 = 39;
const DEPTH_BITS: u32 = 23;
const MAX_DEPTH: u32 = (1 << DEPTH_BITS) - 1;
const HELD_SHIFT: u32 = ID_BITS + DEPTH_BITS;

impl Seen {
    fn pack(self) -> u64 {
        debug_assert!(self.id < 1 << ID_BITS, "URL id {} out of range", self.id);
        let held = match self.held {
            Held::No => 0u64,
            Held::TooDeep => 1,
            Held::Nofollow => 2,
        };
        self.id | (u64::from(self.depth.min(MAX_DEPTH)) << ID_BITS) | (held << HELD_SHIFT)
    }

    fn unpack(v: u64) -> Seen {
        Seen {
            id: v & ((1 << ID_BITS) - 1),
            depth: ((v >> ID_BITS) & u64::from(MAX_DEPTH)) as u32,
            held: match v >> HELD_SHIFT {
                1 => Held::TooDeep,
                2 => Held::Nofollow,
                _ => Held::No,
            },
        }
    }

    /// Whether finding the URL again at `depth`, by a link that is (`follow`) or is not
    /// followed, could change anything.
    pub fn news(&self, depth: u32, follow: bool) -> bool {
        depth < self.depth || (follow && self.held == Held::Nofollow)
    }
}

/// The outcome of [`Visited::found_again`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lowered {
    /// The known depth was already as shallow.
    No,
    /// The depth was lowered.
    Depth(UrlId),
    /// The URL had been held back and now is not: fetch it at this depth.
    Requeue(UrlId, u32),
}

/// See the module doc.
pub struct Visited {
    shards: Box<[Mutex<Table>]>,
    len: AtomicUsize,
}

impl Default for Visited {
    fn default() -> Visited {
        Visited {
            shards: (0..SHARDS).map(|_| Mutex::new(Table::default())).collect(),
            len: AtomicUsize::new(0),
        }
    }
}

/// Enough shards that two workers rarely want the same lock, and that one shard's
/// growth (a copy of 1/64 of the set) is a short pause.
const SHARDS: usize = 64;
const SHARD_BITS: u32 = SHARDS.trailing_zeros();

/// A value [`Seen::pack`] never produces (held is at most 2): marks a free slot.
const EMPTY: u64 = u64::MAX;

/// One shard: slots of (low hash, high hash, packed value).
#[derive(Default)]
struct Table {
    slots: Vec<[u64; 3]>,
    len: usize,
}

impl Table {
    /// Where `hash` is, or the free slot where it would go.
    fn find(&self, hash: u128) -> (usize, bool) {
        let (lo, hi) = (hash as u64, (hash >> 64) as u64);
        let cap = self.slots.len();
        // The low half picks the home slot (the high half picked the shard).
        let mut i = ((u128::from(lo) * cap as u128) >> 64) as usize;
        loop {
            let s = &self.slots[i];
            if s[2] == EMPTY {
                return (i, false);
            }
            if s[0] == lo && s[1] == hi {
                return (i, true);
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    fn get(&self, hash: u128) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        match self.find(hash) {
            (i, true) => Some(self.slots[i][2]),
            _ => None,
        }
    }

    /// Make room for one more entry, keeping at most 85% of slots used.
    fn reserve_one(&mut self) {
        let cap = self.slots.len();
        if (self.len + 1) * 20 <= cap * 17 {
            return;
        }
        let new_cap = (cap + cap / 8).max(64);
        let old = std::mem::replace(&mut self.slots, vec![[0, 0, EMPTY]; new_cap]);
        for s in old.into_iter().filter(|s| s[2] != EMPTY) {
            let (i, _) = self.find(u128::from(s[0]) | u128::from(s[1]) << 64);
            self.slots[i] = s;
        }
    }

    /// Insert at the free slot `find` returned (after `reserve_one`).
    fn put(&mut self, i: usize, hash: u128, value: u64) {
        self.slots[i] = [hash as u64, (hash >> 64) as u64, value];
        self.len += 1;
    }
}

impl Visited {
    /// An empty set.
    pub fn new() -> Visited {
        Visited::default()
    }

    fn shard(&self, hash: u128) -> MutexGuard<'_, Table> {
        let i = (hash >> (128 - SHARD_BITS)) as usize;
        // Every critical section leaves the table whole before anything can panic
        // (`make` runs before the slot is written).
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What is known of a URL already seen.
    pub fn get(&self, hash: u128) -> Option<Seen> {
        self.shard(hash).get(hash).map(Seen::unpack)
    }

    /// Record a URL known from the store (resume).
    pub fn insert_known(&self, hash: u128, seen: Seen) {
        let mut t = self.shard(hash);
        t.reserve_one();
        match t.find(hash) {
            (i, true) => t.slots[i][2] = seen.pack(),
            (i, false) => {
                t.put(i, hash, seen.pack());
                self.len.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// What is known of the URL, and whether it is new. For a new URL, `make` runs while
    /// the entry is locked and returns what to record.
    pub fn get_or_admit(&self, hash: u128, make: impl FnOnce() -> Seen) -> (Seen, bool) {
        let mut t = self.shard(hash);
        if let Some(v) = t.get(hash) {
            return (Seen::unpack(v), false);
        }
        t.reserve_one();
        let (i, _) = t.find(hash);
        let seen = make();
        t.put(i, hash, seen.pack());
        self.len.fetch_add(1, Ordering::Relaxed);
        (seen, true)
    }

    /// The URL was found again at `depth`, by a link that is (`follow`) or is not
    /// followed: keep the shorter depth, and release it if it was held back and no longer
    /// is. `max_depth` is 0 for no limit.
    pub fn found_again(&self, hash: u128, depth: u32, follow: bool, max_depth: u32) -> Lowered {
        let mut t = self.shard(hash);
        if t.len == 0 {
            return Lowered::No;
        }
        let (i, true) = t.find(hash) else {
            return Lowered::No;
        };
        let mut seen = Seen::unpack(t.slots[i][2]);
        if !seen.news(depth, follow) {
            return Lowered::No;
        }
        let shorter = depth < seen.depth;
        seen.depth = seen.depth.min(depth);
        let within = max_depth == 0 || seen.depth <= max_depth;
        let release = match seen.held {
            Held::TooDeep => shorter && within,
            Held::Nofollow if follow => {
                if !within {
                    seen.held = Held::TooDeep;
                }
                within
            }
            _ => false,
        };
        if release {
            seen.held = Held::No;
        }
        t.slots[i][2] = seen.pack();
        if release {
            Lowered::Requeue(seen.id, seen.depth)
        } else if shorter {
            Lowered::Depth(seen.id)
        } else {
            Lowered::No
        }
    }

    /// URLs known.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// No URL known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(id: UrlId, depth: u32) -> Seen {
        Seen {
            id,
            depth,
            held: Held::No,
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
    fn finds_every_entry_across_growth() {
        let v = Visited::new();
        let hash = |i: u64| xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes());
        for i in 0..50_000u64 {
            assert!(v.get_or_admit(hash(i), || seen(i, 1)).1);
        }
        // Keys that differ only in one half, and the all-zero key.
        for (i, h) in [
            (50_000, 0u128),
            (50_001, 1),
            (50_002, 1 << 64),
            (50_003, u128::MAX),
        ] {
            assert!(v.get_or_admit(h, || seen(i, 0)).1, "{h:x}");
        }
        assert_eq!(v.len(), 50_004);
        for i in 0..50_000u64 {
            assert_eq!(v.get(hash(i)), Some(seen(i, 1)));
            assert!(!v.get_or_admit(hash(i), || unreachable!()).1);
        }
        assert_eq!(v.get(1 << 64).map(|s| s.id), Some(50_002));
        assert_eq!(v.get(hash(60_000)), None);
        for shard in v.shards.iter() {
            let t = shard.lock().unwrap();
            assert!(t.len * 20 <= t.slots.len() * 17, "over 85% full");
        }
    }

    #[test]
    fn packs_without_loss() {
        for s in [
            seen(0, 0),
            seen((1 << ID_BITS) - 1, MAX_DEPTH),
            Seen {
                id: 12345,
                depth: 7,
                held: Held::TooDeep,
            },
            Seen {
                id: 1,
                depth: 0,
                held: Held::Nofollow,
            },
        ] {
            assert_eq!(Seen::unpack(s.pack()), s);
        }
    }

    #[test]
    fn shorter_paths_win_and_held_urls_are_released() {
        let v = Visited::new();
        v.insert_known(1, seen(5, 4));
        assert_eq!(v.found_again(1, 4, true, 0), Lowered::No);
        assert_eq!(v.found_again(1, 2, true, 0), Lowered::Depth(5));
        assert_eq!(v.get(1).unwrap().depth, 2);
        v.insert_known(
            2,
            Seen {
                id: 6,
                depth: 4,
                held: Held::TooDeep,
            },
        );
        assert_eq!(
            v.found_again(2, 3, true, 2),
            Lowered::Depth(6),
            "still too deep"
        );
        assert_eq!(v.found_again(2, 2, true, 2), Lowered::Requeue(6, 2));
        assert_eq!(v.get(2).unwrap().held, Held::No);
        // Held for nofollow: only a followed link releases it, at any depth within limits.
        v.insert_known(
            3,
            Seen {
                id: 7,
                depth: 1,
                held: Held::Nofollow,
            },
        );
        assert_eq!(v.found_again(3, 5, false, 0), Lowered::No);
        assert_eq!(v.found_again(3, 5, true, 0), Lowered::Requeue(7, 1));
        v.insert_known(
            4,
            Seen {
                id: 8,
                depth: 3,
                held: Held::Nofollow,
            },
        );
        assert_eq!(v.found_again(4, 3, true, 2), Lowered::No);
        assert_eq!(
            v.get(4).unwrap().held,
            Held::TooDeep,
            "followed, but too deep"
        );
        assert_eq!(v.found_again(9, 0, true, 0), Lowered::No, "unknown URL");
    }
}
