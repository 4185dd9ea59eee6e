//! One shard's in-memory table: open addressing with linear probing over slots of
//! (low hash, high hash, packed value), laid out for memory (see the module doc of
//! `visited`).

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
            slots: vec![[0, 0, EMPTY]; (n * 20).div_ceil(17).max(64)],
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

    pub(super) fn get(&self, hash: u128) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        match self.find(hash) {
            (i, true) => Some(self.slots[i][2]),
            _ => None,
        }
    }

    /// The value in slot `i` (a slot `find` reported as holding the hash).
    pub(super) fn value_mut(&mut self, i: usize) -> &mut u64 {
        &mut self.slots[i][2]
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
        let new_cap = (cap + cap / 8).max(64);
        let old = std::mem::replace(&mut self.slots, vec![[0, 0, EMPTY]; new_cap]);
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
