//! Crash-resume stress: the real binary on a 2,000-page site, killed with SIGKILL at 25
//! random moments (some right after it starts, most mid-crawl), resumed each time. At the
//! end the stored page set and edge multiset equal the generator's, no key is stored
//! twice, the file passes `PRAGMA integrity_check`, and the fetches repeated because of the
//! kills are at most the concurrency times the number of kills. The kill moments come from
//! a seed that changes from run to run (`STRESS_SEED` repeats one) and is printed.

use crate::support;

use std::time::{Duration, Instant};

use support::run::{fetched, trawl_child};
use support::{db, SiteServer, SiteSpec};

const CONCURRENCY: usize = 8;
const KILLS: usize = 25;

/// splitmix64: the kill moments, from a seed.
fn rng(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_five_kills_lose_and_duplicate_nothing() {
    let spec = SiteSpec {
        seed: 2026,
        pages: 2000,
        links_per_page: 8,
        latency: Duration::from_millis(2),
        extras: true,
    };
    let server = SiteServer::start(support::Site::generate(&spec)).await;
    let expected = server.expected();
    let total = expected.fetched.len() as u64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stress.db");
    let seed: u64 = match std::env::var("STRESS_SEED") {
        Ok(s) => s.parse().expect("STRESS_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    eprintln!("kill moments from STRESS_SEED={seed}");
    let mut state = seed;
    // Page counts at which to kill, increasing; every fifth kill comes right at start-up
    // instead (while the store is being opened, migrated or resumed).
    let mut targets: Vec<u64> = (0..KILLS)
        .map(|_| 1 + rng(&mut state) % (total - 50))
        .collect();
    targets.sort_unstable();
    let mut kills = 0;
    for (i, &at) in targets.iter().enumerate() {
        let mut child = trawl_child(&server.base(), &path, CONCURRENCY);
        if i % 5 == 0 {
            let wait = 5 + rng(&mut state) % 40;
            tokio::time::sleep(Duration::from_millis(wait)).await;
        } else {
            let deadline = Instant::now() + Duration::from_secs(60);
            while (fetched(&path) as u64) < at {
                assert!(Instant::now() < deadline, "no progress to {at}");
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        if child.try_wait().unwrap().is_none() {
            let pid = child.id().unwrap() as i32;
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
            kills += 1;
        }
        child.wait().await.unwrap();
        // Checked on a copy: the next run starts on the log exactly as the kill left it.
        if let Some(check) = db::integrity_of_copy(&path) {
            assert_eq!(check, "ok", "after kill {i} (STRESS_SEED={seed})");
        }
    }
    // Every run was killed: one that finished first would kill less and loosen the bound.
    assert_eq!(kills, KILLS, "runs killed (STRESS_SEED={seed})");
    let out = tokio::time::timeout(
        Duration::from_secs(300),
        trawl_child(&server.base(), &path, CONCURRENCY).wait(),
    )
    .await
    .expect("the last run ends")
    .unwrap();
    assert!(out.success());

    let got = db::read(&path);
    assert_eq!(got.integrity, "ok");
    assert!(got.finished);
    assert!(got.duplicate_keys.is_empty(), "{:?}", got.duplicate_keys);
    assert!(got.queued.is_empty());
    let have: std::collections::BTreeSet<_> = got.fetched.keys().cloned().collect();
    let want: std::collections::BTreeSet<_> = expected.fetched.keys().cloned().collect();
    assert_eq!(have, want, "page set");
    assert_eq!(got.edges, expected.edges, "edge multiset");
    let hits: usize = server
        .hit_counts()
        .iter()
        .filter(|(p, _)| !["/robots.txt", "/sitemap.xml"].contains(&p.as_str()))
        .map(|(_, n)| n)
        .sum();
    let extra = hits - expected.fetched.len();
    println!(
        "{kills} kills, {extra} repeated fetches, {} pages",
        expected.fetched.len()
    );
    assert!(
        extra <= CONCURRENCY * kills,
        "{extra} repeated fetches for {kills} kills"
    );
}
