//! The frontier: every admitted URL not yet fetched, in per-host queues.
//!
//! Memory holds at most [`HOST_QUEUE_CAP`] URLs per host; past that, newly admitted URLs of
//! the host are *spilled*: they exist only as rows in the store's spill table, and the
//! host's memory queue is refilled from there, oldest first, when it runs low. While a
//! host has spilled URLs, every new URL of that host spills too, so the host's order stays
//! first-in first-out. The frontier's truth is the store: a crash loses only the memory
//! queues, which a resumed crawl rebuilds from `urls.state = 0`.
//!
//! The [`dispatcher`] is the only reader; workers push and release.

pub mod dispatcher;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use url::Url;

use crate::drain::DrainGuard;
use crate::store::{HostId, Pending, UrlId};

/// URLs of one host held in memory before new ones spill to disk.
pub const HOST_QUEUE_CAP: usize = 4096;
/// URLs read back from disk at a time.
pub const REFILL_BATCH: usize = 1024;
/// A refill is asked for when a spilling host's memory queue falls to this length, so the
/// queue rarely runs dry while the read is under way.
const REFILL_AT: usize = 256;

/// One URL waiting to be fetched.
#[derive(Debug)]
pub struct QueuedUrl {
    /// Its id.
    pub id: UrlId,
    /// What to fetch.
    pub url: Url,
    /// Click depth.
    pub depth: u32,
    /// Its host.
    pub host: HostId,
    /// The URLs that redirected here, oldest first (empty unless reached by a redirect).
    pub chain: Vec<UrlId>,
    /// Its share of the drain counter.
    pub guard: DrainGuard,
}

#[derive(Debug, Default)]
struct HostQueue {
    queue: VecDeque<QueuedUrl>,
    in_flight: usize,
    /// URLs of this host waiting on disk.
    spilled: u64,
    /// A refill has been asked for and not yet delivered.
    refilling: bool,
    /// Listed in `State::ready`.
    listed: bool,
}

#[derive(Debug, Default)]
struct State {
    hosts: Vec<HostQueue>,
    /// Hosts that may have something to dispatch or need a refill; checked in turn, so
    /// hosts are served round robin.
    ready: VecDeque<HostId>,
    /// Hosts whose memory queue should be refilled from disk.
    refill_requests: Vec<HostId>,
    queued_in_memory: usize,
    spilled: u64,
    in_flight: usize,
}

/// See the module doc.
#[derive(Debug)]
pub struct Frontier {
    state: Mutex<State>,
    per_host: usize,
    pending: Arc<Pending>,
    wake: Arc<Notify>,
}

/// Counts for progress reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrontierCounts {
    /// Queued in memory.
    pub in_memory: usize,
    /// Queued on disk.
    pub spilled: u64,
    /// Dispatched and not yet released.
    pub in_flight: usize,
}

impl Frontier {
    /// An empty frontier allowing `per_host` URLs of one host in flight; `wake` is
    /// notified whenever something may have become dispatchable.
    pub fn new(per_host: usize, pending: Arc<Pending>, wake: Arc<Notify>) -> Frontier {
        Frontier {
            state: Mutex::new(State::default()),
            per_host,
            pending,
            wake,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent before anything can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A resumed crawl: `count` URLs of `host` wait on disk.
    pub fn add_spilled(&self, host: HostId, count: u64) {
        let mut st = self.lock();
        let h = st.host(host);
        h.spilled += count;
        st.spilled += count;
        self.relist(&mut st, host);
        drop(st);
        self.wake.notify_one();
    }

    /// Queue newly admitted URLs (at the back of their hosts' queues).
    pub fn push(&self, items: Vec<QueuedUrl>) {
        if items.is_empty() {
            return;
        }
        let mut spills = Vec::new();
        let mut st = self.lock();
        for item in items {
            let host = item.host;
            let h = st.host(host);
            if h.spilled == 0 && h.queue.len() < HOST_QUEUE_CAP {
                h.queue.push_back(item);
                st.queued_in_memory += 1;
            } else {
                h.spilled += 1;
                st.spilled += 1;
                spills.push((host, item.id));
                item.guard.spill();
            }
            self.relist(&mut st, host);
        }
        // Inside the lock: a refill asked for after this point must find these rows.
        if !spills.is_empty() {
            self.pending.push_spills(spills);
        }
        drop(st);
        self.wake.notify_one();
    }

    /// Queue a redirect target at the front of its host's queue, so a chain is followed
    /// to its end promptly (and its loop detection stays in memory).
    pub fn push_front(&self, item: QueuedUrl) {
        let mut st = self.lock();
        let host = item.host;
        st.host(host).queue.push_front(item);
        st.queued_in_memory += 1;
        self.relist(&mut st, host);
        drop(st);
        self.wake.notify_one();
    }

    /// The next URL to fetch from a host under its concurrency limit, round robin over
    /// hosts; the host's slot is taken until [`Frontier::release`].
    pub fn pop(&self) -> Option<QueuedUrl> {
        let mut st = self.lock();
        // A listed host is always dispatchable (only `pop` takes items or slots, and it
        // unlists the host first), so the first one listed serves.
        while let Some(host) = st.ready.pop_front() {
            let per_host = self.per_host;
            let h = st.host(host);
            h.listed = false;
            if h.in_flight >= per_host {
                continue;
            }
            if let Some(item) = h.queue.pop_front() {
                h.in_flight += 1;
                st.queued_in_memory -= 1;
                st.in_flight += 1;
                self.relist(&mut st, host);
                return Some(item);
            }
        }
        None
    }

    /// A fetch of `host` finished: free its slot.
    pub fn release(&self, host: HostId) {
        let mut st = self.lock();
        let h = st.host(host);
        h.in_flight -= 1;
        st.in_flight -= 1;
        self.relist(&mut st, host);
        drop(st);
        self.wake.notify_one();
    }

    /// Hosts to refill from disk now (each asked for once until delivered).
    pub fn take_refill_requests(&self) -> Vec<HostId> {
        std::mem::take(&mut self.lock().refill_requests)
    }

    /// Deliver a refill of `host`: URLs read back from disk, oldest first.
    /// `consumed` spill rows were read; `items` are those that still parse.
    pub fn refilled(&self, host: HostId, items: Vec<QueuedUrl>, consumed: usize) {
        let mut st = self.lock();
        let n = items.len();
        let h = st.host(host);
        h.refilling = false;
        // The rows of every spilled URL were in the store's pending buffer before the
        // refill was asked for, so a refill finds at least one while any is counted.
        let taken = (consumed as u64).min(h.spilled);
        debug_assert!(
            consumed > 0 || h.spilled == 0,
            "refill of host {host} came back empty"
        );
        h.spilled -= taken;
        h.queue.extend(items);
        st.spilled -= taken;
        st.queued_in_memory += n;
        self.relist(&mut st, host);
        drop(st);
        self.wake.notify_one();
    }

    /// Counts for progress reports.
    pub fn counts(&self) -> FrontierCounts {
        let st = self.lock();
        FrontierCounts {
            in_memory: st.queued_in_memory,
            spilled: st.spilled,
            in_flight: st.in_flight,
        }
    }

    /// Put `host` on the ready list if it can dispatch, and ask for a refill if it runs
    /// low on memory while URLs wait on disk.
    fn relist(&self, st: &mut State, host: HostId) {
        let per_host = self.per_host;
        let h = st.host(host);
        let wants_refill = h.spilled > 0 && !h.refilling && h.queue.len() <= REFILL_AT;
        if wants_refill {
            h.refilling = true;
        }
        let dispatchable = !h.queue.is_empty() && h.in_flight < per_host;
        let list = dispatchable && !h.listed;
        if list {
            h.listed = true;
        }
        if wants_refill {
            st.refill_requests.push(host);
        }
        if list {
            st.ready.push_back(host);
        }
    }
}

impl State {
    fn host(&mut self, host: HostId) -> &mut HostQueue {
        let i = host as usize;
        if i >= self.hosts.len() {
            self.hosts.resize_with(i + 1, HostQueue::default);
        }
        &mut self.hosts[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drain::Drain;

    fn item(d: &Arc<Drain>, id: UrlId, host: HostId) -> QueuedUrl {
        QueuedUrl {
            id,
            url: Url::parse(&format!("http://h{host}/{id}")).unwrap(),
            depth: 0,
            host,
            chain: Vec::new(),
            guard: d.admit(),
        }
    }

    fn setup(per_host: usize) -> (Frontier, Arc<Drain>, Arc<Pending>) {
        let wake = Arc::new(Notify::new());
        let pending = Arc::new(Pending::default());
        (
            Frontier::new(per_host, pending.clone(), wake.clone()),
            Drain::new(0, wake),
            pending,
        )
    }

    #[test]
    fn round_robin_and_per_host_limit() {
        let (f, d, _) = setup(2);
        f.push((0..5).map(|i| item(&d, i, 0)).collect());
        f.push((10..12).map(|i| item(&d, i, 1)).collect());
        let order: Vec<_> = std::iter::from_fn(|| f.pop()).map(|q| q.id).collect();
        // Two of host 0, interleaved with host 1, then host 0 is at its limit.
        assert_eq!(order, vec![0, 10, 1, 11]);
        assert_eq!(f.counts().in_flight, 4);
        f.release(0);
        assert_eq!(f.pop().map(|q| q.id), Some(2));
        assert!(f.pop().is_none());
    }

    #[test]
    fn spills_past_the_cap_and_keeps_the_count() {
        let (f, d, pending) = setup(1);
        let n = HOST_QUEUE_CAP + 10;
        f.push((0..n as u64).map(|i| item(&d, i, 3)).collect());
        assert_eq!(d.count(), n, "spilled URLs are still counted");
        let c = f.counts();
        assert_eq!((c.in_memory, c.spilled), (HOST_QUEUE_CAP, 10));
        let rows = pending.take().unwrap();
        assert_eq!(rows.spills.len(), 10);
        assert_eq!(rows.spills[0], (3, HOST_QUEUE_CAP as u64));
        // Drain memory down to the refill mark: one refill is asked for, once.
        let mut popped = Vec::new();
        while f.counts().in_memory > REFILL_AT {
            let q = f.pop().unwrap();
            f.release(3);
            popped.push(q);
        }
        assert_eq!(f.take_refill_requests(), vec![3]);
        assert!(f.take_refill_requests().is_empty());
        // New URLs of a spilling host spill too, keeping FIFO order.
        f.push(vec![item(&d, 99_999, 3)]);
        assert_eq!(f.counts().spilled, 11);
        let back: Vec<_> = (HOST_QUEUE_CAP as u64..n as u64)
            .map(|id| QueuedUrl {
                id,
                url: Url::parse(&format!("http://h3/{id}")).unwrap(),
                depth: 0,
                host: 3,
                chain: Vec::new(),
                guard: d.adopt(),
            })
            .collect();
        f.refilled(3, back, 10);
        assert_eq!(f.counts().spilled, 1);
        drop(popped);
    }
}
