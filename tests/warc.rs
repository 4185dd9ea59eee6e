//! WARC output read back by a real consumer, Python's warcio (`scripts/test` installs it;
//! when it is missing these tests fail rather than skip): every exchange is a request and
//! a response record, linked, digested, one gzip member each, with the bytes the server
//! sent; redirects hop by hop; truncation marked; resume after kill -9 appends to a sound
//! file; bad paths are refused before anything is written.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use serde_json::Value;
use support::adhoc::Adhoc;
use support::backend::{both_stores, Backend};
use support::run::trawl_output as trawl;
use support::{SiteServer, SiteSpec};

/// Reads a WARC file with warcio (digests checked, a bad one raises) and, separately,
/// member by member with zlib; prints one JSON object.
const READ_WARC: &str = r#"
import io, json, sys, zlib
from warcio.archiveiterator import ArchiveIterator

path = sys.argv[1]
records = []
with open(path, "rb") as f:
    it = ArchiveIterator(f, check_digests="raise")
    for rec in it:
        h = rec.rec_headers
        raw = rec.raw_stream.read()
        r = {
            "type": rec.rec_type,
            "offset": it.get_record_offset(),
            "version": h.protocol,
            "id": h.get_header("WARC-Record-ID"),
            "uri": h.get_header("WARC-Target-URI"),
            "concurrent_to": h.get_header("WARC-Concurrent-To"),
            "warcinfo_id": h.get_header("WARC-Warcinfo-ID"),
            "ip": h.get_header("WARC-IP-Address"),
            "truncated": h.get_header("WARC-Truncated"),
            "payload_digest": h.get_header("WARC-Payload-Digest"),
            "content_type": h.get_header("Content-Type"),
            "payload": raw.hex(),
        }
        if rec.http_headers is not None:
            # warcio splits the first token off: the method, or the response's version.
            r["start"] = rec.http_headers.protocol + " " + rec.http_headers.statusline
            r["http"] = {k.lower(): v for k, v in rec.http_headers.headers}
        records.append(r)

data = open(path, "rb").read()
members = []
pos = 0
while pos < len(data):
    d = zlib.decompressobj(wbits=31)
    text = d.decompress(data[pos:]) + d.flush()
    if not d.eof:
        members.append({"offset": pos, "complete": False, "records": 0})
        break
    used = len(data) - pos - len(d.unused_data)
    alone = sum(1 for _ in ArchiveIterator(io.BytesIO(data[pos:pos + used])))
    members.append({"offset": pos, "complete": True, "records": alone,
                    "starts_warc": text.startswith(b"WARC/1.1\r\n")})
    pos += used
print(json.dumps({"records": records, "members": members}))
"#;

/// One record as warcio read it.
#[derive(Debug, Clone)]
struct Rec {
    kind: String,
    offset: u64,
    id: String,
    uri: String,
    concurrent_to: Option<String>,
    warcinfo_id: Option<String>,
    ip: Option<String>,
    truncated: Option<String>,
    content_type: String,
    start: String,
    http: BTreeMap<String, String>,
    payload: Vec<u8>,
}

impl Rec {
    /// The path and query of the target URI.
    fn path(&self) -> String {
        let u = url::Url::parse(&self.uri).unwrap();
        match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_owned(),
        }
    }

    fn status(&self) -> u16 {
        self.start.split(' ').nth(1).unwrap().parse().unwrap()
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

struct WarcFile {
    records: Vec<Rec>,
}

/// Read `path` with warcio; every gzip member must be complete and hold one record.
#[track_caller]
fn read_warc(path: &Path) -> WarcFile {
    let out = Command::new("python3")
        .arg("-c")
        .arg(READ_WARC)
        .arg(path)
        .output()
        .expect("python3 is needed by these tests: run scripts/test, which installs it");
    assert!(
        out.status.success(),
        "warcio could not read {} (warcio missing? run scripts/test): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    let s = |r: &Value, k: &str| r[k].as_str().map(str::to_owned);
    let records: Vec<Rec> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["version"], "WARC/1.1");
            Rec {
                kind: s(r, "type").unwrap(),
                offset: r["offset"].as_u64().unwrap(),
                id: s(r, "id").unwrap(),
                uri: s(r, "uri").unwrap_or_default(),
                concurrent_to: s(r, "concurrent_to"),
                warcinfo_id: s(r, "warcinfo_id"),
                ip: s(r, "ip"),
                truncated: s(r, "truncated"),
                content_type: s(r, "content_type").unwrap(),
                start: s(r, "start").unwrap_or_default(),
                http: r["http"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                            .collect()
                    })
                    .unwrap_or_default(),
                payload: unhex(&s(r, "payload").unwrap()),
            }
        })
        .collect();
    // Gzip per record: each member decompresses alone, holds exactly one record, and the
    // records start exactly where the members do.
    let members = v["members"].as_array().unwrap();
    for m in members {
        assert_eq!(m["complete"], true, "an incomplete gzip member: {m}");
        assert_eq!(m["records"], 1, "one record per member: {m}");
        assert_eq!(m["starts_warc"], true, "{m}");
    }
    let member_offsets: Vec<u64> = members
        .iter()
        .map(|m| m["offset"].as_u64().unwrap())
        .collect();
    let record_offsets: Vec<u64> = records.iter().map(|r| r.offset).collect();
    assert_eq!(record_offsets, member_offsets);
    WarcFile { records }
}

impl WarcFile {
    fn of_kind(&self, kind: &str) -> impl Iterator<Item = &Rec> {
        let kind = kind.to_owned();
        self.records.iter().filter(move |r| r.kind == kind)
    }

    /// Response records by target URI.
    fn responses(&self) -> BTreeMap<String, Vec<&Rec>> {
        let mut by: BTreeMap<String, Vec<&Rec>> = BTreeMap::new();
        for r in self.of_kind("response") {
            by.entry(r.uri.clone()).or_default().push(r);
        }
        by
    }

    /// Each request names its response, with the same target, and every record names the
    /// warcinfo record it follows.
    #[track_caller]
    fn assert_linked(&self) {
        let by_id: BTreeMap<&str, &Rec> = self.records.iter().map(|r| (r.id.as_str(), r)).collect();
        assert_eq!(by_id.len(), self.records.len(), "record ids are unique");
        let mut answered = BTreeSet::new();
        let mut info = None;
        for r in &self.records {
            match r.kind.as_str() {
                "warcinfo" => {
                    assert_eq!(r.content_type, "application/warc-fields");
                    info = Some(r.id.clone());
                }
                "request" | "response" => {
                    assert_eq!(r.warcinfo_id, info, "{} names the last warcinfo", r.id);
                    assert!(r.id.starts_with("<urn:uuid:") && r.id.ends_with('>'));
                    assert_eq!(
                        r.content_type,
                        format!("application/http;msgtype={}", r.kind)
                    );
                    assert_eq!(r.ip.as_deref(), Some("127.0.0.1"));
                }
                other => panic!("unexpected record type {other}"),
            }
            if r.kind == "request" {
                let to = r.concurrent_to.as_deref().expect("WARC-Concurrent-To");
                let resp = by_id.get(to).expect("the response a request names exists");
                assert_eq!(resp.kind, "response");
                assert_eq!(resp.uri, r.uri);
                assert!(answered.insert(to.to_owned()), "one request per response");
            }
        }
        assert_eq!(
            answered.len(),
            self.of_kind("response").count(),
            "every response has its request"
        );
    }
}

/// Fetched URLs (as fetched) and their state.
fn db_fetched_urls(db: &Path) -> BTreeMap<String, i64> {
    support::db::pairs(
        db,
        "SELECT coalesce(url, key), state FROM urls WHERE state IN (1, 2)",
    )
}

async fn every_exchange_is_a_linked_pair_with_the_bytes_served(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec::small())).await;
    let base = server.base();
    let db = "site";
    let warc = store.dir().join("site.warc.gz");
    store
        .crawl(
            store
                .builder(db)
                .seed(format!("{base}/"))
                .concurrency(4)
                .warc(warc.clone()),
        )
        .await;
    let file = read_warc(&warc);
    file.assert_linked();
    assert_eq!(
        file.records[0].kind, "warcinfo",
        "the file opens with warcinfo"
    );
    assert_eq!(file.of_kind("warcinfo").count(), 1);
    let info = String::from_utf8(file.records[0].payload.clone()).unwrap();
    assert!(info.contains("software: trawl/"), "{info}");
    assert!(info.contains("format: WARC File Format 1.1"), "{info}");

    // One pair per request the server saw, and the response URIs are the crawl's pages
    // plus the host's robots.txt and sitemap probe.
    let hits = server.hit_counts();
    let responses = file.responses();
    let mut pages: BTreeSet<String> = db_fetched_urls(&store.db(db).await).into_keys().collect();
    pages.insert(format!("{base}/robots.txt"));
    pages.insert(format!("{base}/sitemap.xml"));
    assert_eq!(responses.keys().cloned().collect::<BTreeSet<_>>(), pages);
    for (uri, recs) in &responses {
        let path = recs[0].path();
        assert_eq!(
            recs.len(),
            hits[&path],
            "{uri}: one record per request served"
        );
    }
    assert_eq!(
        file.of_kind("request").count(),
        hits.values().sum::<usize>(),
        "every request the server saw is recorded"
    );

    // Payloads are the bytes the server sent; heads say what was served.
    let site = server.site();
    let mut redirects = BTreeMap::new();
    for r in file.of_kind("response") {
        let path = r.path();
        let (status, body, location) = site.served(&path, &base);
        assert_eq!(r.status(), status, "{path}");
        assert!(
            r.start.starts_with(&format!("HTTP/1.1 {status} ")),
            "{}",
            r.start
        );
        assert_eq!(r.http.get("location"), location.as_ref(), "{path}");
        assert!(!r.http.contains_key("transfer-encoding"), "{path}");
        if path == "/robots.txt" || path == "/sitemap.xml" {
            // 404s whose bodies trawl does not read: recorded as such.
            assert_eq!(r.truncated.as_deref(), Some("unspecified"), "{path}");
            assert!(r.payload.is_empty());
            continue;
        }
        assert_eq!(r.truncated, None, "{path}");
        assert_eq!(r.payload, &body[..], "{path}: payload as served");
        assert_eq!(
            r.http.get("content-length"),
            Some(&body.len().to_string()),
            "{path}"
        );
        if location.is_some() {
            redirects.insert(path, status);
        }
    }
    // The redirect chain /r/3 -> /r/2 -> /r/1 -> /p/7, one exchange per hop, and the loop.
    for (path, status) in [
        ("/r/3", 301),
        ("/r/2", 302),
        ("/r/1", 307),
        ("/loop/a", 301),
    ] {
        assert_eq!(redirects.get(path), Some(&status), "{path}: {redirects:?}");
    }

    // Requests: the line and headers trawl sends.
    for r in file.of_kind("request") {
        assert_eq!(r.start, format!("GET {} HTTP/1.1", r.path()));
        assert_eq!(r.http["host"], base.trim_start_matches("http://"));
        assert!(r.http["user-agent"].starts_with("trawl/"), "{:?}", r.http);
        assert!(r.payload.is_empty());
    }
}

/// A body cut at max-body, a gzip-encoded one (stored decoded), a chunked one, a slow one
/// cut by the read timeout.
async fn bodies_are_recorded_decoded_and_truncation_is_marked(store: Backend) {
    let big = "<html><body>".to_owned() + &"x".repeat(5000) + "</body></html>";
    let page =
        "<html><body><a href=/big>b</a><a href=/gz>g</a><a href=/chunked>c</a></body></html>";
    let gz_html = "<html><body>compressed page</body></html>";
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(gz_html.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let app = Router::new()
        .route("/", get(move || async move { axum::response::Html(page) }))
        .route(
            "/big",
            get({
                let big = big.clone();
                move || async move { axum::response::Html(big) }
            }),
        )
        .route(
            "/gz",
            get(move || {
                let gz = gz.clone();
                async move {
                    (
                        [
                            (header::CONTENT_TYPE, "text/html"),
                            (header::CONTENT_ENCODING, "gzip"),
                        ],
                        gz,
                    )
                        .into_response()
                }
            }),
        )
        .route(
            "/chunked",
            get(|| async {
                let parts = ["<html><body>", "in ", "three parts", "</body></html>"]
                    .map(|p| Ok::<_, std::io::Error>(bytes::Bytes::from(p)));
                (
                    [(header::CONTENT_TYPE, "text/html")],
                    axum::body::Body::from_stream(futures_util::stream::iter(parts)),
                )
                    .into_response()
            }),
        );
    let site = Adhoc::start(app).await;
    let warc = store.dir().join("w.warc.gz");
    store
        .crawl(
            store
                .builder("w")
                .seed(format!("{}/", site.base))
                .max_body(2048)
                .sitemaps(false)
                .warc(warc.clone()),
        )
        .await;
    let file = read_warc(&warc);
    file.assert_linked();
    let responses = file.responses();
    let get = |path: &str| responses[&format!("{}{path}", site.base)][0];

    let r = get("/big");
    assert_eq!(r.truncated.as_deref(), Some("length"));
    assert_eq!(
        r.payload,
        &big.as_bytes()[..2048],
        "the bytes read, up to max-body"
    );
    assert_eq!(
        r.http["content-length"], "2048",
        "the head matches the record"
    );

    let r = get("/gz");
    assert_eq!(r.truncated, None);
    assert_eq!(r.payload, gz_html.as_bytes(), "stored decoded");
    assert!(!r.http.contains_key("content-encoding"), "{:?}", r.http);
    assert_eq!(r.http["content-length"], gz_html.len().to_string());

    let r = get("/chunked");
    assert_eq!(r.truncated, None);
    assert_eq!(r.payload, b"<html><body>in three parts</body></html>");
    assert!(!r.http.contains_key("transfer-encoding"), "{:?}", r.http);
    assert_eq!(r.http["content-length"], "40");
}

#[test]
fn unusable_paths_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "keep me").unwrap();
    let cases = [
        ("out", "is a directory"),
        ("no/such/dir/a.warc.gz", "does not exist"),
        ("notes.txt", "not a gzip-per-record WARC file"),
        ("site.db", "is the crawl's database"),
    ];
    for (path, says) in cases {
        let out = trawl(
            dir.path(),
            &[
                "crawl",
                "http://127.0.0.1:9/",
                "--db",
                "site.db",
                "--warc",
                path,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert!(stderr.contains(says), "{path}: {stderr}");
        assert!(stderr.contains("--warc"), "says which option: {stderr}");
        assert!(
            !dir.path().join("site.db").exists(),
            "{path}: no database made"
        );
    }
    assert_eq!(
        std::fs::read(dir.path().join("notes.txt")).unwrap(),
        b"keep me"
    );
}

/// kill -9 mid-crawl, then a torn record at the end (as a kill during a write leaves),
/// then resume with the same --warc: the file is cut back to its last complete record and
/// appended to; every page the database holds as fetched has its records, and no
/// exchange is recorded that the server did not serve.
async fn resume_appends_to_the_same_file_and_loses_no_committed_page(store: Backend) {
    let server = SiteServer::start(support::Site::generate(&SiteSpec {
        seed: 3,
        pages: 200,
        links_per_page: 6,
        latency: Duration::from_millis(10),
        extras: true,
    }))
    .await;
    let base = server.base();
    let db = "site";
    let host = base.trim_start_matches("http://").to_owned();
    let warc = store.dir().join("site.warc.gz");
    // A short lease: a killed process's URLs go back to a Redis crawl at once.
    let child = |db: &str| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_trawl"))
            .args(["crawl", &format!("{base}/")])
            .args(store.args(db))
            .arg("--warc")
            .arg(&warc)
            .args(["--concurrency", "4", "--lease", "1s", "--no-progress", "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting trawl")
    };
    let mut first = child(db);
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.stored(db, &host) < 60 {
        assert!(Instant::now() < deadline, "no progress");
        assert!(first.try_wait().unwrap().is_none(), "trawl exited early");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    first.kill().await.unwrap();
    // Whatever the kill left, add half a record: the torn write of a killed process.
    let torn = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b"WARC/1.1\r\nWARC-Type: response\r\n").unwrap();
        let member = e.finish().unwrap();
        member[..member.len() / 2].to_vec()
    };
    std::fs::OpenOptions::new()
        .append(true)
        .open(&warc)
        .unwrap()
        .write_all(&torn)
        .unwrap();
    let committed_before: BTreeSet<String> =
        db_fetched_urls(&store.db(db).await).into_keys().collect();

    let out = tokio::time::timeout(Duration::from_secs(120), child(db).wait_with_output())
        .await
        .expect("the resumed crawl ends")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let file = read_warc(&warc);
    file.assert_linked();
    assert_eq!(file.of_kind("warcinfo").count(), 2, "one warcinfo per run");
    let responses = file.responses();
    let pages = db_fetched_urls(&store.db(db).await);
    assert_eq!(pages.len(), server.expected().fetched.len());
    for uri in pages.keys() {
        assert!(responses.contains_key(uri), "{uri} has no response record");
    }
    for uri in &committed_before {
        // Committed before the kill: recorded then, and not fetched again.
        assert_eq!(responses[uri].len(), 1, "{uri}");
    }
    // Each record is an exchange the server served: none is recorded twice. (Exchanges
    // under way at the kill, and records not yet written of pages not yet committed, are
    // lost with the process; those pages are fetched and recorded again.)
    let hits = server.hit_counts();
    for (uri, recs) in &responses {
        let served = hits[&recs[0].path()];
        assert!(
            recs.len() <= served,
            "{uri}: {} records, {served} served",
            recs.len()
        );
    }
}

both_stores!(
    every_exchange_is_a_linked_pair_with_the_bytes_served,
    bodies_are_recorded_decoded_and_truncation_is_marked,
    resume_appends_to_the_same_file_and_loses_no_committed_page
);
