//! Distributed crawls: real trawl processes sharing one crawl through a real redis-server
//! (and a real three-master cluster) on loopback ports. Every crawl is copied back into
//! SQLite with `trawl export --to` and compared with what the site generator knows and
//! with the server's access log.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::check::{assert_fetched_once, assert_matches};
use support::redis::{RedisCluster, RedisServer};
use support::{db, Expected, Site, SiteServer, SiteSpec};
use tokio::process::{Child, Command};

fn trawl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trawl"))
}

/// Where the crawls of this test binary collect their results: one file per store and
/// crawl id, shared by every process of the crawl (one collects, the others stand by).
fn results(store: &str, id: &str) -> std::path::PathBuf {
    static DIR: std::sync::LazyLock<tempfile::TempDir> =
        std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());
    let name: String = store
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    DIR.path().join(format!("{name}-{id}.db"))
}

/// `trawl crawl [SEED] --store STORE --crawl-id ID --db RESULTS ARGS...` as a child
/// process.
fn crawler(seeds: &[String], store: &str, id: &str, args: &[&str]) -> Child {
    let db = results(store, id);
    let mut with_db = vec!["--db", db.to_str().unwrap()];
    with_db.extend(args);
    crawler_only(seeds, store, id, &with_db)
}

/// The same without `--db`: a process that crawls and never collects.
fn crawler_only(seeds: &[String], store: &str, id: &str, args: &[&str]) -> Child {
    trawl()
        .arg("crawl")
        .args(seeds)
        .args(["--store", store, "--crawl-id", id, "--no-progress"])
        .args(args)
        .env("TRAWL_LOG", "trawl=warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting trawl")
}

/// Wait for a crawler to exit 0; returns the pages it fetched (from its summary line).
async fn finish(child: Child) -> u64 {
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the crawler ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "crawler failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("crawl finished:"))
        .unwrap_or_else(|| panic!("no summary in {stdout}"));
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// `trawl export --store STORE --crawl-id ID --to FILE`, then read the file back.
async fn copy_back(store: &str, id: &str, dir: &Path) -> db::Crawled {
    let path = dir.join(format!("{id}.db"));
    let out = trawl()
        .args(["export", "--store", store, "--crawl-id", id, "--to"])
        .arg(&path)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "export --to failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    db::read(&path)
}

/// Pages stored so far in the crawl `id` on one host (through the real key layout).
fn stored_pages(server: &RedisServer, id: &str, host: &str) -> u64 {
    support::redis::stored(|args| server.cli(args), id, host)
}

/// Wait until the crawl `id` has stored `at` pages of `host`.
async fn wait_stored(redis: &RedisServer, id: &str, host: &str, at: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while stored_pages(redis, id, host) < at {
        assert!(Instant::now() < deadline, "no progress to {at} pages");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The site's host key (`127.0.0.1:PORT`) and start URL.
fn host_and_seed(server: &SiteServer) -> (String, String) {
    (
        server.base().trim_start_matches("http://").to_owned(),
        format!("{}/", server.base()),
    )
}

/// Check a finished crawl copied back from Redis.
async fn assert_copied(store: &str, id: &str, expected: &Expected) {
    let dir = tempfile::tempdir().unwrap();
    let got = copy_back(store, id, dir.path()).await;
    assert_matches(expected, &got, false);
    assert!(got.finished, "{id}: marked finished");
}

fn site(seed: u64, pages: usize, latency_ms: u64) -> Site {
    Site::generate(&SiteSpec {
        seed,
        pages,
        links_per_page: 5,
        latency: Duration::from_millis(latency_ms),
        extras: true,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_two_and_four_processes_store_what_a_sqlite_crawl_stores() {
    let redis = RedisServer::start();
    let server = SiteServer::start(site(7, 80, 15)).await;
    let expected = server.expected();
    let dir = tempfile::tempdir().unwrap();
    let seed = format!("{}/", server.base());

    // The same site crawled locally: the reference.
    let local = dir.path().join("local.db");
    support::run::crawl(
        trawl::Crawler::builder()
            .db(&local)
            .seed(&seed)
            .concurrency(4),
    )
    .await;
    let local = db::read(&local);
    assert_matches(&expected, &local, false);

    for n in [1usize, 2, 4] {
        server.clear_log();
        let id = format!("procs{n}");
        let children: Vec<Child> = (0..n)
            .map(|_| {
                crawler(
                    std::slice::from_ref(&seed),
                    &redis.url(),
                    &id,
                    &["--concurrency", "2"],
                )
            })
            .collect();
        let mut per_process = Vec::new();
        for c in children {
            per_process.push(finish(c).await);
        }
        let got = copy_back(&redis.url(), &id, dir.path()).await;
        assert_matches(&expected, &got, false);
        assert!(got.finished, "{n} processes: the crawl is marked finished");
        // The same pages and edges as the local crawl, and every page fetched once
        // across the processes.
        let pages = |c: &db::Crawled| -> BTreeMap<String, Option<u16>> {
            c.fetched.iter().map(|(k, v)| (k.clone(), v.0)).collect()
        };
        assert_eq!(pages(&got), pages(&local), "{n} processes: pages");
        assert_eq!(got.edges, local.edges, "{n} processes: edges");
        assert_fetched_once(&server, &expected);
        assert_eq!(
            per_process.iter().sum::<u64>() as usize,
            expected.fetched.len(),
            "{n} processes: fetches {per_process:?}"
        );
        if n > 1 {
            let working = per_process.iter().filter(|&&p| p > 0).count();
            assert!(
                working >= 2,
                "{n} processes shared the work: {per_process:?}"
            );
        }
    }

    // `trawl status` reads a Redis crawl from anywhere.
    let out = trawl()
        .args([
            "status",
            "--store",
            &redis.url(),
            "--crawl-id",
            "procs4",
            "--format",
            "json",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["state"], "finished");
    assert_eq!(
        status["counts"]["stored"].as_u64().unwrap() as usize,
        expected.fetched.len()
    );
    assert_eq!(status["counts"]["queued"], 0);
    assert_eq!(status["counts"]["leased"], 0);

    // And a report, through the temporary copy.
    let out = trawl()
        .args([
            "report",
            "--store",
            &redis.url(),
            "--crawl-id",
            "procs2",
            "summary",
            "--format",
            "json",
        ])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_host_limit_holds_across_four_processes() {
    let redis = RedisServer::start();
    let server = SiteServer::start(site(11, 60, 40)).await;
    let expected = server.expected();
    let seed = format!("{}/", server.base());
    let children: Vec<Child> = (0..4)
        .map(|_| {
            crawler(
                std::slice::from_ref(&seed),
                &redis.url(),
                "polite",
                &["--concurrency", "4", "--per-host", "2"],
            )
        })
        .collect();
    for c in children {
        finish(c).await;
    }
    assert_eq!(
        server.max_concurrent(),
        2,
        "never more than --per-host requests at once, from all processes together"
    );
    assert_copied(&redis.url(), "polite", &expected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_processes_lose_nothing_and_store_nothing_twice() {
    let redis = RedisServer::start();
    let server = SiteServer::start(site(23, 400, 8)).await;
    let expected = server.expected();
    let total = expected.fetched.len() as u64;
    let (host, seed) = host_and_seed(&server);
    let args = ["--concurrency", "3", "--lease", "1s"];
    let mut running: Vec<Child> = (0..3)
        .map(|_| crawler(std::slice::from_ref(&seed), &redis.url(), "kills", &args))
        .collect();
    // Kill one process at spread-out moments, starting a fresh one each time.
    let mut state = 99u64;
    let mut kills = 0;
    for step in 1..=5u64 {
        wait_stored(&redis, "kills", &host, total * step / 7).await;
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
        let victim = (state >> 33) as usize % running.len();
        let mut child = running.swap_remove(victim);
        child.start_kill().unwrap(); // SIGKILL: no goodbye, its leases stay behind
        child.wait().await.unwrap();
        kills += 1;
        running.push(crawler(&[], &redis.url(), "kills", &args));
    }
    for c in running {
        finish(c).await;
    }
    assert_copied(&redis.url(), "kills", &expected).await;
    // Pages fetched again because their process died: at most what the dead held.
    let counts = server.hit_counts();
    let repeated: usize = expected
        .fetched
        .keys()
        .map(|k| {
            counts
                .get(k.strip_prefix(&server.base()).unwrap())
                .copied()
                .unwrap_or(0)
        })
        .map(|n| n.saturating_sub(1))
        .sum();
    assert!(
        repeated <= kills * 3,
        "{repeated} repeated fetches after {kills} kills"
    );
}

/// The process collecting into `file` now, as the file records it.
fn collector_pid(file: &Path) -> Option<u32> {
    let conn =
        rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    conn.query_row("SELECT running_pid FROM crawl", [], |r| {
        r.get::<_, Option<u32>>(0)
    })
    .ok()
    .flatten()
}

/// Wait until a process other than `not` collects into `file`; its pid.
async fn new_collector(file: &Path, not: Option<u32>) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = collector_pid(file).filter(|p| Some(*p) != not) {
            return pid;
        }
        assert!(Instant::now() < deadline, "no process took over collecting");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGKILL the child whose pid is `pid`, removing it from `running`.
async fn kill_pid(running: &mut Vec<Child>, pid: u32) {
    let i = running
        .iter()
        .position(|c| c.id() == Some(pid))
        .expect("the collector is one of the test's processes");
    let mut child = running.swap_remove(i);
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_collectors_are_taken_over_and_every_result_arrives_once() {
    let redis = RedisServer::start();
    let server = SiteServer::start(site(29, 300, 8)).await;
    let expected = server.expected();
    let total = expected.fetched.len() as u64;
    let (host, seed) = host_and_seed(&server);
    let id = "collectors";
    let file = results(&redis.url(), id);
    let args = ["--concurrency", "3", "--lease", "1s"];
    // Two processes given the results file (one collects, the other stands by) and one
    // that only crawls.
    let mut running = vec![crawler(
        std::slice::from_ref(&seed),
        &redis.url(),
        id,
        &args,
    )];
    let first = new_collector(&file, None).await;
    running.push(crawler(&[], &redis.url(), id, &args));
    running.push(crawler_only(&[], &redis.url(), id, &args));
    // Kill the collector mid-crawl (SIGKILL: mid-transaction, maybe); the other takes over.
    wait_stored(&redis, id, &host, total / 4).await;
    kill_pid(&mut running, first).await;
    let second = new_collector(&file, Some(first)).await;
    // Kill that one too: the crawl ends with results still in Redis.
    wait_stored(&redis, id, &host, total / 2).await;
    kill_pid(&mut running, second).await;
    for c in running {
        finish(c).await;
    }
    // A process given the file collects what is left of the finished crawl.
    let out = trawl()
        .args(["crawl", "--store", &redis.url(), "--crawl-id", id, "--db"])
        .arg(&file)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("its results are all in"), "{stdout}");
    let stream = format!("trawl:{{{id}/{host}}}:out");
    assert_eq!(
        redis.cli(&["xlen", &stream]).trim(),
        "0",
        "Redis keeps no result"
    );
    let dir = tempfile::tempdir().unwrap();
    let got = copy_back(&redis.url(), id, dir.path()).await;
    assert_matches(&expected, &got, false);
    assert!(got.finished);
    assert!(got.duplicate_keys.is_empty(), "{:?}", got.duplicate_keys);
    assert_eq!(got.integrity, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_fails_tries_again_and_every_result_arrives() {
    use tokio::io::AsyncBufReadExt;
    let redis = RedisServer::start();
    let server = SiteServer::start(site(31, 300, 8)).await;
    let expected = server.expected();
    let total = expected.fetched.len() as u64;
    let (host, seed) = host_and_seed(&server);
    let id = "retry";
    let file = results(&redis.url(), id);
    let mut child = crawler(
        std::slice::from_ref(&seed),
        &redis.url(),
        id,
        &["--concurrency", "3"],
    );
    let stderr = child.stderr.take().unwrap();
    let (failed, mut failed_rx) = tokio::sync::mpsc::unbounded_channel();
    let log = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let mut all = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("collecting the results stopped") {
                let _ = failed.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    wait_stored(&redis, id, &host, total / 4).await;
    // Another program holds the file's write lock past the collector's patience (5 s):
    // its write fails, and the lock is let go once it has said so.
    let other = rusqlite::Connection::open(&file).unwrap();
    other.busy_timeout(Duration::from_secs(20)).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    tokio::time::timeout(Duration::from_secs(60), failed_rx.recv())
        .await
        .expect("the collector's write fails while the file is held");
    other.execute_batch("ROLLBACK").unwrap();
    drop(other);
    let status = tokio::time::timeout(Duration::from_secs(120), child.wait())
        .await
        .expect("the crawler ends")
        .unwrap();
    let log = log.await.unwrap();
    assert!(status.success(), "{log}");
    assert!(log.contains("trying again"), "{log}");
    let dir = tempfile::tempdir().unwrap();
    let got = copy_back(&redis.url(), id, dir.path()).await;
    assert_matches(&expected, &got, false);
    assert!(got.duplicate_keys.is_empty(), "{:?}", got.duplicate_keys);
    assert_eq!(got.integrity, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_mid_crawl_pauses_the_processes_and_loses_nothing() {
    let mut redis = RedisServer::start();
    let server = SiteServer::start(site(31, 300, 10)).await;
    let expected = server.expected();
    let (host, seed) = host_and_seed(&server);
    let args = ["--concurrency", "3"];
    let children: Vec<Child> = (0..2)
        .map(|_| crawler(std::slice::from_ref(&seed), &redis.url(), "restart", &args))
        .collect();
    wait_stored(&redis, "restart", &host, 40).await;
    redis.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.start_again();
    for c in children {
        finish(c).await;
    }
    assert_copied(&redis.url(), "restart", &expected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_waits_for_redis_to_come_up() {
    let mut redis = RedisServer::not_started();
    let server = SiteServer::start(site(5, 30, 0)).await;
    let expected = server.expected();
    let seed = format!("{}/", server.base());
    let child = crawler(&[seed], &redis.url(), "late", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.start_again();
    finish(child).await;
    assert_copied(&redis.url(), "late", &expected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_site_spreads_over_a_three_master_cluster() {
    let cluster = RedisCluster::start();
    let server = SiteServer::start(site(41, 300, 2)).await;
    let expected = server.expected();
    let (host, seed) = host_and_seed(&server);
    let children: Vec<Child> = (0..2)
        .map(|_| {
            crawler(
                std::slice::from_ref(&seed),
                &cluster.url(),
                "clustered",
                &["--concurrency", "4"],
            )
        })
        .collect();
    for c in children {
        finish(c).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let got = copy_back(&cluster.url(), "clustered", dir.path()).await;
    assert_matches(&expected, &got, false);
    // The one host's visited set is spread over shards on every master, evenly.
    let node_of = |key: &str| {
        let port = owner(&cluster, key);
        cluster.nodes.iter().find(|n| n.port == port).unwrap()
    };
    let meta = "trawl:{clustered}:meta";
    let shards: Vec<String> =
        serde_json::from_str(node_of(meta).cli(&["hget", meta, "shards"]).trim()).unwrap();
    assert_eq!(shards.len(), 6, "2 shards per master: {shards:?}");
    let mut per_master: BTreeMap<u16, u64> = BTreeMap::new();
    for tag in &shards {
        let key = format!("trawl:{{{tag}}}:{host}:seen");
        let node = node_of(&key);
        let n: u64 = node.cli(&["hlen", &key]).trim().parse().unwrap_or(0);
        *per_master.entry(node.port).or_default() += n;
    }
    assert_eq!(per_master.len(), 3, "{per_master:?}");
    let (min, max) = (
        *per_master.values().min().unwrap(),
        *per_master.values().max().unwrap(),
    );
    assert_eq!(
        per_master.values().sum::<u64>() as usize,
        got.fetched
            .keys()
            .chain(got.skipped.keys())
            .filter(|k| k.starts_with(&server.base()))
            .count(),
        "every known URL is in one shard: {per_master:?}"
    );
    assert!(min > 0 && max <= 2 * min, "balanced: {per_master:?}");
}

/// The port of the master whose slots hold `key` (`CLUSTER NODES` lines end with the
/// master's slot ranges, `0-5460`).
fn owner(cluster: &RedisCluster, key: &str) -> u16 {
    let slot: u16 = cluster.nodes[0]
        .cli(&["cluster", "keyslot", key])
        .trim()
        .parse()
        .expect("CLUSTER KEYSLOT answers a number");
    for line in cluster.nodes[0].cli(&["cluster", "nodes"]).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let port: u16 = f[1].split([':', '@']).nth(1).unwrap().parse().unwrap();
        for range in f.iter().skip(8) {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>()) {
                if (a..=b).contains(&slot) {
                    return port;
                }
            }
        }
    }
    panic!("no master owns slot {slot}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_redis_input_is_refused_with_a_clear_message() {
    let redis = RedisServer::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("taken.db");
    std::fs::write(&existing, b"keep me").unwrap();
    let existing_s = existing.display().to_string();
    let seed = "http://127.0.0.1:9/";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["crawl", seed, "--store", "mysql://x", "--crawl-id", "a"],
            "redis://HOST:PORT",
        ),
        (vec!["crawl", seed, "--store", &url], "--crawl-id"),
        (
            vec!["crawl", "--store", &url, "--crawl-id", "bad{id"],
            "crawl id",
        ),
        (
            vec!["crawl", "--store", &url, "--crawl-id", "nothing-here"],
            "give at least one seed",
        ),
        (
            vec![
                "export",
                "--store",
                &url,
                "--crawl-id",
                "x",
                "--to",
                &existing_s,
            ],
            "already exists",
        ),
        (
            vec!["status", "--store", &url, "--crawl-id", "nothing-here"],
            "no crawl",
        ),
    ];
    for (args, says) in cases {
        let out = trawl().args(&args).output().await.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should say {says:?}: {err}");
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");

    // A results file in a folder that does not exist is refused before the crawl records
    // it as its results file for good: the same crawl then takes a good path.
    let nowhere = dir.path().join("no-such-folder").join("r.db");
    let good = dir.path().join("r.db");
    let with_db = |db: &std::path::Path| {
        let db = db.display().to_string();
        let args = [
            "crawl",
            seed,
            "--store",
            &url,
            "--crawl-id",
            "folder",
            "--db",
            &db,
        ];
        args.map(str::to_owned)
    };
    let out = trawl().args(with_db(&nowhere)).output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not exist") && err.contains("create the folder"),
        "{err}"
    );
    // (Its seed is unreachable: the crawl runs, and fails for that reason alone.)
    let out = trawl().args(with_db(&good)).output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no seed could be fetched"), "{err}");
    assert!(good.exists(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_gives_leases_back_and_the_crawl_resumes() {
    let redis = RedisServer::start();
    let server = SiteServer::start(site(13, 200, 10)).await;
    let expected = server.expected();
    let (host, seed) = host_and_seed(&server);
    // A long lease: only an explicit give-back can free the URLs in time.
    let args = ["--concurrency", "4", "--lease", "10m"];
    let child = crawler(std::slice::from_ref(&seed), &redis.url(), "ctrlc", &args);
    wait_stored(&redis, "ctrlc", &host, 30).await;
    let pid = child.id().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "interrupted exit code");
    let held = support::redis::held(|args| redis.cli(args), "ctrlc", &host);
    assert_eq!(held, (0, 0), "every token and lease given back");
    // Resuming needs no seed, and finishes well before a 10-minute lease could expire.
    finish(crawler(&[], &redis.url(), "ctrlc", &args)).await;
    assert_copied(&redis.url(), "ctrlc", &expected).await;
    assert_fetched_once(&server, &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_pauses_the_host_for_every_process() {
    let redis = RedisServer::start();
    let (app, calls) = support::limited::limited_site(40, "2");
    let server = support::adhoc::Adhoc::start(app).await;
    let seed = format!("{}/", server.base);
    let args = [
        "--concurrency",
        "4",
        "--per-host",
        "4",
        "--ignore-robots",
        "--no-sitemaps",
    ];
    let children: Vec<Child> = (0..3)
        .map(|_| crawler(std::slice::from_ref(&seed), &redis.url(), "paused", &args))
        .collect();
    let started = Instant::now();
    for c in children {
        finish(c).await;
    }
    assert!(started.elapsed() >= Duration::from_secs(2));
    support::limited::assert_quiet_after_429(&server, Duration::from_secs(2));
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "retried once"
    );
    let dir = tempfile::tempdir().unwrap();
    let got = copy_back(&redis.url(), "paused", dir.path()).await;
    let limited = &got.fetched[&format!("{}/limited", server.base)];
    assert_eq!(limited.0, Some(200));
    assert_eq!(got.fetched.len(), 42, "/, /limited and 40 pages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_are_read_once_for_the_crawl_as_a_local_crawl_reads_them() {
    let redis = RedisServer::start();
    let server = support::adhoc::Adhoc::start(support::sitemapped::site()).await;
    let seed = format!("{}/", server.base);
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("local.db");
    support::run::crawl(trawl::Crawler::builder().db(&local).seed(&seed)).await;
    let local = db::read(&local);
    let children: Vec<Child> = (0..3)
        .map(|_| crawler(std::slice::from_ref(&seed), &redis.url(), "maps", &[]))
        .collect();
    for c in children {
        finish(c).await;
    }
    let got = copy_back(&redis.url(), "maps", dir.path()).await;
    let status = |c: &db::Crawled| -> BTreeMap<String, (Option<u16>, i64)> {
        c.fetched
            .iter()
            .map(|(k, v)| (k.clone(), (v.0, v.2)))
            .collect()
    };
    assert_eq!(status(&got), status(&local), "pages, statuses and states");
    assert_eq!(got.skipped, local.skipped, "skipped URLs and reasons");
    assert_eq!(got.edges, local.edges, "edges, sitemap edges included");
    // Each sitemap document read once by the crawl, whatever the number of processes,
    // both crawls counted (one each).
    for p in [
        "/maps/index.xml",
        "/maps/a.xml",
        "/maps/b.xml.gz",
        "/orphan",
        "/orphan2",
    ] {
        assert_eq!(
            server.hits(p).len(),
            2,
            "{p}: once locally, once for the Redis crawl"
        );
    }
}
