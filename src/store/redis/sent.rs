//! URLs this process has already admitted, so that a link found again, as most links on a
//! site are, need not go to Redis at all.
//!
//! For a URL the crawl knows already, the admission script (`scripts::ADMIT`) looks only
//! at the depth it is found at and whether a followed link found it: a shorter depth is
//! recorded, and a URL held back as too deep or as linked only from `nofollow` pages is
//! queued when that changes. So once a call that named a URL at depth `d` (followed or
//! not) has returned, naming it again at depth `d` or more, by a link no more followed,
//! changes nothing in Redis, whichever process admitted it first; such a link is left out
//! of the call. (The one difference: a held-back URL whose release the crawl's page
//! budget refused is not offered again, and the budget does not grow back.)
//!
//! The local store's visited set does the same by being the visited set; here the shared
//! one is in Redis, and this is a bounded memory of what this process told it: two
//! generations of at most [`GENERATION`] URLs each. When the newer one is full, it becomes
//! the older and the older is dropped; a URL found in the older one moves to the newer.
//! A forgotten URL costs one more admission, never a lost one.

use std::sync::{Mutex, MutexGuard};

use super::ByKeyHash;

/// URLs per generation: two of them hold at most ~10 MB.
pub(super) const GENERATION: usize = 1 << 17;

/// See the module doc.
#[derive(Default)]
pub(super) struct Sent {
    inner: Mutex<Generations>,
}

type Table = ByKeyHash<Mark>;

#[derive(Default)]
struct Generations {
    new: Table,
    old: Table,
    /// The connection's interruptions when this was last asked.
    interruptions: u64,
}

/// The least depth a URL was admitted at, and whether a followed link was among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    depth: u32,
    followed: bool,
}

impl Mark {
    /// Whether admitting at `depth`, `follow` would change nothing after this.
    fn covers(self, depth: u32, follow: bool) -> bool {
        self.depth <= depth && (self.followed || !follow)
    }

    fn merge(self, depth: u32, follow: bool) -> Mark {
        Mark {
            depth: self.depth.min(depth),
            followed: self.followed || follow,
        }
    }
}

impl Generations {
    fn insert(&mut self, hash: u128, mark: Mark) {
        if self.new.len() >= GENERATION && !self.new.contains_key(&hash) {
            self.old = std::mem::take(&mut self.new);
        }
        self.new.insert(hash, mark);
    }
}

/// [`Sent`] held for a page's links: one lock for all of them.
pub(super) struct Held<'a>(MutexGuard<'a, Generations>);

impl Held<'_> {
    /// Whether admitting the URL `hash` at `depth` (by a followed link or not) would change
    /// nothing: this process admitted it already at that depth or less, as followed.
    pub(super) fn covers(&mut self, hash: u128, depth: u32, follow: bool) -> bool {
        let g = &mut *self.0;
        if let Some(m) = g.new.get(&hash) {
            return m.covers(depth, follow);
        }
        match g.old.remove(&hash) {
            Some(m) => {
                g.insert(hash, m);
                m.covers(depth, follow)
            }
            None => false,
        }
    }
}

impl Sent {
    /// Hold the memory while a page's links are looked up.
    pub(super) fn hold(&self) -> Held<'_> {
        Held(self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Note URLs (hash, depth, followed) whose admission Redis has answered.
    pub(super) fn record(&self, urls: impl IntoIterator<Item = (u128, u32, bool)>) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for (hash, depth, follow) in urls {
            let mark = match g.new.get(&hash).or_else(|| g.old.get(&hash)) {
                Some(m) => m.merge(depth, follow),
                None => Mark {
                    depth,
                    followed: follow,
                },
            };
            g.old.remove(&hash);
            g.insert(hash, mark);
        }
    }

    /// Forget everything when the connection was interrupted since the last call (given
    /// [`Redis::interruptions`](super::Redis::interruptions)): Redis may have come back
    /// without what it was told (a restart without persistence).
    pub(super) fn after(&self, interruptions: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.interruptions != interruptions {
            *g = Generations {
                interruptions,
                ..Generations::default()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Sent {
        fn covers(&self, hash: u128, depth: u32, follow: bool) -> bool {
            self.hold().covers(hash, depth, follow)
        }
    }

    #[test]
    fn a_deeper_or_less_followed_link_is_covered_a_shorter_or_followed_one_is_not() {
        let s = Sent::default();
        assert!(!s.covers(1, 3, false));
        s.record([(1, 3, false)]);
        assert!(s.covers(1, 3, false));
        assert!(s.covers(1, 4, false));
        assert!(!s.covers(1, 2, false), "a shorter depth is news");
        assert!(
            !s.covers(1, 3, true),
            "a followed link may release a nofollow URL"
        );
        s.record([(1, 5, true)]);
        assert!(s.covers(1, 5, true));
        assert!(s.covers(1, 3, false), "the least depth is kept");
        // As the script keeps it: the least depth, and released once a followed link came.
        assert!(s.covers(1, 4, true));
        assert!(!s.covers(2, 9, false));
    }

    #[test]
    fn memory_is_bounded_and_recently_found_urls_survive_a_turn() {
        let s = Sent::default();
        let n = GENERATION as u128;
        s.record((0..n).map(|h| (h, 1, true)));
        // Found again while the generation it is in is still the newer one.
        assert!(s.covers(0, 1, true));
        s.record((n..2 * n).map(|h| (h, 1, true)));
        // The first generation is now the older one: its URLs still count, and moving one
        // over keeps it through the next turn.
        assert!(s.covers(7, 1, true));
        s.record((2 * n..3 * n).map(|h| (h, 1, true)));
        assert!(s.covers(7, 1, true), "moved to the newer generation");
        assert!(!s.covers(8, 1, true), "forgotten after two turns");
        let g = s.inner.lock().unwrap();
        assert!(g.new.len() + g.old.len() <= 2 * GENERATION);
    }

    #[test]
    fn an_interruption_forgets_everything() {
        let s = Sent::default();
        s.record([(1, 0, true)]);
        s.after(0);
        assert!(s.covers(1, 0, true));
        s.after(1);
        assert!(!s.covers(1, 0, true));
    }
}
