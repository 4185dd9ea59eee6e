//! The visited set: every URL trawl has seen, keyed by the 128-bit hash of its canonical
//! key, mapped to its id and the shallowest depth it was found at.
//!
//! Keys are hashes, not strings, so ten million URLs cost a few hundred megabytes rather
//! than gigabytes; at 128 bits the chance of any collision among 10^10 URLs is about
//! 10^-19, far below the chance of a disk error, so a collision is not checked for.
//!
//! The set is the one structure that grows with every URL discovered, so it is laid out
//! for memory rather than taken off the shelf: 24 bytes per entry (the hash and the
//! packed [`Seen`]), in 64 shards, each an open-addressing table (`table`) that is
//! always 75-85% full, about 30 bytes per URL.
//!
//! **Memory stays within a budget** (`visited-memory`). Each shard keeps two
//! generations in memory: new URLs go into the young one; when the two together hold the
//! shard's share of the budget, the old generation is written to disk as a sorted run
//! (`run`) and the young one becomes old. A lookup tries young, then old, then the runs
//! newest first, each behind a Bloom filter (`bloom`), so a URL never seen costs no disk
//! read 99 times in 100. An entry found in the old generation moves to the young one, so
//! what goes to disk is what was not looked up for a generation, and a set that fits the
//! budget stays in memory however it is looked up; an entry read from disk is not copied
//! back (that would write it out again and again) unless it changes (a shorter depth): a
//! change is made in the young generation, which is always the newest. Runs are merged
//! pairwise when the newer one is at least half the size of the one before, so a shard
//! holds a handful of runs. What stays in
//! memory per URL on disk is the Bloom filter and the block index, under 1.5 bytes.
//!
//! Runs are a cache of the store, not a second source of truth: their files are unlinked
//! at creation, and a resume rebuilds the set from the store.
//!
//! The row of a new URL is written to the store's pending buffer while its shard is
//! still locked, so no other worker can see the id before its row exists; a lookup
//! that reads a run holds the shard lock too, so a URL can't be admitted twice between
//! a miss on disk and its insertion.
//!
//! The depth is kept so that a URL first found along a long path and later along a short
//! one gets the short one (workers finish pages out of order, so discovery order is only
//! roughly breadth-first), and so that a URL skipped for `max-depth` is fetched after all
//! when a path within the limit turns up.

mod bloom;
mod run;
mod table;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::store::UrlId;

use self::run::Run;
use self::table::Table;
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
    shards: Box<[Mutex<Shard>]>,
    len: AtomicUsize,
    spill: Option<Spill>,
}

impl Default for Visited {
    fn default() -> Visited {
        Visited {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            len: AtomicUsize::new(0),
            spill: None,
        }
    }
}

/// Enough shards that two workers rarely want the same lock, and that one shard's
/// growth (a copy of 1/64 of the set) or run (1/128 of the budget) is a short pause.
const SHARDS: usize = 64;
const SHARD_BITS: u32 = SHARDS.trailing_zeros();

/// Runs per shard at most: 256 open files in all.
const MAX_RUNS: usize = 4;

/// Bytes of budget per entry in memory: 24 per slot at the tables' 75-85 % fill is about
/// 30, and the old generation, shrinking behind the entries it hands to the young one,
/// holds up to a fifth more (`tables_stay_near_the_budget_...`).
const ENTRY_BYTES: u64 = 36;

/// Where and when entries leave memory.
struct Spill {
    dir: PathBuf,
    /// Entries per generation per shard.
    generation: usize,
    /// Set once a run could not be written: entries stay in memory from then on.
    write_failed: AtomicBool,
    read_failed: AtomicBool,
}

impl Spill {
    fn write_failed(&self, e: &io::Error) {
        if !self.write_failed.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                dir = %self.dir.display(),
                error = %e,
                "cannot move part of the visited set to disk; it stays in memory from now \
                 on, past visited-memory (free space there, or raise visited-memory)"
            );
        }
    }

    fn read_failed(&self, e: &io::Error) {
        if !self.read_failed.swap(true, Ordering::Relaxed) {
            tracing::error!(
                dir = %self.dir.display(),
                error = %e,
                "cannot read the visited set's runs on disk; URLs found again may be fetched \
                 twice"
            );
        }
    }
}

/// One shard: two generations in memory, and runs on disk, oldest first.
#[derive(Default)]
struct Shard {
    young: Table,
    old: Table,
    runs: Vec<Run>,
}

/// Where a lookup found an entry.
#[derive(Clone, Copy)]
enum Found {
    /// In the young generation, at this slot.
    Young(usize),
    /// In the old generation, at this slot.
    Old(usize),
    /// In a run on disk, with this value.
    Disk(u64),
}

impl Shard {
    fn find(&self, hash: u128, spill: Option<&Spill>) -> Option<Found> {
        if self.young.len() > 0 {
            if let (i, true) = self.young.find(hash) {
                return Some(Found::Young(i));
            }
        }
        let spill = spill?;
        if self.old.len() > 0 {
            if let (i, true) = self.old.find(hash) {
                return Some(Found::Old(i));
            }
        }
        self.in_runs(hash, spill).map(Found::Disk)
    }

    /// The value of `hash`. Found in the old generation, the entry moves to the young
    /// one, so URLs linked all the time (navigation) stay in memory; found on disk, it
    /// does not: copying every URL read back would write it to disk again and again.
    fn value(&mut self, hash: u128, spill: Option<&Spill>) -> Option<u64> {
        Some(match self.find(hash, spill)? {
            Found::Young(i) => *self.young.value_mut(i),
            Found::Old(i) => {
                let v = self.old.value_at(i);
                self.promote(hash, Found::Old(i), spill);
                v
            }
            Found::Disk(v) => v,
        })
    }

    /// The slot in `young` holding what `find` found, moving an old entry there or
    /// copying one from disk, to be changed.
    fn promote(&mut self, hash: u128, found: Found, spill: Option<&Spill>) -> usize {
        match found {
            Found::Young(i) => i,
            Found::Old(i) => {
                // Out of the old generation first: inserting may send it to disk.
                let v = self.old.value_at(i);
                self.old.remove_at(i);
                self.old.shrink_if_sparse();
                self.insert(hash, v, spill)
            }
            Found::Disk(v) => self.insert(hash, v, spill),
        }
    }

    fn in_runs(&self, hash: u128, spill: &Spill) -> Option<u64> {
        for run in self.runs.iter().rev() {
            match run.get(hash) {
                Ok(Some(v)) => return Some(v),
                Ok(None) => {}
                Err(e) => spill.read_failed(&e),
            }
        }
        None
    }

    /// Inserts an entry known to be absent from `young`; returns its slot.
    fn insert(&mut self, hash: u128, value: u64, spill: Option<&Spill>) -> usize {
        if let Some(spill) = spill {
            self.make_room(spill);
        }
        self.young.reserve_one();
        let (i, _) = self.young.find(hash);
        self.young.put(i, hash, value);
        i
    }

    /// When the shard holds its share of the budget, the old generation (what was not
    /// looked up since it became old) goes to disk and the young one takes its place.
    /// The young one must hold at least half the share by then: when nearly everything
    /// was looked up again (the old generation nearly empty), what is young becomes old
    /// and gets a generation's time to be looked up before it goes, rather than all of it
    /// going at once.
    fn make_room(&mut self, spill: &Spill) {
        if self.young.len() < spill.generation
            || self.young.len() + self.old.len() < 2 * spill.generation
            || spill.write_failed.load(Ordering::Relaxed)
        {
            return;
        }
        if self.old.len() > 0 {
            let entries = self.old.sorted();
            match Run::write(&spill.dir, entries.len(), entries.into_iter().map(Ok)) {
                Ok(run) => self.runs.push(run),
                Err(e) => return spill.write_failed(&e),
            }
            self.merge_runs(spill);
        }
        self.old.clear();
        std::mem::swap(&mut self.young, &mut self.old);
        if self.young.bytes() == 0 {
            self.young = Table::with_room(spill.generation);
        }
    }

    /// Merges the two newest runs while the newer is at least half the size of the older,
    /// so sizes at least double going back and a shard holds O(log n) runs, and while
    /// there are more than [`MAX_RUNS`] (each run is an open file).
    fn merge_runs(&mut self, spill: &Spill) {
        while let [.., older, newer] = &self.runs[..] {
            if older.len() > newer.len() * 2 && self.runs.len() <= MAX_RUNS {
                return;
            }
            match Run::merge(&spill.dir, older, newer) {
                Ok(merged) => {
                    self.runs.truncate(self.runs.len() - 2);
                    self.runs.push(merged);
                }
                // Both runs are still there and still right: only the merge is lost.
                Err(e) => return spill.write_failed(&e),
            }
        }
    }
}

/// How much of the set is where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes of memory held: the tables, and the runs' Bloom filters and block indexes.
    pub memory: usize,
    /// Entries on disk (a URL moved out more than once may count more than once).
    pub on_disk: usize,
    /// Runs on disk.
    pub runs: usize,
}

impl Visited {
    /// An empty set held wholly in memory.
    pub fn new() -> Visited {
        Visited::default()
    }

    /// An empty set that keeps about `budget` bytes of entries in memory and moves the
    /// rest to files in `dir` (created if missing, to check it is usable). A budget of 0
    /// means no limit: nothing goes to disk.
    pub fn with_budget(budget: u64, dir: &Path) -> io::Result<Visited> {
        if budget == 0 {
            return Ok(Visited::new());
        }
        std::fs::create_dir_all(dir)?;
        drop(tempfile::tempfile_in(dir)?);
        let per_generation = budget / ENTRY_BYTES / SHARDS as u64 / 2;
        Ok(Visited {
            spill: Some(Spill {
                dir: dir.to_owned(),
                generation: per_generation.max(16) as usize,
                write_failed: AtomicBool::new(false),
                read_failed: AtomicBool::new(false),
            }),
            ..Visited::default()
        })
    }

    fn shard(&self, hash: u128) -> MutexGuard<'_, Shard> {
        let i = (hash >> (128 - SHARD_BITS)) as usize;
        // Every critical section leaves the tables whole before anything can panic
        // (`make` runs before the slot is written).
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What is known of a URL already seen.
    pub fn get(&self, hash: u128) -> Option<Seen> {
        let mut s = self.shard(hash);
        s.value(hash, self.spill.as_ref()).map(Seen::unpack)
    }

    /// Record a URL known from the store (resume).
    pub fn insert_known(&self, hash: u128, seen: Seen) {
        let mut s = self.shard(hash);
        let spill = self.spill.as_ref();
        match s.find(hash, spill) {
            Some(found) => {
                let i = s.promote(hash, found, spill);
                *s.young.value_mut(i) = seen.pack();
            }
            None => {
                s.insert(hash, seen.pack(), spill);
                self.len.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// What is known of the URL, and whether it is new. For a new URL, `make` runs while
    /// the entry is locked and returns what to record.
    pub fn get_or_admit(&self, hash: u128, make: impl FnOnce() -> Seen) -> (Seen, bool) {
        let mut s = self.shard(hash);
        if let Some(v) = s.value(hash, self.spill.as_ref()) {
            return (Seen::unpack(v), false);
        }
        let seen = make();
        s.insert(hash, seen.pack(), self.spill.as_ref());
        self.len.fetch_add(1, Ordering::Relaxed);
        (seen, true)
    }

    /// The URL was found again at `depth`, by a link that is (`follow`) or is not
    /// followed: keep the shorter depth, and release it if it was held back and no longer
    /// is. `max_depth` is 0 for no limit.
    pub fn found_again(&self, hash: u128, depth: u32, follow: bool, max_depth: u32) -> Lowered {
        let mut s = self.shard(hash);
        let spill = self.spill.as_ref();
        let Some(found) = s.find(hash, spill) else {
            return Lowered::No;
        };
        let value = match found {
            Found::Young(i) => *s.young.value_mut(i),
            Found::Old(i) => s.old.value_at(i),
            Found::Disk(v) => v,
        };
        if !Seen::unpack(value).news(depth, follow) {
            return Lowered::No;
        }
        let i = s.promote(hash, found, spill);
        let slot = s.young.value_mut(i);
        let mut seen = Seen::unpack(*slot);
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
        *slot = seen.pack();
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

    /// How much of the set is in memory and how much on disk (locks every shard in turn).
    pub fn footprint(&self) -> Footprint {
        let mut f = Footprint::default();
        for shard in self.shards.iter() {
            let s = shard.lock().unwrap_or_else(|p| p.into_inner());
            f.memory += s.young.bytes() + s.old.bytes();
            for run in &s.runs {
                f.memory += run.bytes();
                f.on_disk += run.len();
            }
            f.runs += s.runs.len();
        }
        f
    }
}

#[cfg(test)]
mod tests;
