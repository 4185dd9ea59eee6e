//! One shard's in-memory table: open addressing with linear probing over slots of
//! (low hash, high hash, packed value), laid out for memory (see the module doc of
//! `visited`).

/// The slot a hash's low half starts its probe at (the high half picked the shard).
fn home(lo: u64, cap: usize) -> usize {
    ((u128::from(lo) * cap as u128) >> 64) as usize
}

/// Slots for `n` entries at 85 % fill, at least 64.
fn slots_for(n: usize) -> usize {
    (n * 20).div_ceil(17).max(64)
}

/// A value `Seen::pack` never produces (held is at most 2): marks a free slot.
pub(super) const EMPTY: u64 = u64::MAX;

/// Slots of (low hash, high hash, packed value).
#[derive(Default)]
pub(super) struct Table {
    slots: Vec<[u64; 3]>,
    len: usize,
}

impl Table {
    /// A table that takes `n` entries without growing.
    pub(super) fn with_room(n: usize) -> Table {
        Table {
            slots: vec![[0, 0, EMPTY]; slots_for(n)],
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Where `hash` is, or the free slot where it would go.
    pub(super) fn find(&self, hash: u128) -> (usize, bool) {
        let (lo, hi) = (hash as u64, (hash >> 64) as u64);
        let cap = self.slots.len();
        let mut i = home(lo, cap);
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

    /// The value in slot `i` (a slot `find` reported as holding the hash).
    pub(super) fn value_mut(&mut self, i: usize) -> &mut u64 {
        &mut self.slots[i][2]
    }

    /// The value in slot `i` (a slot `find` reported as holding the hash).
    pub(super) fn value_at(&self, i: usize) -> u64 {
        self.slots[i][2]
    }

    /// Removes the entry in slot `i` (a slot `find` reported as holding the hash). The
    /// entries after it in its probe run move back into the gap where their own probe
    /// allows, so lookups need no tombstones.
    pub(super) fn remove_at(&mut self, i: usize) {
        let cap = self.slots.len();
        let mut hole = i;
        let mut j = i;
        loop {
            j = if j + 1 == cap { 0 } else { j + 1 };
            let s = self.slots[j];
            if s[2] == EMPTY {
                break;
            }
            // The entry may fill the hole if the hole lies between its home slot and
            // where it sits, i.e. on its probe path.
            let from_home = (j + cap - home(s[0], cap)) % cap;
            let from_hole = (j + cap - hole) % cap;
            if from_home >= from_hole {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = [0, 0, EMPTY];
        self.len -= 1;
    }

    /// Gives slots back once at most two thirds are used (entries removed), so the memory
    /// held follows the entries held: a generation losing entries to the young one keeps
    /// the two within about 1.2 times what the entries need. Rebuilding after every sixth
    /// of the slots is emptied costs a few slot copies per removal.
    pub(super) fn shrink_if_sparse(&mut self) {
        let cap = self.slots.len();
        if cap <= 64 || self.len * 3 > cap * 2 {
            return;
        }
        self.rebuild(slots_for(self.len));
    }

    /// Make room for one more entry, keeping at most 85% of slots used.
    ///
    /// Growing by an eighth rather than doubling keeps the table 75-85% full, about 30
    /// bytes per URL, where a doubling table is between 44% and 87% full.
    pub(super) fn reserve_one(&mut self) {
        let cap = self.slots.len();
        if (self.len + 1) * 20 <= cap * 17 {
            return;
        }
        self.rebuild((cap + cap / 8).max(64));
    }

    /// The same entries in `cap` slots.
    fn rebuild(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![[0, 0, EMPTY]; cap]);
        for s in old.into_iter().filter(|s| s[2] != EMPTY) {
            let (i, _) = self.find(u128::from(s[0]) | u128::from(s[1]) << 64);
            self.slots[i] = s;
        }
    }

    /// Insert at the free slot `find` returned (after `reserve_one`).
    pub(super) fn put(&mut self, i: usize, hash: u128, value: u64) {
        self.slots[i] = [hash as u64, (hash >> 64) as u64, value];
        self.len += 1;
    }

    /// The entries as (hash, value), sorted by hash.
    pub(super) fn sorted(&self) -> Vec<(u128, u64)> {
        let mut v: Vec<(u128, u64)> = self
            .slots
            .iter()
            .filter(|s| s[2] != EMPTY)
            .map(|s| (u128::from(s[0]) | u128::from(s[1]) << 64, s[2]))
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// Empties the table, keeping its slots for reuse.
    pub(super) fn clear(&mut self) {
        self.slots.fill([0, 0, EMPTY]);
        self.len = 0;
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.slots.capacity() * 24
    }

    #[cfg(test)]
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn removals_keep_every_other_entry_findable() {
        // Hashes with few distinct home slots make long probe runs that wrap around.
        let mut rng = fastrand::Rng::with_seed(7);
        let mut t = Table::with_room(0);
        let mut model = HashMap::new();
        for step in 0..6_000u64 {
            let hash = u128::from(rng.u64(..)) << 64 | u128::from(rng.u64(..64) << 58);
            if rng.u8(..3) == 0 && !model.is_empty() {
                let (&h, _) = model.iter().next().unwrap();
                let (i, found) = t.find(h);
                assert!(found);
                t.remove_at(i);
                model.remove(&h);
                t.shrink_if_sparse();
            } else if let (_, false) = t.find(hash) {
                t.reserve_one();
                let (i, _) = t.find(hash);
                t.put(i, hash, step);
                model.insert(hash, step);
            }
            assert_eq!(t.len(), model.len());
        }
        for (&h, &v) in &model {
            let (i, found) = t.find(h);
            assert!(found);
            assert_eq!(t.value_at(i), v);
        }
        // Emptied: slots are given back.
        let keys: Vec<u128> = model.keys().copied().collect();
        for h in keys {
            let (i, _) = t.find(h);
            t.remove_at(i);
            t.shrink_if_sparse();
        }
        assert_eq!((t.len(), t.slots()), (0, 64));
    }
}
