//! What a link's target comes to, in the words of link checkers: broken, a missing
//! fragment, blocked (the site refuses robots, the link may be fine), transient (try
//! again later), or redirected for good (the link should be updated). [`classify`] is the
//! only place that decides it; everything that lists or counts classes calls it.

use std::str::FromStr;

use crate::names::stable_names;
use crate::result::ErrorKind;
use crate::store::UrlState;

stable_names! {
    /// A link check's verdict on a link (a URL it points at, or the `#fragment` it names).
    /// The names are what `--class` and `--fail-on` take and reports show.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum LinkClass ("link class") {
        /// The target is gone or unreachable: 404, 410 and other 4xx not below, no such
        /// host, a refused connection, a redirect loop or limit, an unusable `Location`,
        /// a body that broke or could not be decoded or parsed.
        Broken = "broken",
        /// The target page was fetched and has no element with the fragment as its `id`,
        /// nor an `<a name>` with it.
        Fragment = "fragment",
        /// The site refused the checker, not the link: 401, 403, 407, 429 after every
        /// retry, LinkedIn's 999, or a bot challenge page (see [`classify`]).
        Blocked = "blocked",
        /// No answer for now: a timeout, 408, or a 5xx after every retry.
        Transient = "transient",
        /// A permanent redirect (301, 308): the link works, and should name the target.
        Redirected = "redirected",
    }
}

impl LinkClass {
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// Titles of the pages bot walls answer with instead of the page (Cloudflare's managed
/// challenge and block page, DDoS-Guard, AWS WAF's CAPTCHA, Vercel's checkpoint), matched
/// as prefixes, lower-cased. Only error statuses are judged by title: a 200 page may well
/// be called "Just a moment".
const CHALLENGE_TITLES: &[&str] = &[
    "just a moment",
    "attention required! | cloudflare",
    "please wait... | cloudflare",
    "checking your browser",
    "ddos-guard",
    "human verification",
    "vercel security checkpoint",
];

/// Whether a page titled `title` is a bot challenge (see [`CHALLENGE_TITLES`]).
fn is_challenge(title: Option<&str>) -> bool {
    let Some(title) = title else {
        return false;
    };
    let title = title.trim().to_ascii_lowercase();
    CHALLENGE_TITLES.iter().any(|t| title.starts_with(t))
}

/// The class of a URL from its stored result (`urls.state`, `status`, `error_kind`,
/// `title`), or `None` when a link to it is fine (2xx, 302, 303, 307, 304, ...) or it was
/// never fetched (queued, skipped).
///
/// A failed URL (no usable response) is transient when it timed out and broken for every
/// other error kind, an unknown one included: the link could not be followed. A fetched
/// URL is judged by its status, after its retries: 301 and 308 are redirected; 401, 403,
/// 407, 429 and 999 blocked; 408 and 5xx transient; any other status from 400 up broken.
/// Any error status whose page is a bot challenge (a title starting like Cloudflare's
/// "Just a moment..." or "Attention Required! | Cloudflare", DDoS-Guard's, AWS WAF's
/// "Human Verification", Vercel's "Vercel Security Checkpoint") is blocked, whatever the
/// status: a 503 challenge says nothing about the link.
pub fn classify(
    state: UrlState,
    status: Option<u16>,
    error_kind: Option<&str>,
    title: Option<&str>,
) -> Option<LinkClass> {
    match state {
        UrlState::Failed => Some(match error_kind.and_then(|k| k.parse().ok()) {
            Some(ErrorKind::Timeout) => LinkClass::Transient,
            _ => LinkClass::Broken,
        }),
        UrlState::Done => {
            let status = status?;
            if status >= 400 && is_challenge(title) {
                return Some(LinkClass::Blocked);
            }
            match status {
                301 | 308 => Some(LinkClass::Redirected),
                401 | 403 | 407 | 429 | 999 => Some(LinkClass::Blocked),
                408 | 500..=599 => Some(LinkClass::Transient),
                400.. => Some(LinkClass::Broken),
                _ => None,
            }
        }
        UrlState::Queued | UrlState::Skipped => None,
    }
}

/// A SQL condition on the `urls` row `alias` that holds for every URL [`classify`] may
/// put in one of `classes` (and for some others, which `classify` then turns down): what
/// a query selects before the rows are classified. `fragment` adds nothing: fragments are
/// judged per link, not per URL. The test below holds the two together.
pub(crate) fn candidates_sql(alias: &str, classes: LinkClasses) -> String {
    let any = |c: &[LinkClass]| c.iter().any(|&c| classes.contains(c));
    let mut parts = Vec::new();
    if any(&[LinkClass::Broken, LinkClass::Transient]) {
        parts.push(format!("{alias}.state = 2"));
    }
    if any(&[LinkClass::Broken, LinkClass::Blocked, LinkClass::Transient]) {
        parts.push(format!("({alias}.state = 1 AND {alias}.status >= 400)"));
    }
    if classes.contains(LinkClass::Redirected) {
        parts.push(format!(
            "({alias}.state = 1 AND {alias}.status IN (301, 308))"
        ));
    }
    if parts.is_empty() {
        return "0".into();
    }
    format!("({})", parts.join(" OR "))
}

/// A set of classes: what `--class` lists and `--fail-on` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LinkClasses(u8);

impl LinkClasses {
    /// No class.
    pub const NONE: LinkClasses = LinkClasses(0);
    /// What `report broken` lists unless told otherwise: broken, fragment, blocked,
    /// transient (a permanent redirect works; it is listed when asked for).
    pub const REPORTED: LinkClasses = LinkClasses(0b01111);
    /// What `--fail-on-errors` fails on: broken, fragment (blocked and transient links may
    /// be fine: a CI run should not fail on a site that refuses robots, or is down for a
    /// minute).
    pub const ERRORS: LinkClasses = LinkClasses(0b00011);
    /// Every class.
    pub const ALL: LinkClasses = LinkClasses(0b11111);

    /// The set holding `classes`.
    pub fn of(classes: &[LinkClass]) -> LinkClasses {
        LinkClasses(classes.iter().fold(0, |bits, c| bits | c.bit()))
    }

    /// Whether `class` is in the set.
    pub fn contains(self, class: LinkClass) -> bool {
        self.0 & class.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The classes in the set, in [`LinkClass::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = LinkClass> {
        LinkClass::ALL
            .iter()
            .copied()
            .filter(move |&c| self.contains(c))
    }
}

impl std::fmt::Display for LinkClasses {
    /// The names, comma-separated, as `--class` takes them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.iter().map(LinkClass::as_str).collect();
        f.write_str(&names.join(","))
    }
}

impl FromStr for LinkClasses {
    type Err = String;
    /// Names separated by commas (`broken,fragment`); at least one.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut set = LinkClasses::NONE;
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            set.0 |= name.parse::<LinkClass>()?.bit();
        }
        if set.is_empty() {
            let names: Vec<&str> = LinkClass::ALL.iter().map(|c| c.as_str()).collect();
            return Err(format!(
                "no link class given; expected some of {}",
                names.join(", ")
            ));
        }
        Ok(set)
    }
}

/// How many links of each class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassCounts([u64; 5]);

impl ClassCounts {
    /// Count one more link of `class`.
    pub fn add(&mut self, class: LinkClass) {
        self.0[class as usize] += 1;
    }

    /// The links of `class`.
    pub fn get(&self, class: LinkClass) -> u64 {
        self.0[class as usize]
    }

    /// Every link counted.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `broken 3, fragment 1` for the classes of `shown` (each, even at zero).
    pub fn describe(&self, shown: LinkClasses) -> String {
        let parts: Vec<String> = shown
            .iter()
            .map(|c| format!("{c} {}", self.get(c)))
            .collect();
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LinkClass::*;

    fn fetched(status: u16) -> Option<LinkClass> {
        classify(UrlState::Done, Some(status), None, None)
    }

    #[test]
    fn statuses() {
        for (status, class) in [
            (200, None),
            (204, None),
            (301, Some(Redirected)),
            (302, None),
            (303, None),
            (304, None),
            (307, None),
            (308, Some(Redirected)),
            (400, Some(Broken)),
            (401, Some(Blocked)),
            (403, Some(Blocked)),
            (404, Some(Broken)),
            (405, Some(Broken)),
            (407, Some(Blocked)),
            (408, Some(Transient)),
            (410, Some(Broken)),
            (429, Some(Blocked)),
            (451, Some(Broken)),
            (500, Some(Transient)),
            (503, Some(Transient)),
            (599, Some(Transient)),
            (999, Some(Blocked)),
        ] {
            assert_eq!(fetched(status), class, "{status}");
        }
    }

    #[test]
    fn failures() {
        let failed = |kind: Option<&str>| classify(UrlState::Failed, None, kind, None);
        assert_eq!(failed(Some("timeout")), Some(Transient));
        for kind in ErrorKind::ALL.iter().filter(|k| **k != ErrorKind::Timeout) {
            assert_eq!(failed(Some(kind.as_str())), Some(Broken), "{kind}");
        }
        assert_eq!(failed(Some("something-new")), Some(Broken));
        assert_eq!(failed(None), Some(Broken));
        assert_eq!(classify(UrlState::Skipped, None, None, None), None);
        assert_eq!(classify(UrlState::Queued, None, None, None), None);
    }

    #[test]
    fn challenge_pages_are_blocked_on_error_statuses_only() {
        let page = |status, title| classify(UrlState::Done, Some(status), None, Some(title));
        assert_eq!(page(503, "Just a moment..."), Some(Blocked));
        assert_eq!(page(403, "Attention Required! | Cloudflare"), Some(Blocked));
        assert_eq!(page(503, "  DDoS-Guard "), Some(Blocked));
        assert_eq!(page(429, "Vercel Security Checkpoint"), Some(Blocked));
        assert_eq!(page(503, "Service Unavailable"), Some(Transient));
        assert_eq!(page(200, "Just a moment..."), None);
        assert_eq!(page(404, "Not Found"), Some(Broken));
    }

    #[test]
    fn candidates_hold_every_classified_url() {
        // Every (state, status) pair with a title that makes a challenge, in a table:
        // the condition must select each row `classify` puts in the classes asked.
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE urls (state INTEGER, status INTEGER, title TEXT)")
            .unwrap();
        for state in 0..4 {
            for status in (100..1000).map(Some).chain([None]) {
                conn.execute(
                    "INSERT INTO urls VALUES (?1, ?2, 'Just a moment...'), (?1, ?2, NULL)",
                    rusqlite::params![state, status],
                )
                .unwrap();
            }
        }
        let mut subsets = vec![LinkClasses::ALL, LinkClasses::REPORTED, LinkClasses::NONE];
        subsets.extend(LinkClass::ALL.iter().map(|&c| LinkClasses::of(&[c])));
        for classes in subsets {
            let sql = format!(
                "SELECT state, status, title, {} FROM urls",
                candidates_sql("urls", classes)
            );
            let mut st = conn.prepare(&sql).unwrap();
            let mut rows = st.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                let state = UrlState::from_code(r.get(0).unwrap()).unwrap();
                let status: Option<u16> = r.get(1).unwrap();
                let title: Option<String> = r.get(2).unwrap();
                let selected = r.get::<_, Option<bool>>(3).unwrap().unwrap_or(false);
                let class = classify(state, status, None, title.as_deref());
                if class.is_some_and(|c| classes.contains(c)) {
                    assert!(selected, "{classes}: {state:?} {status:?} {title:?}");
                }
            }
        }
    }

    #[test]
    fn sets_parse_and_print() {
        let set: LinkClasses = "broken, fragment".parse().unwrap();
        assert_eq!(set, LinkClasses::ERRORS);
        assert_eq!(set.to_string(), "broken,fragment");
        assert_eq!(
            LinkClasses::REPORTED.to_string(),
            "broken,fragment,blocked,transient"
        );
        assert!("broken,teapot".parse::<LinkClasses>().is_err());
        assert!("".parse::<LinkClasses>().is_err());
        assert_eq!(LinkClasses::ALL.iter().count(), LinkClass::ALL.len());
        let mut counts = ClassCounts::default();
        counts.add(Broken);
        counts.add(Broken);
        counts.add(Blocked);
        assert_eq!(counts.total(), 3);
        assert_eq!(counts.describe(LinkClasses::ERRORS), "broken 2, fragment 0");
    }
}
