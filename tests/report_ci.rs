//! `trawl report broken` in the formats CI systems read, and `trawl crawl --fail-on`, on a
//! real crawl (both stores) of a local site whose links meet every class: 404, 410, a
//! refused connection (broken), 403, 429 after its retries, a Cloudflare challenge
//! (blocked), 503 after its retries (transient), a 301 (redirected) and a missing
//! `#fragment`. Each format is read back by what reads it in CI, or by its rules: JUnit by
//! Python's junitparser, SARIF against the official SARIF 2.1.0 schema with Python's
//! jsonschema (`tests/data/sarif-schema-2.1.0.json`), Markdown as a table, GitHub
//! workflow commands with GitHub's escaping undone; each must list exactly the links the
//! JSON report lists.

use crate::support;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};

/// The site's answers: one path per class, and a page with ids.
async fn answer(req: Request) -> Response {
    let html = |status: StatusCode, body: &'static str| {
        (status, [(header::CONTENT_TYPE, "text/html")], body).into_response()
    };
    // Retried, and the host paused, for a moment only.
    let busy = |status: StatusCode, body: &'static str| {
        (
            status,
            [
                (header::CONTENT_TYPE, "text/html"),
                (header::RETRY_AFTER, "0"),
            ],
            body,
        )
            .into_response()
    };
    match req.uri().path() {
        "/doc" => html(
            StatusCode::OK,
            "<h2 id=\"there\">There</h2><a name=\"old\"></a>",
        ),
        "/final" => html(StatusCode::OK, "<p>moved here</p>"),
        "/gone" => html(StatusCode::GONE, "<title>Gone</title>"),
        "/private" => html(StatusCode::FORBIDDEN, "<title>Forbidden</title>"),
        "/busy" => busy(StatusCode::TOO_MANY_REQUESTS, "<title>Slow down</title>"),
        "/down" => busy(StatusCode::SERVICE_UNAVAILABLE, "<title>Down</title>"),
        "/challenge" => busy(
            StatusCode::SERVICE_UNAVAILABLE,
            "<title>Just a moment...</title>",
        ),
        "/moved" => (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, "/final")],
        )
            .into_response(),
        _ => html(StatusCode::NOT_FOUND, "<title>Not Found</title>"),
    }
}

/// The front page, by lines so the test knows where each link is. `dead` is a URL on the
/// site's host name where nothing listens (in scope, refused).
fn front(dead: &str) -> String {
    [
        "<!doctype html><html><head><title>Home</title></head><body>".to_string(),
        "<p><a href=\"/missing\">missing</a> <a href=\"/gone\">gone</a>".to_string(),
        "  <a href=\"/private\">private</a><a href=\"/busy\">busy</a>".to_string(),
        "<a href=\"/down\">down</a> <a href=\"/challenge\">challenged</a>".to_string(),
        format!("<a href=\"{dead}\">dead</a> <a href=\"/moved\">moved</a>"),
        "<a href=\"/doc#there\">there</a> <a href=\"/doc#nowhere\">nowhere</a>".to_string(),
        "<a href=\"/weird?q=a|b,c:d%25`e\">pipe | and `ticks` &amp; <b>markup</b></a>".to_string(),
        "</body></html>".to_string(),
    ]
    .join("\n")
}

/// Where the `<a` whose href starts with `href` is in `html`: (line, byte column), from 1.
fn place(html: &str, href: &str) -> (i64, i64) {
    let at = html
        .find(&format!("<a href=\"{href}"))
        .unwrap_or_else(|| panic!("{href} on the page"));
    let before = &html[..at];
    let line = before.matches('\n').count() as i64 + 1;
    let col = (at - before.rfind('\n').map_or(0, |n| n + 1)) as i64 + 1;
    (line, col)
}

struct Crawled {
    base: String,
    front: String,
    dead: String,
    site: Adhoc,
}

/// A URL on 127.0.0.1 (the site's host name: in scope) where nothing listens.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/")
}

/// Crawl the site into the crawl "s"; quick retries, so 429 and 503 outlast theirs fast.
async fn crawl(store: &Backend) -> Crawled {
    let dead = closed_port_url();
    let front = front(&dead);
    let page = front.clone();
    let app = Router::new()
        .route(
            "/",
            axum::routing::get(move || {
                let page = page.clone();
                async move { ([(header::CONTENT_TYPE, "text/html")], page) }
            }),
        )
        .fallback(answer);
    let site = Adhoc::start(app).await;
    store
        .crawl(
            store
                .builder("s")
                .seed(format!("{}/", site.base))
                .max_attempts(2)
                .retry_backoff(Duration::from_millis(10))
                .max_retry_after(Duration::from_millis(50)),
        )
        .await;
    Crawled {
        base: site.base.clone(),
        front,
        dead,
        site,
    }
}

/// `trawl report <crawl s> broken ARGS`: its standard output (exit 0 asserted).
fn report(store: &Backend, args: &[&str]) -> String {
    let out = trawl(store.dir(), store.read_args("s"), "report", args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn trawl(dir: &Path, source: Vec<String>, command: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
        .current_dir(dir)
        .arg(command)
        .args(source)
        .args(args)
        .env_remove("TRAWL_LOG")
        .output()
        .unwrap()
}

/// The JSON report's rows: the truth every other format is held to.
fn rows(store: &Backend, args: &[&str]) -> Vec<serde_json::Map<String, Value>> {
    let args: Vec<&str> = ["broken", "--format", "json"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    let v: Value = serde_json::from_str(&report(store, &args)).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .collect()
}

/// Run a Python script (on standard input) with `args`; its standard output.
fn python(script: &str, args: &[&Path]) -> String {
    let mut child = Command::new("python3")
        .arg("-")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn text(v: &Value) -> String {
    v.as_str().map(str::to_owned).unwrap_or_default()
}

/// A row's identity in every format: (target, class, where the link is).
type Listed = (String, String, String);

fn identity(r: &serde_json::Map<String, Value>) -> Listed {
    let at = match r["source"].as_str() {
        Some(s) => s.to_owned(),
        None => text(&r["target"]),
    };
    (text(&r["target"]), text(&r["class"]), at)
}

async fn classes_are_reported(store: Backend) {
    let c = crawl(&store).await;
    let b = &c.base;
    let rows = rows(&store, &[]);
    let class_of = |target: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r["target"] == target)
            .map(|r| text(&r["class"]))
            .collect()
    };
    for (path, class, status) in [
        ("/missing", "broken", Some(404)),
        ("/gone", "broken", Some(410)),
        ("/private", "blocked", Some(403)),
        ("/busy", "blocked", Some(429)),
        ("/challenge", "blocked", Some(503)),
        ("/down", "transient", Some(503)),
    ] {
        let target = format!("{b}{path}");
        assert_eq!(class_of(&target), [class], "{target}: {rows:?}");
        let row = rows.iter().find(|r| r["target"] == target).unwrap();
        assert_eq!(row["status"].as_i64(), status.map(i64::from), "{row:?}");
        assert_eq!(row["source"], format!("{b}/"), "{row:?}");
        assert_eq!(row["kind"], "a");
    }
    let dead = rows
        .iter()
        .find(|r| r["target"] == c.dead)
        .expect("the refused link");
    assert_eq!(
        (dead["class"].as_str(), dead["error"].as_str()),
        (Some("broken"), Some("connect"))
    );
    // The 429 outlasted its retries: asked twice.
    assert_eq!(c.site.hits("/busy").len(), 2);
    // A permanent redirect works: listed only when asked for.
    assert!(class_of(&format!("{b}/moved")).is_empty());
    let redirected = self::rows(&store, &["--class", "redirected"]);
    let targets: Vec<String> = redirected.iter().map(|r| text(&r["target"])).collect();
    assert_eq!(targets, [format!("{b}/moved")]);
    assert_eq!(redirected[0]["status"], 301);
    assert_eq!(
        redirected[0]["redirect"],
        format!("{b}/final"),
        "a redirected link names what it should say instead"
    );
    // Nothing fine is listed.
    for r in &rows {
        let target = text(&r["target"]);
        assert!(
            !target.ends_with("/doc#there") && !target.ends_with("/final"),
            "{r:?}"
        );
    }
}

async fn sarif_is_valid_and_locates_each_link(store: Backend) {
    let _c = crawl(&store).await;
    let rows = rows(
        &store,
        &["--class", "broken,fragment,blocked,transient,redirected"],
    );
    let sarif = report(
        &store,
        &[
            "broken",
            "--format",
            "sarif",
            "--class",
            "broken,fragment,blocked,transient,redirected",
        ],
    );
    let file = write(store.dir(), "links.sarif", &sarif);
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json");
    let checked = python(
        "import json, sys, jsonschema\n\
         schema = json.load(open(sys.argv[1]))\n\
         log = json.load(open(sys.argv[2]))\n\
         jsonschema.Draft4Validator(schema).validate(log)\n\
         print(len(log['runs'][0]['results']))\n",
        &[&schema, &file],
    );
    assert_eq!(checked.trim(), rows.len().to_string());
    let log: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "trawl");
    let rules: Vec<String> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| text(&r["id"]))
        .collect();
    assert_eq!(
        rules,
        ["broken", "fragment", "blocked", "transient", "redirected"]
    );
    let results = run["results"].as_array().unwrap();
    for (r, result) in rows.iter().zip(results) {
        let (target, class, at) = identity(r);
        assert_eq!(result["ruleId"], class);
        assert_eq!(rules[result["ruleIndex"].as_u64().unwrap() as usize], class);
        let level = match class.as_str() {
            "broken" | "fragment" => "error",
            "blocked" | "transient" => "warning",
            _ => "note",
        };
        assert_eq!(result["level"], level, "{result}");
        let message = text(&result["message"]["text"]);
        assert!(message.contains(&target), "{message}");
        let answer = match r["status"].as_i64() {
            Some(s) if r["error"].is_null() => format!("HTTP {s}"),
            _ => text(&r["error"]),
        };
        assert!(message.contains(&answer), "{message} lacks {answer}");
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(
            text(&location["artifactLocation"]["uri"]),
            at.split('#').next().unwrap()
        );
        assert_eq!(location["region"]["startLine"], r["line"], "{result}");
        assert_eq!(location["region"]["startColumn"], r["column"], "{result}");
    }
}

async fn junit_has_a_testcase_per_link(store: Backend) {
    let _c = crawl(&store).await;
    let rows = rows(&store, &[]);
    let xml = report(&store, &["broken", "--format", "junit"]);
    let file = write(store.dir(), "links.xml", &xml);
    let parsed = python(
        "import json, sys\n\
         from junitparser import JUnitXml, Failure\n\
         xml = JUnitXml.fromfile(sys.argv[1])\n\
         cases = []\n\
         for suite in xml:\n\
         \x20   for case in suite:\n\
         \x20       failures = [r for r in case.result if isinstance(r, Failure)]\n\
         \x20       cases.append({'name': case.name, 'classname': case.classname,\n\
         \x20           'failures': [{'type': f.type, 'message': f.message, 'text': f.text} for f in failures]})\n\
         print(json.dumps({'tests': xml.tests, 'failures': xml.failures, 'cases': cases}))\n",
        &[&file],
    );
    let parsed: Value = serde_json::from_str(&parsed).unwrap();
    assert_eq!(parsed["tests"].as_u64(), Some(rows.len() as u64));
    assert_eq!(parsed["failures"].as_u64(), Some(rows.len() as u64));
    let cases = parsed["cases"].as_array().unwrap();
    assert_eq!(cases.len(), rows.len());
    let got: BTreeSet<Listed> = cases
        .iter()
        .map(|c| {
            let failures = c["failures"].as_array().unwrap();
            assert_eq!(failures.len(), 1, "{c}");
            let f = &failures[0];
            assert!(text(&f["message"]).contains(text(&c["name"]).split(' ').next().unwrap()));
            assert!(text(&f["text"]).contains("target: "), "{f}");
            (text(&c["name"]), text(&f["type"]), text(&c["classname"]))
        })
        .collect();
    let want: BTreeSet<Listed> = rows.iter().map(identity).collect();
    assert_eq!(got, want);
    // The awkward link's text came through the escaping whole.
    let weird = cases
        .iter()
        .find(|c| text(&c["name"]).contains("/weird?"))
        .expect("the link with awkward text");
    let message = text(&weird["failures"][0]["message"]);
    assert!(message.contains("pipe | and `ticks` & markup"), "{message}");
}

/// The cells of a Markdown table row: split at unescaped pipes, escapes undone.
fn cells(line: &str) -> Vec<String> {
    let inner = line
        .trim()
        .strip_prefix('|')
        .unwrap()
        .strip_suffix('|')
        .unwrap();
    let mut cells = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cells.last_mut().unwrap().push(chars.next().unwrap()),
            '|' => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells
        .into_iter()
        .map(|c| {
            c.trim()
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .collect()
}

async fn markdown_is_a_table_with_counts(store: Backend) {
    let _c = crawl(&store).await;
    let rows = rows(&store, &[]);
    let md = report(&store, &["broken", "--format", "markdown"]);
    let lines: Vec<&str> = md.lines().collect();
    assert!(lines[0].starts_with('#'), "{md}");
    let count = |class: &str| rows.iter().filter(|r| r["class"] == class).count();
    let counts = format!(
        "**{} links**: broken {}, fragment {}, blocked {}, transient {}",
        rows.len(),
        count("broken"),
        count("fragment"),
        count("blocked"),
        count("transient")
    );
    assert!(lines.contains(&counts.as_str()), "{counts}\n{md}");
    let table: Vec<Vec<String>> = lines
        .iter()
        .filter(|l| l.starts_with('|'))
        .map(|l| cells(l))
        .collect();
    assert_eq!(
        table[0],
        ["Target", "Class", "Status", "Source", "Line", "Column", "Anchor"]
    );
    assert!(table[1].iter().all(|c| c.chars().all(|c| c == '-')));
    let body = &table[2..];
    assert_eq!(body.len(), rows.len());
    for (r, cells) in rows.iter().zip(body) {
        assert_eq!(cells.len(), 7, "{cells:?}");
        assert_eq!(cells[0], text(&r["target"]));
        assert_eq!(cells[1], text(&r["class"]));
        assert_eq!(cells[3], text(&r["source"]));
        let number = |v: &Value| v.as_i64().map(|n| n.to_string()).unwrap_or_default();
        assert_eq!(
            (&cells[4], &cells[5]),
            (&number(&r["line"]), &number(&r["column"]))
        );
        assert_eq!(cells[6], text(&r["anchor"]));
    }
}

/// GitHub's escaping undone (`%25` last, so `%253A` stays `%3A`).
fn unescape(s: &str) -> String {
    s.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
}

async fn github_annotations_name_page_line_and_class(store: Backend) {
    let _c = crawl(&store).await;
    let all = "broken,fragment,blocked,transient,redirected";
    let rows = rows(&store, &["--class", all]);
    let out = report(&store, &["broken", "--format", "github", "--class", all]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), rows.len(), "{out}");
    for (r, line) in rows.iter().zip(&lines) {
        let rest = line.strip_prefix("::").unwrap_or_else(|| panic!("{line}"));
        let (command, rest) = rest.split_once(' ').unwrap();
        let (properties, message) = rest.split_once("::").unwrap();
        let props: Vec<(String, String)> = properties
            .split(',')
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_owned(), unescape(v))
            })
            .collect();
        let get = |k: &str| props.iter().find(|p| p.0 == k).map(|p| p.1.clone());
        let (target, class, at) = identity(r);
        let want = match class.as_str() {
            "broken" | "fragment" => "error",
            "blocked" | "transient" => "warning",
            _ => "notice",
        };
        assert_eq!(command, want, "{line}");
        assert_eq!(get("file").as_deref(), Some(at.split('#').next().unwrap()));
        assert_eq!(get("title"), Some(class));
        let number = |v: &Value| v.as_i64().map(|n| n.to_string());
        assert_eq!(get("line"), number(&r["line"]), "{line}");
        assert_eq!(get("col"), number(&r["column"]), "{line}");
        assert!(unescape(message).contains(&target), "{line}");
        assert!(!message.contains('\n') && !message.contains('\r'));
    }
    // Only broken is written in the CI formats, and only broken has classes.
    for args in [
        &["top", "--format", "sarif"][..],
        &["summary", "--class", "broken"],
    ] {
        let out = trawl(store.dir(), store.read_args("s"), "report", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("broken"));
    }
}

async fn fail_on_counts_the_classes_named(store: Backend) {
    let _c = crawl(&store).await;
    let again = |name: &str, flags: &[&str]| trawl(store.dir(), store.args(name), "crawl", flags);
    let out = again("s", &["--fail-on-errors"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--fail-on-errors") && err.contains("broken "),
        "{err}"
    );
    assert!(err.contains("broken --class broken,fragment"), "{err}");
    for class in ["blocked", "transient", "redirected", "broken,redirected"] {
        let out = again("s", &["--fail-on", class]);
        assert_eq!(out.status.code(), Some(1), "{class}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("--fail-on {class}")), "{err}");
    }
    assert_eq!(again("s", &[]).status.code(), Some(0));
    assert_eq!(again("s", &["--fail-on", "teapot"]).status.code(), Some(2));
    let both = again("s", &["--fail-on", "blocked", "--fail-on-errors"]);
    assert_eq!(both.status.code(), Some(2), "one or the other");

    // A site with nothing to fix passes every class.
    let app = Router::new()
        .route(
            "/",
            axum::routing::get(|| async {
                axum::response::Html("<a href=\"/final\">on</a> <a href=\"/doc#there\">there</a>")
            }),
        )
        .fallback(answer);
    let clean = Adhoc::start(app).await;
    store
        .crawl(store.builder("clean").seed(format!("{}/", clean.base)))
        .await;
    let every = "broken,fragment,blocked,transient,redirected";
    let out = again("clean", &["--fail-on", every]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Needs the crawl side of link checking (edges.fragment, line, col; urls.ids).
async fn missing_fragments_are_placed_on_their_page(store: Backend) {
    let c = crawl(&store).await;
    let b = &c.base;
    let rows = rows(&store, &[]);
    let fragments: Vec<String> = rows
        .iter()
        .filter(|r| r["class"] == "fragment")
        .map(|r| text(&r["target"]))
        .collect();
    assert_eq!(fragments, [format!("{b}/doc#nowhere")], "{rows:?}");
    let row = rows.iter().find(|r| r["class"] == "fragment").unwrap();
    let (line, col) = place(&c.front, "/doc#nowhere");
    assert_eq!(
        (row["line"].as_i64(), row["column"].as_i64()),
        (Some(line), Some(col))
    );
    assert_eq!(
        (row["status"].as_i64(), row["anchor"].as_str()),
        (Some(200), Some("nowhere"))
    );
    // Every other link is placed too.
    let missing = rows
        .iter()
        .find(|r| r["target"] == format!("{b}/missing"))
        .unwrap();
    let (line, col) = place(&c.front, "/missing");
    assert_eq!(
        (missing["line"].as_i64(), missing["column"].as_i64()),
        (Some(line), Some(col))
    );
    // In SARIF and as an annotation, at that place.
    let sarif: Value = serde_json::from_str(&report(
        &store,
        &["broken", "--format", "sarif", "--class", "fragment"],
    ))
    .unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "fragment");
    let (line, col) = place(&c.front, "/doc#nowhere");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"],
        serde_json::json!({"startLine": line, "startColumn": col})
    );
    assert!(text(&result["message"]["text"]).contains("\"nowhere\""));
    let github = report(
        &store,
        &["broken", "--format", "github", "--class", "fragment"],
    );
    let file = format!("{b}/").replace('%', "%25").replace(':', "%3A");
    let head = format!("::error file={file},line={line},col={col},title=fragment::");
    assert!(github.starts_with(&head), "{github}");
    let out = trawl(
        store.dir(),
        store.args("s"),
        "crawl",
        &["--fail-on", "fragment"],
    );
    assert_eq!(out.status.code(), Some(1), "one fragment is missing");
}

both_stores!(
    classes_are_reported,
    sarif_is_valid_and_locates_each_link,
    junit_has_a_testcase_per_link,
    markdown_is_a_table_with_counts,
    github_annotations_name_page_line_and_class,
    fail_on_counts_the_classes_named,
    missing_fragments_are_placed_on_their_page
);
