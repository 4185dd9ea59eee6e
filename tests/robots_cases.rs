//! Every `IsUserAgentAllowed` assertion of Google's robots.txt parser tests
//! (`tests/data/google_robotstxt_cases.json`), run against trawl's parser.
//!
//! [`Robots::is_allowed_path`] takes the path as raw bytes, the way Google's matcher does,
//! and must agree on every case. [`Robots::is_allowed`] takes a `url::Url`, which cannot
//! hold some of the test URLs as written; the cases where it therefore answers otherwise
//! are listed, with the reason, in `tests/data/robots_expected_differences.toml`. The test
//! fails on an unlisted difference and on a listed case that no longer differs, so the
//! list stays true.

use std::collections::BTreeSet;

use serde::Deserialize;
use trawl::internals::Robots;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/google_robotstxt_cases.json"
);
const DIFFERENCES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/robots_expected_differences.toml"
);

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    test: String,
    robotstxt: String,
    useragent: String,
    url: String,
    expected_allowed: bool,
}

#[derive(Deserialize)]
struct Differences {
    difference: Vec<Difference>,
}

#[derive(Deserialize)]
struct Difference {
    test: String,
    url: String,
    reason: String,
}

fn load_cases() -> Vec<Case> {
    let text = std::fs::read_to_string(CASES).unwrap_or_else(|e| panic!("{CASES}: {e}"));
    let cases: Cases = serde_json::from_str(&text).expect("cases parse");
    assert_eq!(cases.cases.len(), 145, "the transcription has 145 cases");
    cases.cases
}

/// Path, parameters and query of a URL string as written, without its fragment: what
/// Google's matcher compares against. Written here, not in trawl, because trawl always
/// has a parsed `Url` to hand.
fn raw_path(url: &str) -> String {
    let after_scheme = url.find("://").map_or(url, |at| &url[at + 3..]);
    let Some(start) = after_scheme.find(['/', '?', ';']) else {
        return "/".to_owned();
    };
    let path = &after_scheme[start..];
    let path = path.find('#').map_or(path, |at| &path[..at]);
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    }
}

#[test]
fn raw_paths_agree_with_google_on_every_case() {
    let mut failures = Vec::new();
    for case in load_cases() {
        let robots = Robots::parse(case.robotstxt.as_bytes());
        let got = robots.is_allowed_path(&case.useragent, &raw_path(&case.url));
        if got != case.expected_allowed {
            failures.push(format!(
                "{} agent={:?} url={:?}: got {got}, Google says {}",
                case.test,
                case.useragent,
                shorten(&case.url),
                case.expected_allowed
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn parsed_urls_agree_except_where_listed() {
    let text =
        std::fs::read_to_string(DIFFERENCES).unwrap_or_else(|e| panic!("{DIFFERENCES}: {e}"));
    let listed: Differences = toml::from_str(&text).expect("differences parse");
    for difference in &listed.difference {
        assert!(
            !difference.reason.trim().is_empty(),
            "{} {:?} needs a reason",
            difference.test,
            difference.url
        );
    }
    let listed: BTreeSet<(String, String)> = listed
        .difference
        .into_iter()
        .map(|d| (d.test, d.url))
        .collect();

    let mut unexpected = Vec::new();
    let mut differing = BTreeSet::new();
    let mut agreeing = BTreeSet::new();
    for case in load_cases() {
        let robots = Robots::parse(case.robotstxt.as_bytes());
        // A string that is not a URL cannot be asked about at all: that is a difference.
        let got = url::Url::parse(&case.url)
            .ok()
            .map(|url| robots.is_allowed(&case.useragent, &url));
        let key = (case.test.clone(), case.url.clone());
        if got == Some(case.expected_allowed) {
            agreeing.insert(key);
        } else {
            if !listed.contains(&key) {
                unexpected.push(format!(
                    "{} agent={:?} url={:?}: got {got:?}, Google says {}",
                    case.test,
                    case.useragent,
                    shorten(&case.url),
                    case.expected_allowed
                ));
            }
            differing.insert(key);
        }
    }
    let stale: Vec<_> = listed
        .iter()
        .filter(|key| !differing.contains(*key) || agreeing.contains(*key))
        .collect();
    assert!(
        unexpected.is_empty(),
        "differences not listed in {DIFFERENCES}:\n{}",
        unexpected.join("\n")
    );
    assert!(
        stale.is_empty(),
        "listed in {DIFFERENCES} but no longer (or not always) different: {stale:?}"
    );
}

fn shorten(url: &str) -> String {
    if url.len() <= 120 {
        return url.to_owned();
    }
    let head: String = url.chars().take(60).collect();
    format!("{head}…({} bytes)", url.len())
}
