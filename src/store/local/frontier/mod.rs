//! The frontier: every admitted URL not yet fetched, in per-host queues.
//!
//! Memory holds at most [`HOST_QUEUE_CAP`] URLs per host; past that, newly admitted URLs of
//! the host are *spilled*: they exist only as rows in the store's spill table, and the
//! host's memory queue is refilled from there, oldest first, when it runs low. While a
//! host has spilled URLs, every new URL of that host spills too, so the host's order stays
//! first-in first-out. The frontier's truth is the store: a crash loses only the memory
//! queues, which a resumed crawl rebuilds from `urls.state = 0`.
//!
//! The engine's dispatcher is the only reader (through the store's `take`); workers
//! push and release. When each host may next be asked (spacing, pauses) is `timing`'s.

mod timing;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use url::Url;

use super::drain::DrainGuard;
use super::pending::{HostId, Pending, UrlId};
use crate::store::FrontierCounts;
use timing::{Due, HostTiming, Spacing, TimedHosts};

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
    /// Key hashes of the URLs that redirected here, oldest first (empty unless reached by
    /// a redirect).
    pub chain: Vec<u128>,
    /// Attempts already made (transient faults are retried).
    pub attempts: u32,
    /// In a refresh: the previous generation's validators.
    pub validators: Option<Box<crate::refresh::Validators>>,
    /// Its share of the drain counter.
    pub guard: DrainGuard,
}

#[derive(Debug, Default)]
struct HostQueue {
    queue: VecDeque<QueuedUrl>,
    in_flight: usize,
    /// When its next request may start.
    timing: HostTiming,
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
    /// Hosts waiting for their next start.
    timed: TimedHosts,
    /// URLs waiting to be tried again, soonest first.
    retries: BinaryHeap<Reverse<Retry>>,
    retry_seq: u64,
    /// Hosts whose memory queue should be refilled from disk.
    refill_requests: Vec<HostId>,
    queued_in_memory: usize,
    spilled: u64,
    in_flight: usize,
}

/// A URL waiting for its next attempt; ordered by time, then by arrival.
#[derive(Debug)]
struct Retry {
    at: Instant,
    seq: u64,
    item: QueuedUrl,
}

impl PartialEq for Retry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Retry {}
impl PartialOrd for Retry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Retry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// How the frontier treats hosts.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// Requests in flight to one host.
    pub per_host: usize,
    /// Least spacing between request starts to one host.
    pub interval: Duration,
}

impl HostPolicy {
    /// `per_host` in flight, nothing else.
    pub fn concurrency_only(per_host: usize) -> HostPolicy {
        HostPolicy {
            per_host,
            interval: Duration::ZERO,
        }
    }
}

/// See the module doc.
#[derive(Debug)]
pub struct Frontier {
    state: Mutex<State>,
    per_host: usize,
    spacing: Spacing,
    pending: Arc<Pending>,
    wake: Arc<Notify>,
}

/// A host slot in use, given back however the request ends.
pub struct HostSlot {
    /// The frontier the slot belongs to.
    pub frontier: Arc<Frontier>,
    /// The host.
    pub host: HostId,
}

impl Drop for HostSlot {
    fn drop(&mut self) {
        self.frontier.release(self.host);
    }
}

impl Frontier {
    /// An empty frontier allowing `per_host` URLs of one host in flight, their starts at
    /// least `interval` apart; `wake` is notified whenever something may have become
    /// dispatchable.
    pub fn new(policy: HostPolicy, pending: Arc<Pending>, wake: Arc<Notify>) -> Frontier {
        Frontier {
            state: Mutex::new(State::default()),
            per_host: policy.per_host,
            spacing: Spacing::new(policy.interval),
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
        self.relist(&mut st, host, Instant::now());
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
            self.relist(&mut st, host, Instant::now());
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
        self.relist(&mut st, host, Instant::now());
        drop(st);
        self.wake.notify_one();
    }

    /// The next URL to fetch from a host under its concurrency limit and past its
    /// politeness time, round robin over hosts; the host's slot is taken until
    /// [`Frontier::release`].
    /// Otherwise, when something may become ready without anything else happening.
    pub fn pop(&self, now: Instant) -> Result<QueuedUrl, Option<Instant>> {
        let mut st = self.lock();
        while st.retries.peek().is_some_and(|r| r.0.at <= now) {
            let Reverse(r) = st.retries.pop().expect("peeked");
            let host = r.item.host;
            st.host(host).queue.push_front(r.item);
            st.queued_in_memory += 1;
            self.relist(&mut st, host, now);
        }
        while let Some(host) = st.timed.pop_due(now) {
            st.host(host).timing.came_due();
            self.relist(&mut st, host, now);
        }
        // A listed host was dispatchable when listed; only time can have changed that.
        while let Some(host) = st.ready.pop_front() {
            let per_host = self.per_host;
            let h = st.host(host);
            h.listed = false;
            if h.in_flight >= per_host || h.queue.is_empty() {
                continue;
            }
            if h.timing.waits(now) {
                self.relist(&mut st, host, now);
                continue;
            }
            let item = h.queue.pop_front().expect("checked non-empty");
            h.in_flight += 1;
            self.spacing.start(&mut h.timing, now);
            st.queued_in_memory -= 1;
            st.in_flight += 1;
            self.relist(&mut st, host, now);
            return Ok(item);
        }
        let next_host = st.timed.soonest();
        let next_retry = st.retries.peek().map(|r| r.0.at);
        Err(match (next_host, next_retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// Try `item` again at `at` (its host slot must be released separately).
    pub fn retry_at(&self, item: QueuedUrl, at: Instant) {
        let mut st = self.lock();
        st.retry_seq += 1;
        let seq = st.retry_seq;
        st.retries.push(Reverse(Retry { at, seq, item }));
        drop(st);
        self.wake.notify_one();
    }

    /// Give back a host slot.
    /// Take one of `host`'s request slots for a request made outside the queues (a
    /// sitemap read), so the per-host limit counts it too; false when none is free. Give
    /// it back with [`Frontier::release`].
    pub fn try_occupy(&self, host: HostId) -> bool {
        let per_host = self.per_host;
        let mut st = self.lock();
        let h = st.host(host);
        if h.in_flight >= per_host {
            return false;
        }
        h.in_flight += 1;
        st.in_flight += 1;
        true
    }

    /// Give back a host slot.
    pub fn release(&self, host: HostId) {
        let mut st = self.lock();
        let h = st.host(host);
        h.in_flight -= 1;
        st.in_flight -= 1;
        self.relist(&mut st, host, Instant::now());
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
        self.relist(&mut st, host, Instant::now());
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
            retrying: st.retries.len(),
        }
    }

    /// Put `host` on the ready list if it can dispatch now, on the timed list if it can
    /// once its politeness time has passed, and ask for a refill if it runs low on
    /// memory while URLs wait on disk.
    fn relist(&self, st: &mut State, host: HostId, now: Instant) {
        let per_host = self.per_host;
        let h = st.host(host);
        let wants_refill = h.spilled > 0 && !h.refilling && h.queue.len() <= REFILL_AT;
        if wants_refill {
            h.refilling = true;
        }
        let mut list = false;
        let mut timed = None;
        if !h.queue.is_empty() && h.in_flight < per_host {
            match h.timing.due(now) {
                Due::Now => {
                    if !h.listed {
                        h.listed = true;
                        list = true;
                    }
                }
                Due::At(t) => timed = Some(t),
                Due::Timed => {}
            }
        }
        if wants_refill {
            st.refill_requests.push(host);
        }
        if list {
            st.ready.push_back(host);
        }
        if let Some(t) = timed {
            st.timed.push(t, host);
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
    use super::super::drain::Drain;
    use super::*;

    pub(super) fn item(d: &Arc<Drain>, id: UrlId, host: HostId) -> QueuedUrl {
        QueuedUrl {
            id,
            url: Url::parse(&format!("http://h{host}/{id}")).unwrap(),
            depth: 0,
            host,
            chain: Vec::new(),
            attempts: 0,
            validators: None,
            guard: d.admit(),
        }
    }

    pub(super) fn pop(f: &Frontier) -> Option<QueuedUrl> {
        f.pop(Instant::now()).ok()
    }

    fn setup(per_host: usize) -> (Frontier, Arc<Drain>, Arc<Pending>) {
        let wake = Arc::new(Notify::new());
        let pending = Arc::new(Pending::default());
        (
            Frontier::new(
                HostPolicy::concurrency_only(per_host),
                pending.clone(),
                wake.clone(),
            ),
            Drain::new(0, wake),
            pending,
        )
    }

    #[test]
    fn round_robin_and_per_host_limit() {
        let (f, d, _) = setup(2);
        f.push((0..5).map(|i| item(&d, i, 0)).collect());
        f.push((10..12).map(|i| item(&d, i, 1)).collect());
        let order: Vec<_> = std::iter::from_fn(|| pop(&f)).map(|q| q.id).collect();
        // Two of host 0, interleaved with host 1, then host 0 is at its limit.
        assert_eq!(order, vec![0, 10, 1, 11]);
        assert_eq!(f.counts().in_flight, 4);
        f.release(0);
        assert_eq!(pop(&f).map(|q| q.id), Some(2));
        assert!(pop(&f).is_none());
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
            let q = pop(&f).unwrap();
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
                attempts: 0,
                validators: None,
                guard: d.adopt(),
            })
            .collect();
        f.refilled(3, back, 10);
        assert_eq!(f.counts().spilled, 1);
        drop(popped);
    }
}
