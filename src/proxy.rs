//! Proxy rotation: which route (a proxy, or none) carries each request.
//!
//! With a list of proxies, requests go through them in turn (`per-request`) or each host
//! sticks to one (`per-host`, so a site sees one address). A proxy that fails to connect
//! `proxy-max-failures` times in a row is taken out of rotation for `proxy-cooldown`, then
//! tried again; while every proxy is out, the one out longest is used rather than none.
//! Without proxies there is one route, the direct one, and nothing to rotate: its
//! failures are the pages' own errors.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How requests are spread over the proxies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rotation {
    /// Each request takes the next proxy in turn.
    #[default]
    PerRequest,
    /// All requests to one host take the same proxy (while it is in rotation).
    PerHost,
}

impl Rotation {
    /// The name used in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Rotation::PerRequest => "per-request",
            Rotation::PerHost => "per-host",
        }
    }
}

#[derive(Debug, Default)]
struct Health {
    failures: AtomicU32,
    out_until: Mutex<Option<Instant>>,
}

/// The rotation state over the proxies (or the direct route alone).
#[derive(Debug)]
pub struct Pool {
    health: Vec<Health>,
    /// The proxies as shown in logs (without credentials); empty for the direct route.
    names: Vec<String>,
    rotation: Rotation,
    next: AtomicUsize,
    max_failures: u32,
    cooldown: Duration,
}

impl Pool {
    /// A pool over `proxies` (their URLs), or over the direct route when there are none.
    pub fn new(
        proxies: &[String],
        rotation: Rotation,
        max_failures: u32,
        cooldown: Duration,
    ) -> Pool {
        Pool {
            health: (0..proxies.len().max(1))
                .map(|_| Health::default())
                .collect(),
            names: proxies.iter().map(|p| shown(p)).collect(),
            rotation,
            next: AtomicUsize::new(0),
            max_failures: max_failures.max(1),
            cooldown,
        }
    }

    fn out_until(&self, i: usize) -> Option<Instant> {
        *self.health[i]
            .out_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn usable(&self, i: usize, now: Instant) -> bool {
        self.out_until(i).is_none_or(|t| t <= now)
    }

    /// The route for a request to `host`.
    pub fn pick(&self, host: &str) -> usize {
        let n = self.health.len();
        if n == 1 {
            return 0;
        }
        let start = match self.rotation {
            Rotation::PerRequest => self.next.fetch_add(1, Ordering::Relaxed) % n,
            Rotation::PerHost => {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                host.hash(&mut h);
                (h.finish() % n as u64) as usize
            }
        };
        let now = Instant::now();
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.usable(i, now))
            .unwrap_or_else(|| (0..n).min_by_key(|&i| self.out_until(i)).unwrap_or(start))
    }

    /// Whether route `i` connected (`ok`) or failed to.
    pub fn report(&self, i: usize, ok: bool) {
        let Some(name) = self.names.get(i) else {
            return;
        };
        let h = &self.health[i];
        if ok {
            h.failures.store(0, Ordering::Relaxed);
            return;
        }
        let failures = h.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if failures >= self.max_failures {
            h.failures.store(0, Ordering::Relaxed);
            *h.out_until.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Instant::now() + self.cooldown);
            tracing::warn!(
                proxy = %name,
                cooldown = ?self.cooldown,
                "proxy taken out of rotation after {failures} connection failures in a row"
            );
        }
    }
}

/// A proxy URL without its credentials, for logs.
fn shown(proxy: &str) -> String {
    match url::Url::parse(proxy) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "(a proxy)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("http://u:secret@127.0.0.{}:8080", i + 2))
            .collect()
    }

    #[test]
    fn the_direct_route_is_never_benched_and_credentials_are_not_shown() {
        let p = Pool::new(&[], Rotation::PerRequest, 1, Duration::from_secs(60));
        for _ in 0..5 {
            p.report(0, false);
        }
        assert!(p.out_until(0).is_none());
        assert_eq!(p.pick("a"), 0);
        assert_eq!(
            shown("http://u:secret@127.0.0.2:8080"),
            "http://127.0.0.2:8080/"
        );
    }

    #[test]
    fn rotates_and_benches_failing_routes() {
        let p = Pool::new(
            &proxies(3),
            Rotation::PerRequest,
            2,
            Duration::from_secs(60),
        );
        let picks: Vec<_> = (0..6).map(|_| p.pick("a")).collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
        p.report(1, false);
        assert_eq!(
            (0..3).map(|_| p.pick("a")).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        p.report(1, false);
        // Route 1 is out: its turn goes to the next one.
        assert_eq!(
            (0..3).map(|_| p.pick("a")).collect::<Vec<_>>(),
            vec![0, 2, 2]
        );
        p.report(0, false);
        p.report(0, false);
        p.report(2, false);
        p.report(2, false);
        // All out: the one out longest still serves.
        assert_eq!(p.pick("a"), 1);
    }

    #[test]
    fn per_host_is_sticky() {
        let p = Pool::new(&proxies(4), Rotation::PerHost, 1, Duration::from_secs(60));
        let first = p.pick("example.org");
        assert!((0..10).all(|_| p.pick("example.org") == first));
        p.report(first, false);
        let second = p.pick("example.org");
        assert_ne!(second, first);
        assert!((0..10).all(|_| p.pick("example.org") == second));
    }
}
