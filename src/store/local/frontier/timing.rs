//! Per-host politeness timing: when each host's next request may start. Starts to one host
//! keep its spacing (the configuration's, or the host's robots.txt Crawl-delay when
//! longer), and a 429 or 503 answer holds the host back for every worker.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::super::pending::HostId;
use super::Frontier;
use crate::store::HostState;

/// When one host's next request may start.
#[derive(Debug, Default)]
pub(super) struct HostTiming {
    /// No request to the host starts before this (politeness spacing, 429/503 pauses).
    next_at: Option<Instant>,
    /// Spacing between request starts; zero for none.
    interval: Duration,
    /// When the latest request left (or will, after waiting out the spacing).
    started_at: Option<Instant>,
    /// The end of the latest 429/503 pause, kept apart from `next_at` (which spacing
    /// moves too) for the live hosts table.
    paused_until: Option<Instant>,
    /// In [`TimedHosts`], waiting for `next_at`.
    timed: bool,
}

/// Whether a host may start a request.
pub(super) enum Due {
    /// Now.
    Now,
    /// Not before then: the host goes on the timed heap.
    At(Instant),
    /// Later, and the host is on the timed heap already.
    Timed,
}

impl HostTiming {
    /// Whether the host must wait past `now`.
    #[inline]
    pub(super) fn waits(&self, now: Instant) -> bool {
        self.next_at.is_some_and(|t| t > now)
    }

    /// Whether the host may start a request at `now`. A host that must wait counts as on
    /// the timed heap from here, so it is put there once.
    #[inline]
    pub(super) fn due(&mut self, now: Instant) -> Due {
        match self.next_at {
            Some(t) if t > now => {
                if self.timed {
                    Due::Timed
                } else {
                    self.timed = true;
                    Due::At(t)
                }
            }
            _ => Due::Now,
        }
    }

    /// The host's entry came off the timed heap.
    #[inline]
    pub(super) fn came_due(&mut self) {
        self.timed = false;
    }
}

/// Hosts waiting for their next start, soonest first (entries may be stale: checked
/// against the host when they come due).
#[derive(Debug, Default)]
pub(super) struct TimedHosts(BinaryHeap<Reverse<(Instant, HostId)>>);

impl TimedHosts {
    #[inline]
    pub(super) fn push(&mut self, at: Instant, host: HostId) {
        self.0.push(Reverse((at, host)));
    }

    /// The next host whose time has come by `now`, taken off the heap.
    #[inline]
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<HostId> {
        match self.0.peek() {
            Some(&Reverse((at, host))) if at <= now => {
                self.0.pop();
                Some(host)
            }
            _ => None,
        }
    }

    /// When the soonest host comes due.
    #[inline]
    pub(super) fn soonest(&self) -> Option<Instant> {
        self.0.peek().map(|r| r.0 .0)
    }
}

/// The spacing between request starts to one host.
#[derive(Debug)]
pub(super) struct Spacing {
    /// From the configuration.
    interval: Duration,
    /// Some host has its own spacing (a robots.txt Crawl-delay): `started` has work to do
    /// even when the configuration asks for no spacing.
    host_intervals: AtomicBool,
}

impl Spacing {
    pub(super) fn new(interval: Duration) -> Spacing {
        Spacing {
            interval,
            host_intervals: AtomicBool::new(false),
        }
    }

    /// The spacing of a host: its own, or the configuration's when longer.
    #[inline]
    fn of(&self, h: &HostTiming) -> Duration {
        h.interval.max(self.interval)
    }

    /// A request to the host starts at `at`: the next one waits out the spacing.
    #[inline]
    pub(super) fn start(&self, h: &mut HostTiming, at: Instant) {
        let interval = self.of(h);
        if !interval.is_zero() {
            h.next_at = Some(at + interval);
        }
    }
}

impl Frontier {
    /// No request to `host` starts before `until` (a 429 or 503 answer): every worker
    /// waits, not only the one that saw it.
    pub fn pause(&self, host: HostId, until: Instant) {
        let left = until.saturating_duration_since(Instant::now());
        self.pending
            .push_pause(host, crate::result::now_ms() + left.as_millis() as i64);
        let mut st = self.lock();
        let h = &mut st.host(host).timing;
        h.next_at = Some(h.next_at.map_or(until, |t| t.max(until)));
        h.paused_until = Some(h.paused_until.map_or(until, |t| t.max(until)));
        self.relist(&mut st, host, Instant::now());
    }

    /// Book a request start for `host` outside the queues (a sitemap read), keeping the
    /// host's spacing: returns when it may start, and moves the host's next start after it.
    pub fn book(&self, host: HostId) -> Instant {
        let now = Instant::now();
        let mut st = self.lock();
        let h = &mut st.host(host).timing;
        let start = h.next_at.map_or(now, |t| t.max(now));
        self.spacing.start(h, start);
        start
    }

    /// A request to `host` is about to leave: `Some(t)` when it must wait until `t`, the
    /// host's spacing after the previous request left. A request that leaves later than
    /// it was booked for (a busy worker, a loaded machine) pushes the host's next start
    /// out, and one booked before the previous request left waits for it, so the spacing
    /// holds between the requests themselves, not only in the schedule.
    pub fn started(&self, host: HostId) -> Option<Instant> {
        // The common case (no spacing anywhere) costs no lock per page.
        if self.spacing.interval.is_zero() && !self.spacing.host_intervals.load(Ordering::Relaxed) {
            return None;
        }
        let now = Instant::now();
        let mut st = self.lock();
        let h = &mut st.host(host).timing;
        let interval = self.spacing.of(h);
        if interval.is_zero() {
            return None;
        }
        let at = h.started_at.map_or(now, |t| (t + interval).max(now));
        h.started_at = Some(at);
        let earliest = at + interval;
        if h.next_at.is_none_or(|t| t < earliest) {
            h.next_at = Some(earliest);
        }
        (at > now).then_some(at)
    }

    /// What the live hosts table shows of `host`: slots taken, spacing, pause.
    pub(crate) fn host_state(&self, host: HostId) -> HostState {
        let now = Instant::now();
        let mut st = self.lock();
        let h = st.host(host);
        HostState {
            in_flight: h.in_flight as u64,
            delay: self.spacing.of(&h.timing),
            paused_until: h
                .timing
                .paused_until
                .filter(|&t| t > now)
                .map(|t| crate::result::now_ms() + t.duration_since(now).as_millis() as i64),
        }
    }

    /// Set a host's own spacing between requests (robots.txt Crawl-delay); the
    /// configuration's spacing still applies when longer.
    pub fn set_interval(&self, host: HostId, interval: Duration) {
        if !interval.is_zero() {
            self.spacing.host_intervals.store(true, Ordering::Relaxed);
        }
        let mut st = self.lock();
        st.host(host).timing.interval = interval;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::Notify;

    use super::super::super::drain::Drain;
    use super::super::super::pending::Pending;
    use super::super::tests::{item, pop};
    use super::super::HostPolicy;
    use super::*;

    fn spaced(interval: Duration) -> (Frontier, Arc<Drain>) {
        let wake = Arc::new(Notify::new());
        let policy = HostPolicy {
            interval,
            ..HostPolicy::concurrency_only(4)
        };
        let f = Frontier::new(policy, Arc::new(Pending::default()), wake.clone());
        (f, Drain::new(0, wake))
    }

    #[test]
    fn spacing_pauses_and_retries_wait_their_time() {
        let (f, d) = spaced(Duration::from_secs(2));
        f.push((0..3).map(|i| item(&d, i, 0)).collect());
        let t0 = Instant::now();
        assert!(matches!(f.pop(t0), Ok(q) if q.id == 0));
        // The next start of host 0 is two seconds later, whatever the slots say.
        match f.pop(t0) {
            Err(Some(at)) => assert_eq!(at, t0 + Duration::from_secs(2)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(f.pop(t0 + Duration::from_secs(2)), Ok(q) if q.id == 1));
        // A pause moves the next start later still.
        f.pause(0, t0 + Duration::from_secs(60));
        assert!(matches!(f.pop(t0 + Duration::from_secs(10)), Err(Some(_))));
        assert!(matches!(f.pop(t0 + Duration::from_secs(60)), Ok(q) if q.id == 2));
        // A retry comes back at its time, ahead of its host's queue.
        f.push(vec![item(&d, 7, 1)]);
        let r = item(&d, 8, 1);
        f.retry_at(r, t0 + Duration::from_secs(100));
        assert!(matches!(f.pop(t0 + Duration::from_secs(61)), Ok(q) if q.id == 7));
        match f.pop(t0 + Duration::from_secs(62)) {
            Err(Some(at)) => assert_eq!(at, t0 + Duration::from_secs(100)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(f.pop(t0 + Duration::from_secs(100)), Ok(q) if q.id == 8));
    }

    #[test]
    fn bookings_keep_the_spacing() {
        let (f, _) = spaced(Duration::from_secs(2));
        let first = f.book(0);
        assert_eq!(f.book(0), first + Duration::from_secs(2));
    }

    #[test]
    fn a_late_start_pushes_the_next_one_out() {
        let (f, d) = spaced(Duration::ZERO);
        f.push(vec![item(&d, 0, 0)]);
        // No spacing anywhere: a start changes nothing.
        f.started(0);
        assert_eq!(pop(&f).map(|q| q.id), Some(0));
        // A host's own spacing applies although the configuration has none.
        f.push(vec![item(&d, 1, 0)]);
        let before = Instant::now();
        f.set_interval(0, Duration::from_secs(5));
        f.started(0);
        match f.pop(before) {
            Err(Some(at)) => assert!(at >= before + Duration::from_secs(5)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requests_taken_before_the_previous_left_wait_for_it() {
        let (f, _) = spaced(Duration::from_secs(2));
        let before = Instant::now();
        assert_eq!(f.started(0), None, "the first request leaves now");
        // A second request that was taken meanwhile (its worker was slow to start the
        // first) waits out the spacing after the first, and the one after waits for it.
        let second = f.started(0).expect("a wait");
        assert!(second >= before + Duration::from_secs(2), "{second:?}");
        let third = f.started(0).expect("a wait");
        assert_eq!(third, second + Duration::from_secs(2));
    }

    #[test]
    fn the_live_state_shows_slots_spacing_and_only_a_pause_not_the_spacing() {
        let (f, d) = spaced(Duration::from_secs(1));
        f.push(vec![item(&d, 0, 0)]);
        let _taken = pop(&f).expect("a URL");
        f.set_interval(0, Duration::from_secs(3));
        let s = f.host_state(0);
        assert_eq!((s.in_flight, s.delay), (1, Duration::from_secs(3)));
        assert_eq!(s.paused_until, None, "spacing is not a pause");
        f.pause(0, Instant::now() + Duration::from_secs(60));
        let until = f.host_state(0).paused_until.expect("paused");
        let left = until - crate::result::now_ms();
        assert!((59_000..=60_000).contains(&left), "{left}");
    }
}
