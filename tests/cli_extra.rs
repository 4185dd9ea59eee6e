//! The command line beyond crawl/export/report: `trawl config --show`, `trawl status`,
//! completions and man page, `--fail-on-errors`, did-you-mean for config keys, NO_COLOR.
//!
//! Every test runs the real binary in its own temporary directory; sites are served on
//! 127.0.0.1 by the test-support server.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{Site, SiteServer, SiteSpec};
use trawl::CrawlConfig;

fn trawl(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trawl"));
    cmd.current_dir(dir)
        .env_remove("TRAWL_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    trawl(dir).args(args).output().expect("run trawl")
}

/// Run on a blocking thread so the test's server keeps serving.
async fn run_async(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = trawl(dir);
    cmd.args(args);
    tokio::task::spawn_blocking(move || cmd.output().expect("run trawl"))
        .await
        .expect("join")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The file's bytes and which of its -wal / -shm siblings exist.
fn snapshot(path: &Path) -> (Vec<u8>, bool, bool) {
    (
        std::fs::read(path).expect("read db"),
        sibling(path, "-wal").exists(),
        sibling(path, "-shm").exists(),
    )
}

/// The directory's entries, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The TOML part of `trawl config --show` output, checked to have a comment header.
fn shown_config(out: &Output) -> CrawlConfig {
    assert_code(out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("# "), "a comment header: {stdout}");
    CrawlConfig::from_toml(&stdout).expect("the output is a valid configuration")
}

fn json(out: &Output) -> serde_json::Value {
    assert_code(out, 0);
    serde_json::from_slice(&out.stdout).expect("status --format json is JSON")
}

// ---- trawl config --show ---------------------------------------------------------------

#[test]
fn config_show_lays_file_then_flags_over_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["config", "--show"]);
    assert_eq!(shown_config(&out), CrawlConfig::default());
    assert!(text(&out.stdout).contains("# base: the defaults"));

    std::fs::write(
        dir.path().join("f.toml"),
        "per-host = 2\nmax-pages = 40\nscope = \"domain\"\n",
    )
    .unwrap();
    let out = run(
        dir.path(),
        &[
            "config",
            "--show",
            "--config",
            "f.toml",
            "--max-pages",
            "5",
            "--no-sitemaps",
        ],
    );
    let c = shown_config(&out);
    assert_eq!((c.per_host, c.max_pages), (2, 5), "flags win over the file");
    assert_eq!(c.scope, trawl::ScopeMode::Domain);
    assert!(!c.sitemaps);
    assert_eq!(c.concurrency, CrawlConfig::default().concurrency);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("--config f.toml"), "{stdout}");
    assert!(stdout.contains("max-pages"), "{stdout}");
    // `--show` may be left out.
    let again = run(
        dir.path(),
        &[
            "config",
            "--config",
            "f.toml",
            "--max-pages",
            "5",
            "--no-sitemaps",
        ],
    );
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn config_show_refuses_bad_input_and_suggests_keys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.toml"), "concurency = 4\n").unwrap();
    let out = run(dir.path(), &["config", "--show", "--config", "f.toml"]);
    assert_code(&out, 2);
    let err = text(&out.stderr);
    assert!(
        err.contains("f.toml: unknown key `concurency`; did you mean `concurrency`?"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let out = run(dir.path(), &["config", "--show", "--per-host", "0"]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("per-host"));
    // The crawl says the same.
    let out = run(
        dir.path(),
        &[
            "crawl",
            "http://127.0.0.1:9/",
            "--db",
            "x.db",
            "--config",
            "f.toml",
        ],
    );
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("did you mean `concurrency`?"));
    assert_eq!(listing(dir.path()), ["f.toml"], "nothing was created");
}

#[test]
fn config_show_never_creates_the_db() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["config", "--show", "--db", "new.db", "--concurrency", "3"],
    );
    assert_eq!(shown_config(&out).concurrency, 3);
    assert!(text(&out.stdout).contains("new.db holds no crawl yet"));
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_show_starts_from_the_stored_configuration_and_leaves_the_db_alone() {
    let dir = tempfile::tempdir().unwrap();
    let server = SiteServer::start(Site::generate(&SiteSpec {
        extras: false,
        pages: 10,
        ..SiteSpec::small()
    }))
    .await;
    let seed = format!("{}/", server.base());
    let flags = [
        "--concurrency",
        "2",
        "--max-depth",
        "9",
        "--exclude",
        "/nothing/",
    ];
    // What config --show predicts before the crawl ...
    let mut args = vec!["config", "--show", "--db", "site.db"];
    args.extend(flags);
    let predicted = shown_config(&run(dir.path(), &args));
    // ... is what the crawl stores.
    let mut args = vec!["crawl", &seed, "--db", "site.db"];
    args.extend(flags);
    assert_code(&run_async(dir.path(), &args).await, 0);
    let path = dir.path().join("site.db");
    let stored = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT config FROM crawl", [], |r| r.get::<_, String>(0))
        .unwrap();
    assert_eq!(CrawlConfig::from_toml(&stored).unwrap(), predicted);

    let before = snapshot(&path);
    let out = run(dir.path(), &["config", "--show", "--db", "site.db"]);
    assert_eq!(shown_config(&out), predicted);
    assert!(text(&out.stdout).contains("stored in site.db (a finished crawl"));
    // Flags override the stored configuration, as on a resume.
    let out = run(
        dir.path(),
        &["config", "--db", "site.db", "--concurrency", "7"],
    );
    let c = shown_config(&out);
    assert_eq!((c.concurrency, c.max_depth), (7, 9));
    assert_eq!(c.exclude, ["/nothing/"]);
    assert!(snapshot(&path) == before, "config --show changed the db");
}

// ---- completions and man ---------------------------------------------------------------

#[test]
fn completions_and_man_page() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = run(dir.path(), &["completions", shell]);
        assert_code(&out, 0);
        let script = text(&out.stdout);
        // fish spells a long option `-l per-host`.
        let flag = if shell == "fish" {
            "-l per-host"
        } else {
            "--per-host"
        };
        assert!(script.contains(flag), "{shell}: {script}");
        assert!(script.contains("status"), "{shell} completes subcommands");
    }
    let out = run(dir.path(), &["completions", "tcsh"]);
    assert_code(&out, 2);

    let out = run(dir.path(), &["man"]);
    assert_code(&out, 0);
    let page = text(&out.stdout);
    assert!(page.starts_with(".TH trawl 1"), "{page}");
    assert!(page.contains("crawl"));
    let out = run(dir.path(), &["man", "crawl"]);
    assert_code(&out, 0);
    let page = text(&out.stdout);
    assert!(page.starts_with(".TH trawl-crawl 1"), "{page}");
    assert!(page.contains("per\\-host"), "documents the flags");
    assert!(page.contains("fail\\-on\\-errors"));
    let out = run(dir.path(), &["man", "nope"]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("crawl, export"));
}

// ---- trawl status ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_while_running_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let server = SiteServer::start(Site::generate(&SiteSpec {
        latency: Duration::from_millis(100),
        ..SiteSpec::small()
    }))
    .await;
    let seed = format!("{}/", server.base());
    let path = dir.path().join("site.db");
    let mut crawl = trawl(dir.path())
        .args(["crawl", &seed, "--db", "site.db", "--concurrency", "1"])
        .args(["--max-pages", "25"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the crawl");
    let pid = i64::from(crawl.id());

    // Poll until some page is committed.
    let deadline = Instant::now() + Duration::from_secs(15);
    let running = loop {
        if path.exists() {
            let out = run(
                dir.path(),
                &["status", "--db", "site.db", "--format", "json"],
            );
            if out.status.success() {
                let s = json(&out);
                if s["done"].as_u64().unwrap_or(0) > 0 {
                    break s;
                }
            }
        }
        if let Some(status) = crawl.try_wait().unwrap() {
            panic!("the crawl ended before status saw it running: {status}");
        }
        assert!(Instant::now() < deadline, "no page committed in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text_out = run(dir.path(), &["status", "--db", "site.db"]);
    let crawl_status = tokio::task::spawn_blocking(move || crawl.wait().unwrap())
        .await
        .unwrap();
    assert!(crawl_status.success(), "{crawl_status}");

    assert_eq!(running["state"], "running", "{running:#}");
    assert_eq!(running["locked"], true);
    assert_eq!(running["running_pid"], pid);
    assert!(running["known"].as_u64().unwrap() > running["done"].as_u64().unwrap());
    assert!(running["recent_pages"].as_u64().unwrap() > 0);
    assert!(
        running["recent_rate"].as_f64().unwrap() > 0.0,
        "{running:#}"
    );
    assert!(running["finished_at"].is_null());
    assert_code(&text_out, 0);
    let t = text(&text_out.stdout);
    assert!(t.starts_with("site.db: running (pid "), "{t}");
    assert!(t.contains("pages/s over the last minute"), "{t}");

    let before = snapshot(&path);
    let out = run(
        dir.path(),
        &["status", "--db", "site.db", "--format", "json"],
    );
    let after = json(&out);
    assert_eq!(after["state"], "finished", "{after:#}");
    assert_eq!(after["locked"], false);
    assert!(after["running_pid"].is_null());
    assert_eq!(after["queued"], 0);
    assert!(after["finished_at"].as_i64().unwrap() >= after["started_at"].as_i64().unwrap());
    assert!(after["done"].as_u64().unwrap() >= 20, "{after:#}");
    assert!(after["recent_rate"].is_null());
    let known = after["known"].as_u64().unwrap();
    let parts: u64 = ["done", "failed", "queued", "skipped"]
        .iter()
        .map(|k| after[k].as_u64().unwrap())
        .sum();
    assert_eq!(known, parts);
    let out = run(dir.path(), &["status", "--db", "site.db"]);
    assert_code(&out, 0);
    let t = text(&out.stdout);
    assert!(t.starts_with("site.db: finished\n"), "{t}");
    assert!(t.contains("URLs:"), "{t}");
    assert!(snapshot(&path) == before, "status changed the db");
}

#[test]
fn status_of_a_missing_or_foreign_file_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["status", "--db", "missing.db"]);
    assert_code(&out, 2);
    assert!(text(&out.stderr).contains("missing.db"));
    assert!(listing(dir.path()).is_empty());
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let out = run(dir.path(), &["status", "--db", "notes.txt"]);
    assert_code(&out, 2);
    assert_eq!(listing(dir.path()), ["notes.txt"]);
}

// ---- --fail-on-errors ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_errors_exits_1_when_links_are_broken() {
    let dir = tempfile::tempdir().unwrap();
    // The extras include 404s and 500s.
    let broken = SiteServer::start(Site::generate(&SiteSpec::small())).await;
    let seed = format!("{}/", broken.base());
    let out = run_async(
        dir.path(),
        &[
            "crawl",
            &seed,
            "--db",
            "b.db",
            "--fail-on-errors",
            "--max-attempts",
            "1",
        ],
    )
    .await;
    assert_code(&out, 1);
    let err = text(&out.stderr);
    assert!(err.contains("--fail-on-errors"), "{err}");
    assert!(err.contains("trawl report --db b.db broken"), "{err}");
    assert!(text(&out.stdout).starts_with("crawl finished"));
    // The finished crawl still counts; without the flag it is a success.
    let out = run(dir.path(), &["crawl", "--db", "b.db", "--fail-on-errors"]);
    assert_code(&out, 1);
    let out = run(dir.path(), &["crawl", "--db", "b.db"]);
    assert_code(&out, 0);

    let clean = SiteServer::start(Site::generate(&SiteSpec {
        extras: false,
        pages: 10,
        ..SiteSpec::small()
    }))
    .await;
    let seed = format!("{}/", clean.base());
    let out = run_async(
        dir.path(),
        &["crawl", &seed, "--db", "c.db", "--fail-on-errors"],
    )
    .await;
    assert_code(&out, 0);

    let help = text(&run(dir.path(), &["crawl", "--help"]).stdout);
    assert!(help.contains("--fail-on-errors"), "{help}");
    assert!(help.contains("Exit codes"), "{help}");
}

// ---- NO_COLOR ---------------------------------------------------------------------------

/// A colour or style escape (SGR: ESC [ ... m).
fn has_sgr(bytes: &[u8]) -> bool {
    let s = text(bytes);
    s.split('\x1b').skip(1).any(|rest| {
        rest.strip_prefix('[').is_some_and(|r| {
            r.chars()
                .find(|c| !c.is_ascii_digit() && *c != ';')
                .is_some_and(|c| c == 'm')
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_color_means_no_colour_even_on_a_terminal() {
    // `script` gives the crawl a terminal, so the progress line and coloured logs would
    // be drawn; skip where it is missing.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no `script` command: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = SiteServer::start(Site::generate(&SiteSpec {
        latency: Duration::from_millis(20),
        pages: 20,
        ..SiteSpec::small()
    }))
    .await;
    let seed = format!("{}/", server.base());
    let line = format!(
        "{} crawl {seed} --db t.db --concurrency 1 -v; {} crawl --bogus",
        env!("CARGO_BIN_EXE_trawl"),
        env!("CARGO_BIN_EXE_trawl")
    );
    let mut script = Command::new("script");
    script
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("TERM", "xterm-256color")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || script.output().unwrap())
        .await
        .unwrap();
    let all = [&out.stdout[..], &out.stderr[..]].concat();
    assert!(
        text(&all).contains("crawl finished"),
        "the crawl ran: {}",
        text(&all)
    );
    assert!(
        !has_sgr(&all),
        "colour escapes with NO_COLOR: {:?}",
        text(&all)
    );
}
