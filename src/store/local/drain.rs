//! The drain counter: URLs admitted and not yet finished.
//!
//! Every admitted URL carries a [`DrainGuard`]; dropping it (on success, error, panic,
//! cancellation, or when its queue is dropped) decrements the counter, so no path can
//! forget to. The crawl is over exactly when the counter reaches zero. A queued URL that
//! the frontier keeps on disk instead of in memory keeps its count without a guard object
//! ([`DrainGuard::spill`]); the guard is re-made when the URL is read back
//! ([`Drain::adopt`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// The counter, shared by every guard.
#[derive(Debug)]
pub struct Drain {
    count: AtomicUsize,
    /// Woken when the count reaches zero.
    wake: Arc<Notify>,
}

/// One admitted URL's share of the counter.
#[derive(Debug)]
#[must_use = "dropping the guard finishes the URL"]
pub struct DrainGuard {
    drain: Arc<Drain>,
}

impl Drain {
    /// A counter at `initial` (URLs already queued on disk when a crawl resumes) that
    /// wakes `wake` when it reaches zero.
    pub fn new(initial: usize, wake: Arc<Notify>) -> Arc<Drain> {
        Arc::new(Drain {
            count: AtomicUsize::new(initial),
            wake,
        })
    }

    /// Count one more URL.
    pub fn admit(self: &Arc<Self>) -> DrainGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        DrainGuard {
            drain: Arc::clone(self),
        }
    }

    /// A guard for a URL already counted (read back from disk).
    pub fn adopt(self: &Arc<Self>) -> DrainGuard {
        DrainGuard {
            drain: Arc::clone(self),
        }
    }

    /// URLs admitted and not finished.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

impl DrainGuard {
    /// Keep the count but drop the guard object: the URL now waits on disk.
    pub fn spill(self) {
        std::mem::forget(self);
    }
}

impl Drop for DrainGuard {
    fn drop(&mut self) {
        if self.drain.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.drain.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_path() {
        let wake = Arc::new(Notify::new());
        let d = Drain::new(0, wake);
        let a = d.admit();
        let b = d.admit();
        assert_eq!(d.count(), 2);
        b.spill();
        assert_eq!(d.count(), 2);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _a = a;
            panic!("worker panicked");
        }));
        assert!(r.is_err());
        assert_eq!(d.count(), 1, "the panic released its guard");
        drop(d.adopt());
        assert_eq!(d.count(), 0);
    }

    #[tokio::test]
    async fn zero_wakes_the_waiter() {
        let wake = Arc::new(Notify::new());
        let d = Drain::new(0, wake.clone());
        let g = d.admit();
        let waiter = tokio::spawn(async move { wake.notified().await });
        drop(g);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
    }
}
