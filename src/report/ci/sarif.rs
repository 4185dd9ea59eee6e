//! SARIF 2.1.0 (OASIS), what code scanning tools read: one run whose tool, `trawl`, has a
//! rule per link class (id = the class name), and a result per link listed, located at the
//! page that holds the link (`artifactLocation.uri` is its URL; `region` the line and
//! column of the link's element, when known). Levels: `error` for broken links and
//! missing fragments, `warning` for blocked and transient ones, `note` for permanent
//! redirects.
//!
//! Columns are byte columns, as the crawl stores them: exact on ASCII lines, while SARIF
//! counts UTF-16 code units by default (no `columnKind` says otherwise: SARIF has no byte
//! kind). Results stream: the log's head is written first, then each result as it comes.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::{level, located_at, message, BrokenLink, Level, Writer};
use crate::check::LinkClass;

/// The schema of SARIF 2.1.0 with its errata, as the OASIS standard names it.
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

pub(super) struct Sarif<'a> {
    out: &'a mut dyn Write,
    results: u64,
}

impl<'a> Sarif<'a> {
    /// Write the log's head (up to its results) to `out`.
    pub(super) fn start(out: &'a mut dyn Write) -> io::Result<Sarif<'a>> {
        let tool = json!({
            "driver": {
                "name": "trawl",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://crates.io/crates/trawl",
                "rules": LinkClass::ALL.iter().map(|&c| rule(c)).collect::<Vec<_>>(),
            }
        });
        write!(
            out,
            "{{\"$schema\":{},\"version\":\"2.1.0\",\"runs\":[{{\"tool\":",
            Value::from(SCHEMA)
        )?;
        serde_json::to_writer(&mut *out, &tool)?;
        out.write_all(b",\"results\":[")?;
        Ok(Sarif { out, results: 0 })
    }
}

impl Writer for Sarif<'_> {
    fn link(&mut self, l: &BrokenLink) -> io::Result<()> {
        let sep: &[u8] = if self.results == 0 { b"\n" } else { b",\n" };
        self.out.write_all(sep)?;
        serde_json::to_writer(&mut *self.out, &result(l))?;
        self.results += 1;
        Ok(())
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        self.out.write_all(b"\n]}]}\n")?;
        self.out.flush()
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Note => "note",
    }
}

/// The rule of `class`: what it means and what to do about it.
fn rule(class: LinkClass) -> Value {
    let (name, short, help) = match class {
        LinkClass::Broken => (
            "BrokenLink",
            "Link to a page that is gone or unreachable",
            "The target answered 404, 410 or another 4xx, or could not be reached (no such host, refused connection, a redirect loop, a broken body). Fix or remove the link.",
        ),
        LinkClass::Fragment => (
            "MissingFragment",
            "Link to a part of a page that does not exist",
            "The target page has no element whose id is the link's #fragment, nor an <a name> with it: the browser stays at the top of the page. Link to an existing id, or add it.",
        ),
        LinkClass::Blocked => (
            "BlockedLink",
            "Link the site would not let the checker follow",
            "The target answered 401, 403, 407, 429 (after every retry) or 999, or a bot challenge page. The link may well work in a browser: check it by hand, or exclude the host.",
        ),
        LinkClass::Transient => (
            "TransientFailure",
            "Link whose target did not answer for now",
            "The request timed out, or the target answered 408 or 5xx after every retry. Try again later; a link that keeps failing is broken.",
        ),
        LinkClass::Redirected => (
            "PermanentRedirect",
            "Link to a URL that has moved for good",
            "The target answered 301 or 308: the link works through a redirect. Link to where it leads instead.",
        ),
    };
    json!({
        "id": class.as_str(),
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": help},
        "help": {"text": help},
        "defaultConfiguration": {"level": level_name(level(class))},
    })
}

/// The result of one link.
fn result(l: &BrokenLink) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": located_at(l)}});
    if let Some(line) = l.line {
        let mut region = json!({"startLine": line});
        if let Some(column) = l.column {
            region["startColumn"] = column.into();
        }
        physical["region"] = region;
    }
    json!({
        "ruleId": l.class.as_str(),
        "ruleIndex": l.class as usize,
        "level": level_name(level(l.class)),
        "message": {"text": message(l)},
        "locations": [{"physicalLocation": physical}],
        "properties": {
            "target": l.target,
            "status": l.status,
            "error": l.error,
            "kind": l.kind,
            "anchor": l.anchor,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{render, rows};
    use super::*;

    #[test]
    fn one_run_with_a_rule_per_class_and_a_result_per_link() {
        let text = render(|b| Box::new(Sarif::start(b).unwrap()), &rows());
        let log: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["broken", "fragment", "blocked", "transient", "redirected"]
        );
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 4);
        let first = &results[0];
        assert_eq!(first["level"], "error");
        assert_eq!(
            rules[first["ruleIndex"].as_u64().unwrap() as usize]["id"],
            first["ruleId"]
        );
        let location = &first["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "http://h/");
        assert_eq!(
            location["region"],
            json!({"startLine": 3, "startColumn": 7})
        );
        assert_eq!(results[2]["level"], "warning");
        assert!(results[2]["locations"][0]["physicalLocation"]["region"].is_null());
        // A seed nobody links to is located at itself.
        let seed = &results[3]["locations"][0]["physicalLocation"];
        assert_eq!(seed["artifactLocation"]["uri"], "http://dead.invalid/");
        let empty: Value =
            serde_json::from_str(&render(|b| Box::new(Sarif::start(b).unwrap()), &[])).unwrap();
        assert_eq!(empty["runs"][0]["results"], json!([]));
    }
}
