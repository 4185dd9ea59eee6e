//! Every export format, read back by a real consumer: networkx for GraphML, Graphviz for
//! DOT, Python's csv module for CSV, Python's XML parser for sitemaps; and the filters.
//!
//! Python with networkx and Graphviz's `dot` must be installed (`scripts/test` installs
//! them); when they are missing the tests fail rather than skip, so a green run means the
//! files really opened.

use crate::support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::run::trawl_output as trawl;
use support::{Expected, SiteServer};

/// A finished crawl of the small test site in a temporary directory.
struct Crawled {
    dir: tempfile::TempDir,
    db: PathBuf,
    server: SiteServer,
    expected: Expected,
}

async fn crawl() -> Crawled {
    let (server, dir, db, expected) = support::run::crawl_small_site().await;
    Crawled {
        dir,
        db,
        server,
        expected,
    }
}

/// `trawl export --db site.db ARGS`, which must succeed quietly; its stdout.
#[track_caller]
fn export(c: &Crawled, args: &[&str]) -> String {
    let mut all = vec!["export", "--db", "site.db"];
    all.extend_from_slice(args);
    let out = trawl(c.dir.path(), &all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    assert!(out.stderr.is_empty(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).expect("UTF-8 export")
}

/// Run a Python script with `args`; it must succeed. Returns its stdout parsed as JSON.
#[track_caller]
fn python(script: &str, args: &[&Path]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 is needed by these tests: run scripts/test, which installs it");
    assert!(
        out.status.success(),
        "python failed (networkx missing? run scripts/test): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script prints JSON")
}

fn sql_count(db: &Path, query: &str) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(query, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// URL as exported (`coalesce(url, key)`) to canonical key.
fn keys_by_url(db: &Path) -> HashMap<String, String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut st = conn
        .prepare("SELECT coalesce(url, key), key FROM urls")
        .unwrap();
    let map = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    map
}

const GRAPHML_SCRIPT: &str = r#"
import json, sys
import networkx as nx
g = nx.read_graphml(sys.argv[1])
missing = [d for _, d in g.nodes(data=True) if d.get("url", "").endswith("/missing")]
counts = [d["count"] for _, _, d in g.edges(data=True) if "count" in d]
print(json.dumps({
    "directed": g.is_directed(),
    "nodes": g.number_of_nodes(),
    "edges": g.number_of_edges(),
    "missing_status": missing[0]["status"] if missing else None,
    "missing_status_is_int": bool(missing) and type(missing[0]["status"]) is int,
    "nofollow_types": sorted({type(d["nofollow"]).__name__ for _, _, d in g.edges(data=True)}),
    "count_sum": sum(counts),
    "count_types": sorted({type(c).__name__ for c in counts}),
    "titles": sorted(d["title"] for _, d in g.nodes(data=True) if "title" in d),
}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphml_opens_in_networkx() {
    let c = crawl().await;
    let urls = sql_count(&c.db, "SELECT count(*) FROM urls");
    let edges = sql_count(&c.db, "SELECT count(*) FROM edges");
    let file = c.dir.path().join("g.graphml");

    std::fs::write(&file, export(&c, &["--format", "graphml"])).unwrap();
    let g = python(GRAPHML_SCRIPT, &[&file]);
    assert_eq!(g["directed"], true);
    assert_eq!(g["nodes"], urls);
    assert_eq!(g["edges"], edges, "one edge per link occurrence");
    assert_eq!(g["missing_status"], 404);
    assert_eq!(g["missing_status_is_int"], true);
    assert_eq!(g["nofollow_types"], serde_json::json!(["bool"]));

    // Collapsed: one edge per (from, to, kind); the counts add up to the occurrences.
    std::fs::write(&file, export(&c, &["--format", "graphml", "--collapse"])).unwrap();
    let g = python(GRAPHML_SCRIPT, &[&file]);
    assert_eq!(g["nodes"], urls);
    assert_eq!(g["edges"], c.expected.edges.len());
    assert_eq!(g["count_sum"], edges);
    assert_eq!(g["count_types"], serde_json::json!(["int"]));

    // Titles can hold anything, including what XML 1.0 forbids.
    {
        let conn = rusqlite::Connection::open(&c.db).unwrap();
        conn.execute(
            "UPDATE urls SET title = 'a' || char(1) || '<b>&amp;\"q\"''' || char(27) || char(10) || 'z'
             WHERE id = (SELECT min(id) FROM urls)",
            [],
        )
        .unwrap();
    }
    std::fs::write(&file, export(&c, &["--format", "graphml"])).unwrap();
    let g = python(GRAPHML_SCRIPT, &[&file]);
    let titles: Vec<String> = serde_json::from_value(g["titles"].clone()).unwrap();
    assert!(
        titles.contains(&"a\u{fffd}<b>&amp;\"q\"'\u{fffd}\nz".to_owned()),
        "{titles:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dot_renders_with_graphviz() {
    let c = crawl().await;
    let edges = sql_count(&c.db, "SELECT count(*) FROM edges");
    for (args, want_edges) in [
        (vec!["--format", "dot"], edges as usize),
        (
            vec!["--format", "dot", "--collapse"],
            c.expected.edges.len(),
        ),
    ] {
        let text = export(&c, &args);
        assert!(text.starts_with("digraph trawl {"), "{args:?}");
        assert_eq!(text.matches(" -> ").count(), want_edges, "{args:?}");
        let file = c.dir.path().join("g.dot");
        std::fs::write(&file, &text).unwrap();
        // dot's own hierarchical layout takes minutes on a graph this tangled; the
        // force-directed engine reads the same file in well under a second.
        let out = Command::new("dot")
            .args(["-Ksfdp", "-Tsvg"])
            .arg(&file)
            .output()
            .expect("graphviz's dot is needed by this test: run scripts/test, which installs it");
        assert!(
            out.status.success(),
            "dot failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
    }
}

const CSV_SCRIPT: &str = r#"
import csv, json, sys
with open(sys.argv[1], newline="") as f:
    rows = list(csv.reader(f))
print(json.dumps({"header": rows[0], "rows": rows[1:]}))
"#;

/// Export `args` to a file and read it back with Python's csv module.
fn csv_rows(c: &Crawled, args: &[&str]) -> (Vec<String>, Vec<Vec<String>>) {
    let file = c.dir.path().join("x.csv");
    let mut all = args.to_vec();
    all.extend(["--format", "csv", "--out", "x.csv"]);
    assert_eq!(export(c, &all), "");
    let v = python(CSV_SCRIPT, &[&file]);
    (
        serde_json::from_value(v["header"].clone()).unwrap(),
        serde_json::from_value(v["rows"].clone()).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_filters_and_collapse() {
    let c = crawl().await;
    let keys = keys_by_url(&c.db);
    let key = |u: &String| keys[u].clone();
    let total: usize = c.expected.edges.values().sum();

    let (header, rows) = csv_rows(&c, &["--what", "edges"]);
    assert_eq!(header, ["from", "to", "kind", "nofollow", "anchor"]);
    assert_eq!(rows.len(), total);

    // --collapse: one row per (from, to, kind), counts equal to the expected multiset.
    let (header, rows) = csv_rows(&c, &["--what", "edges", "--collapse"]);
    assert_eq!(
        header,
        ["from", "to", "kind", "nofollow", "anchor", "count"]
    );
    let got: BTreeMap<(String, String, String), usize> = rows
        .iter()
        .map(|r| {
            (
                (key(&r[0]), key(&r[1]), r[2].clone()),
                r[5].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(got.len(), rows.len(), "no group twice");
    assert_eq!(got, c.expected.edges);

    // --internal-only: no edge to an out-of-scope URL is left, every other one is.
    let (_, rows) = csv_rows(&c, &["--what", "edges", "--internal-only"]);
    assert!(rows.iter().all(|r| r[1] != "https://external.example/"));
    let internal: usize = c
        .expected
        .edges
        .iter()
        .filter(|((_, to, _), _)| !c.expected.skipped.contains(to))
        .map(|(_, n)| n)
        .sum();
    assert!(internal < total, "the site links outside");
    assert_eq!(rows.len(), internal);
    let (_, pages) = csv_rows(&c, &["--what", "pages", "--internal-only"]);
    let urls = sql_count(&c.db, "SELECT count(*) FROM urls") as usize;
    assert_eq!(pages.len(), urls - c.expected.skipped.len());

    // --status 4xx keeps /missing and /gone, and no edge has both ends there.
    let (header, pages) = csv_rows(&c, &["--what", "pages", "--status", "4xx"]);
    assert_eq!(header[0], "url");
    let got: BTreeSet<String> = pages.iter().map(|r| key(&r[0])).collect();
    let base = c.server.base();
    let want: BTreeSet<String> = [format!("{base}/missing"), format!("{base}/gone")].into();
    assert_eq!(got, want);
    let (_, rows) = csv_rows(&c, &["--what", "edges", "--status", "4xx"]);
    assert!(rows.is_empty());

    // Repeated classes: edges between 2xx and 3xx pages only.
    let (_, rows) = csv_rows(
        &c,
        &["--what", "edges", "--status", "2xx", "--status", "3xx"],
    );
    let ok: BTreeSet<String> = c
        .expected
        .fetched
        .iter()
        .filter(|(_, p)| (200..400).contains(&p.status))
        .map(|(k, _)| k.clone())
        .collect();
    let want: usize = c
        .expected
        .edges
        .iter()
        .filter(|((f, t, _), _)| ok.contains(f) && ok.contains(t))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(rows.len(), want);

    // JSON Lines edges carry the count when collapsed.
    let text = export(&c, &["--format", "jsonl", "--what", "edges", "--collapse"]);
    let sum: u64 = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["count"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(sum as usize, total);
}

const SITEMAP_SCRIPT: &str = r#"
import json, sys
import xml.etree.ElementTree as ET
ns = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
out = []
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    out.append({"root": root.tag.replace(ns, ""), "locs": [e.text for e in root.iter(ns + "loc")]})
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_lists_html_200_pages_and_splits() {
    let c = crawl().await;
    let keys = keys_by_url(&c.db);
    let want: BTreeSet<String> = c
        .expected
        .fetched
        .iter()
        .filter(|(_, p)| p.status == 200 && p.content_type.starts_with("text/html"))
        .map(|(k, _)| k.clone())
        .collect();
    assert!(want.len() > 20);

    // One file on stdout.
    let file = c.dir.path().join("stdout.xml");
    std::fs::write(&file, export(&c, &["--format", "sitemap"])).unwrap();
    let v = python(SITEMAP_SCRIPT, &[&file]);
    assert_eq!(v[0]["root"], "urlset");
    let locs: Vec<String> = serde_json::from_value(v[0]["locs"].clone()).unwrap();
    assert_eq!(locs.len(), want.len(), "no URL twice");
    let got: BTreeSet<String> = locs.iter().map(|u| keys[u].clone()).collect();
    assert_eq!(got, want);

    // Split at 10: parts of at most 10 and an index naming them.
    std::fs::create_dir(c.dir.path().join("sm")).unwrap();
    export(
        &c,
        &[
            "--format",
            "sitemap",
            "--sitemap-max-urls",
            "10",
            "--out",
            "sm/sitemap.xml",
        ],
    );
    let parts = want.len().div_ceil(10);
    let mut paths = vec![c.dir.path().join("sm/sitemap.xml")];
    for k in 1..=parts {
        paths.push(c.dir.path().join(format!("sm/sitemap-{k}.xml")));
    }
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let v = python(SITEMAP_SCRIPT, &refs);
    assert_eq!(v[0]["root"], "sitemapindex");
    let names: Vec<String> = (1..=parts).map(|k| format!("sitemap-{k}.xml")).collect();
    assert_eq!(v[0]["locs"], serde_json::json!(names));
    let mut all = BTreeSet::new();
    for part in v.as_array().unwrap()[1..].iter() {
        assert_eq!(part["root"], "urlset");
        let locs: Vec<String> = serde_json::from_value(part["locs"].clone()).unwrap();
        assert!(!locs.is_empty() && locs.len() <= 10, "{}", locs.len());
        all.extend(locs.iter().map(|u| keys[u].clone()));
    }
    assert_eq!(all, want);
    let entries = std::fs::read_dir(c.dir.path().join("sm")).unwrap().count();
    assert_eq!(entries, parts + 1, "no other file");

    // Too many for one file on stdout: refused with a pointer to --out, nothing written.
    let out = trawl(
        c.dir.path(),
        &[
            "export",
            "--db",
            "site.db",
            "--format",
            "sitemap",
            "--sitemap-max-urls",
            "10",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_combinations_are_refused_and_pipes_close_quietly() {
    let c = crawl().await;
    for args in [
        &["--format", "graphml", "--what", "edges"][..],
        &["--format", "csv", "--what", "graph"],
        &["--format", "sitemap", "--status", "2xx"],
        &["--format", "csv", "--status", "6xx"],
    ] {
        let mut all = vec!["export", "--db", "site.db", "--out", "bad.out"];
        all.extend_from_slice(args);
        let out = trawl(c.dir.path(), &all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!c.dir.path().join("bad.out").exists(), "{args:?}");
    }

    // Larger than a pipe buffer, so the writer is still writing when the reader leaves.
    {
        let conn = rusqlite::Connection::open(&c.db).unwrap();
        for _ in 0..6 {
            conn.execute_batch("INSERT INTO edges SELECT * FROM edges")
                .unwrap();
        }
    }
    for format in ["graphml", "dot"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trawl"))
            .current_dir(c.dir.path())
            .args(["export", "--db", "site.db", "--format", format])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 64];
        use std::io::Read;
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        assert!(out.stderr.is_empty(), "{format}");
    }
}
