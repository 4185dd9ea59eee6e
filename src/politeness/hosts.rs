//! What this process knows of each host before fetching from it: whether it has been
//! prepared (robots.txt read, sitemaps read), and its robots.txt rules.
//!
//! Each process reads a host's robots.txt itself (a Redis crawl's processes each keep
//! their own copy, as each obeys it), so this lives above the store. The dispatcher asks
//! [`HostRules::check`] for every URL it takes; URLs of a host whose robots.txt is being
//! read wait in the dispatcher, so nothing of the host is fetched before its rules are
//! known.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use url::Url;

use super::robots::Robots;
use crate::result::ErrorKind;

/// How long a robots.txt is trusted (RFC 9309 2.4: at most 24 hours).
pub const ROBOTS_TTL: Duration = Duration::from_secs(24 * 3600);

/// Why none of a host's URLs can be fetched: its robots.txt got no response at all (the
/// name does not resolve, the connection is refused or times out), so by RFC 9309 nothing
/// may be fetched, and each URL would have met the same error.
#[derive(Debug, PartialEq, Eq)]
pub struct Unreachable {
    /// The kind of the robots.txt fetch's error.
    pub kind: ErrorKind,
    /// The error in words.
    pub message: String,
}

/// What to do with a URL about to be dispatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Fetch it.
    Fetch,
    /// robots.txt forbids it: record it as skipped.
    Disallowed,
    /// Its host cannot be reached: record it as failed with this error.
    Unreachable(Arc<Unreachable>),
    /// Hold it: its host is being prepared.
    Wait,
    /// Hold it and prepare its host (`first`: for the first time in this run, so its
    /// sitemaps are read too; else only its expired robots.txt is read again).
    Prepare {
        /// The host was never prepared in this run.
        first: bool,
    },
}

enum State {
    Preparing,
    /// `read`: the rules are robots.txt's (else it was unavailable: all disallowed).
    Ready {
        robots: Arc<Robots>,
        until: Instant,
        read: bool,
    },
    Unreachable(Arc<Unreachable>, Instant),
}

/// Where a host's robots.txt stands in this process, for the live hosts table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsState {
    /// robots.txt is not obeyed in this crawl.
    Ignored,
    /// Not asked for yet.
    Unknown,
    /// Being read (or read again, once a day).
    Fetching,
    /// Read: this many allow and disallow lines govern us (none for a 4xx).
    Read {
        /// The rule lines for our product token.
        rules: usize,
    },
    /// It answered 5xx (or 429) every time: everything is disallowed.
    Unavailable,
    /// No response at all: the host's URLs are recorded as failed.
    Unreachable,
}

impl RobotsState {
    /// The name shown on the page and in its JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RobotsState::Ignored => "ignored",
            RobotsState::Unknown => "unknown",
            RobotsState::Fetching => "fetching",
            RobotsState::Read { .. } => "read",
            RobotsState::Unavailable => "unavailable",
            RobotsState::Unreachable => "unreachable",
        }
    }
}

/// See the module doc.
pub struct HostRules<H> {
    /// Our product token (lower case); `None` when robots.txt is ignored.
    agent: Option<String>,
    /// Hosts are prepared before their first URL (robots.txt is obeyed or sitemaps read).
    prepare: bool,
    hosts: Mutex<HashMap<H, State>>,
}

impl<H: Hash + Eq + Clone> HostRules<H> {
    /// Rules for `agent` (`None`: robots.txt ignored); `sitemaps` when sitemaps are read.
    pub fn new(agent: Option<String>, sitemaps: bool) -> HostRules<H> {
        HostRules {
            prepare: agent.is_some() || sitemaps,
            agent,
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// Our product token, when robots.txt is obeyed.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// What to do with `url` of `host` now.
    pub fn check(&self, host: &H, url: &Url, now: Instant) -> Verdict {
        // The common case without robots.txt or sitemaps costs no lock.
        if !self.prepare {
            return Verdict::Fetch;
        }
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        match hosts.get(host) {
            Some(State::Preparing) => Verdict::Wait,
            Some(State::Ready { robots, until, .. }) if *until > now => match &self.agent {
                Some(agent) if !robots.is_allowed(agent, url) => Verdict::Disallowed,
                _ => Verdict::Fetch,
            },
            Some(State::Unreachable(why, until)) if *until > now => {
                Verdict::Unreachable(why.clone())
            }
            known => {
                let first = known.is_none();
                hosts.insert(host.clone(), State::Preparing);
                Verdict::Prepare { first }
            }
        }
    }

    /// `host`'s rules are known: obey `robots` for the next day (`read`: robots.txt's own,
    /// else everything disallowed because it was unavailable).
    pub fn ready(&self, host: H, robots: Arc<Robots>, read: bool) {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        let until = Instant::now() + ROBOTS_TTL;
        hosts.insert(
            host,
            State::Ready {
                robots,
                until,
                read,
            },
        );
    }

    /// Where `host`'s robots.txt stands.
    pub fn robots_state(&self, host: &H) -> RobotsState {
        let Some(agent) = &self.agent else {
            return RobotsState::Ignored;
        };
        let hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        match hosts.get(host) {
            None => RobotsState::Unknown,
            Some(State::Preparing) => RobotsState::Fetching,
            Some(State::Ready { read: false, .. }) => RobotsState::Unavailable,
            Some(State::Ready { robots, .. }) => RobotsState::Read {
                rules: robots.rule_count(agent),
            },
            Some(State::Unreachable(..)) => RobotsState::Unreachable,
        }
    }

    /// `host` gave no response to its robots.txt: its URLs fail with `why` for the next day.
    pub fn unreachable(&self, host: H, why: Unreachable) {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        hosts.insert(
            host,
            State::Unreachable(Arc::new(why), Instant::now() + ROBOTS_TTL),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_prepared_once_then_its_rules_apply() {
        let rules = HostRules::new(Some("trawl".into()), false);
        let url = |p: &str| Url::parse(&format!("http://h.test{p}")).unwrap();
        let now = Instant::now();
        assert_eq!(
            rules.check(&1, &url("/a"), now),
            Verdict::Prepare { first: true }
        );
        assert_eq!(rules.check(&1, &url("/b"), now), Verdict::Wait);
        assert_eq!(rules.robots_state(&1), RobotsState::Fetching);
        rules.ready(
            1,
            Arc::new(Robots::parse(b"User-agent: *\nDisallow: /private\n")),
            true,
        );
        assert_eq!(rules.robots_state(&1), RobotsState::Read { rules: 1 });
        assert_eq!(rules.check(&1, &url("/a"), now), Verdict::Fetch);
        assert_eq!(
            rules.check(&1, &url("/private/x"), now),
            Verdict::Disallowed
        );
        // A day later the rules are read again, without the sitemaps.
        let later = Instant::now() + ROBOTS_TTL + Duration::from_secs(1);
        assert_eq!(
            rules.check(&1, &url("/a"), later),
            Verdict::Prepare { first: false }
        );
        let why = Unreachable {
            kind: ErrorKind::Dns,
            message: "no such name".into(),
        };
        rules.check(&2, &url("/a"), now);
        rules.unreachable(2, why);
        assert_eq!(rules.robots_state(&2), RobotsState::Unreachable);
        assert!(matches!(
            rules.check(&2, &url("/a"), now),
            Verdict::Unreachable(w) if w.kind == ErrorKind::Dns
        ));
        // Nothing to prepare: everything is fetched at once.
        let none = HostRules::<u32>::new(None, false);
        assert_eq!(none.check(&1, &url("/private"), now), Verdict::Fetch);
        assert_eq!(none.robots_state(&1), RobotsState::Ignored);
    }
}
