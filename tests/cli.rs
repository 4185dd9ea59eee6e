//! The `trawl` binary end to end: bad input is refused with one line, exit code 2 and no
//! file written or changed; a crawl and its export work from the command line.
//!
//! Every test runs the real binary in its own temporary directory. Tests that need a site
//! serve it on 127.0.0.1 from a tokio runtime and run the binary on a blocking thread so
//! the server keeps answering.

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{db, Site, SiteServer, SiteSpec};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trawl")
}

/// `trawl ARGS` in `dir`, with logging left at its defaults.
fn trawl(dir: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir)
        .env_remove("TRAWL_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    trawl(dir).args(args).output().expect("run trawl")
}

/// Run a command on a blocking thread so the test's server keeps serving.
async fn run_async(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run trawl"))
        .await
        .expect("join")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit code 2, one line on stderr starting "trawl: " that contains each of `words`
/// (case-insensitive). Returns the line.
#[track_caller]
fn assert_bad_input(out: &Output, words: &[&str]) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit code; stderr:\n{stderr}\nstdout:\n{}",
        text(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr must be one line, got:\n{stderr}");
    let line = lines[0];
    assert!(line.starts_with("trawl: "), "{line}");
    let lower = line.to_lowercase();
    for w in words {
        assert!(
            lower.contains(&w.to_lowercase()),
            "message lacks {w:?}: {line}"
        );
    }
    line.to_string()
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The file's bytes and whether its -wal / -shm siblings exist.
fn snapshot(path: &Path) -> (Vec<u8>, bool, bool) {
    (
        std::fs::read(path).expect("read db"),
        sibling(path, "-wal").exists(),
        sibling(path, "-shm").exists(),
    )
}

#[track_caller]
fn assert_untouched(path: &Path, before: &(Vec<u8>, bool, bool)) {
    let after = snapshot(path);
    assert!(after.0 == before.0, "{} was modified", path.display());
    assert_eq!(
        (after.1, after.2),
        (before.1, before.2),
        "-wal/-shm of {} appeared or vanished",
        path.display()
    );
}

/// Nothing named `name` or `name-*` exists in `dir`.
#[track_caller]
fn assert_no_db(dir: &Path, name: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let f = entry.unwrap().file_name();
        let f = f.to_string_lossy();
        assert!(
            f != name && !f.starts_with(&format!("{name}-")),
            "{f} was created in {}",
            dir.display()
        );
    }
}

/// A seed that is never contacted (bad-input tests fail before fetching anything).
const UNUSED_SEED: &str = "http://127.0.0.1:9/";

/// Start a server for `spec` and crawl it to the end into `dir/name`.
async fn crawl_site(dir: &Path, name: &str, spec: &SiteSpec) -> (SiteServer, PathBuf, Output) {
    let server = SiteServer::start(Site::generate(spec)).await;
    let db = dir.join(name);
    let mut cmd = trawl(dir);
    cmd.args(["crawl", &format!("{}/", server.base()), "--db"])
        .arg(&db)
        .args(["--concurrency", "4"]);
    let out = run_async(cmd).await;
    (server, db, out)
}

#[track_caller]
fn assert_finished(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "crawl failed; stderr:\n{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap_or("")
            .starts_with("crawl finished"),
        "no summary line: {stdout}"
    );
}

// ---- bad input -------------------------------------------------------------------------

#[test]
fn unparsable_seeds_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, words) in [
        (
            "ht!tp://x",
            &["not a valid url", "give an absolute http"][..],
        ),
        ("http://", &["not a valid url", "give an absolute http"]),
        ("ftp://example.org/", &["scheme", "http and https only"]),
    ] {
        let out = run(dir.path(), &["crawl", seed, "--db", "new.db"]);
        let line = assert_bad_input(&out, words);
        assert!(line.contains(seed), "names the seed: {line}");
        assert_no_db(dir.path(), "new.db");
    }
}

#[test]
fn unknown_config_key_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.toml"), "concurency = 4\n").unwrap();
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "new.db", "--config", "f.toml"],
    );
    // Names the key and the file, and points at the list of keys.
    assert_bad_input(&out, &["concurency", "f.toml", "concurrency"]);
    assert_no_db(dir.path(), "new.db");
}

#[test]
fn out_of_range_values_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "new.db", "--concurrency", "0"],
    );
    assert_bad_input(&out, &["concurrency", "out of range", "1"]);
    assert_no_db(dir.path(), "new.db");

    std::fs::write(dir.path().join("f.toml"), "max-body = \"5 parsecs\"\n").unwrap();
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "new.db", "--config", "f.toml"],
    );
    assert_bad_input(&out, &["parsecs", "MiB"]);
    assert_no_db(dir.path(), "new.db");

    // A value the type accepts but the range does not, from a file.
    std::fs::write(dir.path().join("g.toml"), "max-body = 10\n").unwrap();
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "new.db", "--config", "g.toml"],
    );
    assert_bad_input(&out, &["max-body", "1KiB"]);
    assert_no_db(dir.path(), "new.db");

    // A pattern that does not compile: its message spans lines; the CLI prints one.
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "new.db", "--include", "("],
    );
    assert_bad_input(&out, &["--include", "("]);
    assert_no_db(dir.path(), "new.db");
}

#[test]
fn unreadable_config_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "crawl",
            UNUSED_SEED,
            "--db",
            "new.db",
            "--config",
            "missing.toml",
        ],
    );
    assert_bad_input(&out, &["missing.toml", "--config"]);
    assert_no_db(dir.path(), "new.db");

    // A directory is not a readable file either.
    std::fs::create_dir(dir.path().join("conf.d")).unwrap();
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "new.db", "--config", "conf.d"],
    );
    assert_bad_input(&out, &["conf.d", "--config"]);
    assert_no_db(dir.path(), "new.db");
}

#[test]
fn foreign_sqlite_db_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x');")
            .unwrap();
    }
    let before = snapshot(&path);
    for args in [
        &["crawl", UNUSED_SEED, "--db", "other.db"][..],
        &["crawl", "--db", "other.db"],
        &["crawl", UNUSED_SEED, "--db", "other.db", "--recrawl"],
        &["export", "--db", "other.db"],
    ] {
        let out = run(dir.path(), args);
        assert_bad_input(&out, &["not a trawl crawl", "other.db", "--db"]);
        assert_untouched(&path, &before);
    }
}

#[test]
fn a_db_in_a_missing_folder_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["crawl", UNUSED_SEED, "--db", "no-such-folder/c.db"],
    );
    assert_bad_input(
        &out,
        &["no-such-folder", "does not exist", "create the folder"],
    );
    assert!(!dir.path().join("no-such-folder").exists());
}

#[test]
fn garbage_db_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    // Deterministic "random" bytes.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let bytes: Vec<u8> = (0..10 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    let before = snapshot(&path);
    for args in [
        &["crawl", UNUSED_SEED, "--db", "garbage.db"][..],
        &["crawl", "--db", "garbage.db"],
        &["export", "--db", "garbage.db"],
    ] {
        let out = run(dir.path(), args);
        assert_bad_input(&out, &["not a usable trawl database", "untouched", "--db"]);
        assert_untouched(&path, &before);
    }

    // Garbage that starts with the SQLite header gets past the first check.
    let mut fake = b"SQLite format 3\0".to_vec();
    fake.extend_from_slice(&bytes[16..]);
    std::fs::write(&path, &fake).unwrap();
    let before = snapshot(&path);
    for args in [
        &["crawl", UNUSED_SEED, "--db", "garbage.db"][..],
        &["export", "--db", "garbage.db"],
    ] {
        let out = run(dir.path(), args);
        assert_bad_input(&out, &["garbage.db"]);
        assert_untouched(&path, &before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_trawl_db_is_not_made_worse() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, path, out) = crawl_site(dir.path(), "site.db", &SiteSpec::small()).await;
    assert_finished(&out);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    let before = snapshot(&path);
    assert!(
        !before.1 && !before.2,
        "a finished crawl leaves no -wal/-shm"
    );
    for args in [
        &["crawl", "--db", "site.db"][..],
        &["crawl", "--db", "site.db", "--recrawl"],
        &["export", "--db", "site.db"],
        &[
            "export", "--db", "site.db", "--format", "jsonl", "--what", "pages",
        ],
    ] {
        let mut cmd = trawl(dir.path());
        cmd.args(args);
        let out = run_async(cmd).await;
        let stderr = text(&out.stderr);
        eprintln!(
            "truncated db, trawl {}: exit {:?}, stderr: {stderr}",
            args.join(" "),
            out.status.code()
        );
        assert_ne!(
            out.status.code(),
            Some(0),
            "{args:?} accepted a truncated db"
        );
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line: {stderr}");
        assert!(lines[0].starts_with("trawl: "), "{stderr}");
        assert_untouched(&path, &before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_db_is_refused_with_a_permissions_hint() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;

    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("ro");
    std::fs::create_dir(&sub).unwrap();
    let (_server, path, out) = crawl_site(&sub, "site.db", &SiteSpec::small()).await;
    assert_finished(&out);
    let before = snapshot(&path);
    assert!(
        !before.1 && !before.2,
        "a finished crawl leaves no -wal/-shm"
    );

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut cmd = trawl(&sub);
    cmd.args(["crawl", "--db", "site.db", "--recrawl"]);
    // Root writes through any mode bits: run the binary as `nobody` instead, for whom the
    // root-owned file and directory are read-only.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        cmd.uid(65534).gid(65534);
    }
    let out = run_async(cmd).await;
    // Restore so the temporary directory can be removed.
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();

    assert_bad_input(&out, &["site.db", "cannot be written", "permissions"]);
    assert_untouched(&path, &before);
    let got = db::read(&path);
    assert!(got.finished, "the crawl is still finished");
    assert_eq!(got.integrity, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_in_use_by_another_crawl_is_refused_with_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SiteSpec {
        latency: Duration::from_millis(200),
        ..SiteSpec::small()
    };
    let server = SiteServer::start(Site::generate(&spec)).await;
    let path = dir.path().join("site.db");
    let seed = format!("{}/", server.base());
    let mut first = trawl(dir.path())
        .args(["crawl", &seed, "--db", "site.db", "--concurrency", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the first crawl");
    let pid = first.id();

    // Wait until the first crawl has recorded itself as running.
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let running = path.exists()
            && rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .and_then(|c| {
                c.query_row("SELECT running_pid FROM crawl WHERE id = 1", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })
            })
            .ok()
            .flatten()
                == Some(i64::from(pid));
        if running {
            break;
        }
        if let Some(status) = first.try_wait().unwrap() {
            panic!("the first crawl ended early: {status}");
        }
        assert!(Instant::now() < deadline, "the first crawl never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut second = trawl(dir.path());
    second.args(["crawl", &seed, "--db", "site.db"]);
    let out = run_async(second).await;
    let mut second_resume = trawl(dir.path());
    second_resume.args(["crawl", "--db", "site.db", "--recrawl"]);
    let out2 = run_async(second_resume).await;

    // Stop the first crawl before asserting, so a failure does not leave it running.
    // SAFETY: plain kill(2) on the pid of a child we spawned and have not reaped.
    let rc = unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0, "kill");
    let status = tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();

    for out in [&out, &out2] {
        assert_bad_input(out, &["in use", &format!("pid {pid}"), "site.db"]);
    }
    assert_eq!(status.code(), Some(130), "the first crawl is interrupted");
    // The file is intact and resumable.
    let got = db::read(&path);
    assert_eq!(got.integrity, "ok");
    assert!(!got.finished);
}

#[test]
fn new_db_without_seeds_asks_for_one_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["crawl", "--db", "new.db"]);
    assert_bad_input(&out, &["new.db", "seed url"]);
    assert_no_db(dir.path(), "new.db");
}

// ---- export ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_then_export_edges_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (server, path, out) = crawl_site(dir.path(), "site.db", &SiteSpec::small()).await;
    assert_finished(&out);
    let expected = server.expected();
    let got = db::read(&path);
    assert_eq!(
        got.edges, expected.edges,
        "the crawl stored the expected graph"
    );

    // Edges as CSV.
    let out = run(
        dir.path(),
        &[
            "export", "--db", "site.db", "--format", "csv", "--what", "edges",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(header, ["from", "to", "kind", "nofollow", "anchor"]);
    let mut rows = 0;
    for rec in reader.records() {
        let rec = rec.expect("valid CSV record");
        assert_eq!(rec.len(), 5);
        assert!(
            ["true", "false"].contains(&&rec[3]),
            "nofollow {:?}",
            &rec[3]
        );
        rows += 1;
    }
    let want: usize = expected.edges.values().sum();
    assert_eq!(rows, want, "one CSV row per edge");

    // Pages as JSON Lines, in id order, each with its outlinks.
    let args = [
        "export", "--db", "site.db", "--format", "jsonl", "--what", "pages",
    ];
    let out = run(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let keys: Vec<String> = {
        let conn = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut st = conn.prepare("SELECT key FROM urls ORDER BY id").unwrap();
        let keys = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        keys
    };
    let mut out_degree: BTreeMap<&str, usize> = BTreeMap::new();
    for ((from, _, _), n) in &expected.edges {
        *out_degree.entry(from.as_str()).or_default() += n;
    }
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), got.fetched.len() + got.skipped.len());
    assert_eq!(lines.len(), keys.len());
    let mut outlinks_total = 0;
    for (line, key) in lines.iter().zip(&keys) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON object per line");
        let obj = v.as_object().expect("an object");
        assert!(obj["url"].is_string() && obj["state"].is_string(), "{line}");
        let n = obj["outlinks"].as_array().expect("outlinks").len();
        assert_eq!(
            n,
            out_degree.get(key.as_str()).copied().unwrap_or(0),
            "outlinks of {key}"
        );
        outlinks_total += n;
    }
    assert_eq!(outlinks_total, want);

    // --out writes what stdout gets.
    for (format, what) in [("jsonl", "pages"), ("csv", "edges"), ("csv", "pages")] {
        let base = [
            "export", "--db", "site.db", "--format", format, "--what", what,
        ];
        let to_stdout = run(dir.path(), &base);
        assert_eq!(to_stdout.status.code(), Some(0));
        let mut with_out = base.to_vec();
        with_out.extend(["--out", "x.out"]);
        let to_file = run(dir.path(), &with_out);
        assert_eq!(to_file.status.code(), Some(0), "{}", text(&to_file.stderr));
        assert!(to_file.stdout.is_empty(), "nothing on stdout with --out");
        let written = std::fs::read(dir.path().join("x.out")).unwrap();
        assert!(
            written == to_stdout.stdout,
            "--out differs from stdout for {format} {what}"
        );
    }

    // Export never writes the crawl's file.
    let before = snapshot(&path);
    let out = run(
        dir.path(),
        &["export", "--db", "site.db", "--what", "pages"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_untouched(&path, &before);
}

/// `trawl crawl --db F --recheck failed` on a finished crawl asks again what failed or
/// answered 4xx/5xx, and nothing that answered well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recheck_failed_asks_only_the_failures_again() {
    let dir = tempfile::tempdir().unwrap();
    let (server, path, out) = crawl_site(dir.path(), "site.db", &SiteSpec::small()).await;
    assert_finished(&out);
    let failed: std::collections::BTreeSet<String> = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut st = conn
            .prepare("SELECT key FROM urls WHERE state = 2 OR status >= 400")
            .unwrap();
        let keys = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        let base = server.base();
        keys.map(|k| k.unwrap().strip_prefix(&base).unwrap().to_owned())
            .collect()
    };
    assert!(
        failed.len() >= 2,
        "the site has errors to recheck: {failed:?}"
    );
    server.clear_log();
    let out = run(
        dir.path(),
        &["crawl", "--db", "site.db", "--recheck", "failed"],
    );
    assert_finished(&out);
    let asked: std::collections::BTreeSet<String> = server
        .hits()
        .into_iter()
        // A new run prepares the host again (robots.txt and its sitemaps may have changed).
        .filter(|h| h != "/robots.txt" && h != "/sitemap.xml")
        .collect();
    assert_eq!(asked, failed, "only the failures, each again");
    // It is a resume of that crawl, not a new one: --recrawl and --recheck exclude each other.
    let out = run(
        dir.path(),
        &[
            "crawl",
            "--db",
            "site.db",
            "--recheck",
            "failed",
            "--recrawl",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(text(&out.stderr).contains("cannot be used with '--recrawl'"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, path, out) = crawl_site(dir.path(), "site.db", &SiteSpec::small()).await;
    assert_finished(&out);
    // Make the export far larger than a pipe buffer, so the writer is still writing when
    // the reader goes away.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for _ in 0..6 {
            conn.execute_batch("INSERT INTO edges SELECT * FROM edges")
                .unwrap();
        }
    }
    for (format, what) in [("csv", "edges"), ("jsonl", "pages"), ("jsonl", "edges")] {
        let mut child = trawl(dir.path())
            .args([
                "export", "--db", "site.db", "--format", format, "--what", what,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        assert!(!first.is_empty());
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format} {what}: {}",
            text(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{format} {what}: stderr {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn export_of_a_missing_db_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["export", "--db", "missing.db"]);
    let line = assert_bad_input(&out, &["missing.db", "--db"]);
    // The reason is given once.
    assert_eq!(line.matches("no such file").count(), 1, "{line}");
    assert_no_db(dir.path(), "missing.db");

    // --out is not created when the db cannot be read.
    let out = run(
        dir.path(),
        &["export", "--db", "missing.db", "--out", "x.csv"],
    );
    assert_bad_input(&out, &["missing.db"]);
    assert!(!dir.path().join("x.csv").exists());
}

// ---- help and usage --------------------------------------------------------------------

#[test]
fn help_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["crawl", "--help"],
        &["export", "--help"],
        &["--version"],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty(), "{args:?} prints to stdout");
    }
    let out = run(dir.path(), &["crawl", "--help"]);
    let help = text(&out.stdout);
    assert!(help.contains("Exit codes"));
    // The crawl writes its --db and --store: not the reading commands' words for them.
    assert!(
        !help.contains("read only") && !help.contains("temporary SQLite copy"),
        "{help}"
    );
    assert!(help.contains("created with the crawl"), "{help}");
    let export = text(&run(dir.path(), &["export", "--help"]).stdout);
    assert!(export.contains("read only"), "{export}");

    for args in [
        &["crawl", "--bogus"][..],
        &["crawl", UNUSED_SEED],
        &[],
        &["export", "--db", "x.db", "--format", "xml"],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_no_db(dir.path(), "x.db");
}
