//! A blocked Bloom filter over the visited set's 128-bit hashes: it answers "surely not
//! in this run" for most URLs a run does not hold, so looking up a new URL rarely reads
//! the disk.
//!
//! Written here rather than taken from a crate because its input is already a uniform
//! 128-bit hash: the probes are cut from the hash's bits with no hashing of our own.
//! Blocked (every probe of one key in one 512-bit cache line) so a check costs one cache
//! miss; at 10 bits per entry and 7 probes that gives about 1% false positives.

/// Bits per entry.
const BITS_PER_ENTRY: usize = 10;
/// Probes per key, 9 bits of the hash each (63 bits in all).
const PROBES: u32 = 7;
/// A cache line: 8 words of 64 bits.
const BLOCK_WORDS: usize = 8;

pub(super) struct Bloom {
    words: Box<[u64]>,
    blocks: u64,
}

impl Bloom {
    /// A filter sized for `n` entries.
    pub(super) fn new(n: usize) -> Bloom {
        let blocks = (n * BITS_PER_ENTRY).div_ceil(BLOCK_WORDS * 64).max(1);
        Bloom {
            words: vec![0; blocks * BLOCK_WORDS].into_boxed_slice(),
            blocks: blocks as u64,
        }
    }

    /// The block's first word, and the probe bits (each a bit index within the block).
    fn probes(&self, hash: u128) -> (usize, impl Iterator<Item = usize>) {
        // The low half picks the block. The high half's top bits chose the shard, so they
        // are the same for every key of a run: mixing in the low half keeps all 63 bits
        // the probes take random.
        let (lo, hi) = (hash as u64, (hash >> 64) as u64);
        let block = ((u128::from(lo) * u128::from(self.blocks)) >> 64) as usize;
        let bits = hi ^ lo.rotate_left(32);
        (
            block * BLOCK_WORDS,
            (0..PROBES).map(move |i| ((bits >> (i * 9)) & 511) as usize),
        )
    }

    pub(super) fn insert(&mut self, hash: u128) {
        let (base, probes) = self.probes(hash);
        for bit in probes {
            self.words[base + bit / 64] |= 1 << (bit % 64);
        }
    }

    /// False when `hash` was surely never inserted.
    pub(super) fn may_contain(&self, hash: u128) -> bool {
        let (base, mut probes) = self.probes(hash);
        probes.all(|bit| self.words[base + bit / 64] & (1 << (bit % 64)) != 0)
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let hash = |i: u64| xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes());
        let n = 20_000;
        let mut b = Bloom::new(n);
        for i in 0..n as u64 {
            b.insert(hash(i));
        }
        assert!((0..n as u64).all(|i| b.may_contain(hash(i))));
        let fp = (n as u64..n as u64 * 6)
            .filter(|i| b.may_contain(hash(*i)))
            .count();
        let rate = fp as f64 / (n * 5) as f64;
        assert!(rate < 0.03, "false positive rate {rate}");
    }
}
