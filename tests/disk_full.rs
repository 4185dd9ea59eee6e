//! The disk fills during a crawl: trawl stops with a clear message, keeps everything it
//! committed, and resumes once there is space again. The full disk is a small tmpfs
//! mounted by the test (needs root, as the test machines and CI run; elsewhere the test
//! fails and says why).

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{db, SiteServer, SiteSpec};

fn mount(dir: &Path, size: &str, remount: bool) -> bool {
    let opts = if remount {
        format!("remount,size={size}")
    } else {
        format!("size={size}")
    };
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success())
}

struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_crawl_cleanly_and_it_resumes() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("tiny");
    std::fs::create_dir(&dir).unwrap();
    // A test that cannot set up its full disk fails, with the reason: it must not pass
    // without testing anything (CI and the test machines run as root).
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test mounts a small tmpfs, which needs root: run the tests as root (as CI does)"
    );
    assert!(
        mount(&dir, "600k", false),
        "cannot mount a 600k tmpfs on {}: `mount -t tmpfs` failed (is mount available, and \
         this a machine where root may mount?)",
        dir.display()
    );
    let _unmount = Unmount(&dir);
    let spec = SiteSpec {
        seed: 5,
        pages: 1500,
        links_per_page: 10,
        latency: Duration::ZERO,
        extras: false,
    };
    let server = SiteServer::start(support::Site::generate(&spec)).await;
    let path = dir.join("full.db");
    let run = |path: &Path| {
        let bin = env!("CARGO_BIN_EXE_trawl");
        let base = format!("{}/", server.base());
        let path = path.to_owned();
        async move {
            tokio::process::Command::new(bin)
                .args(["crawl", &base, "--db"])
                .arg(&path)
                .args(["--no-progress", "-q", "--no-sitemaps", "--ignore-robots"])
                .output()
                .await
                .unwrap()
        }
    };
    let out = tokio::time::timeout(Duration::from_secs(60), run(&path))
        .await
        .expect("stops, does not hang");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("disk") && stderr.contains("full"),
        "{stderr}"
    );
    assert!(stderr.contains("resume"), "says what to do: {stderr}");
    let partial = db::read(&path);
    assert_eq!(partial.integrity, "ok");
    assert!(!partial.finished);
    assert!(!partial.fetched.is_empty(), "what was committed is kept");

    assert!(mount(&dir, "64m", true), "growing the tmpfs");
    let out = tokio::time::timeout(Duration::from_secs(120), run(&path))
        .await
        .expect("the resumed crawl ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = db::read(&path);
    let expected = server.expected();
    assert_eq!(got.integrity, "ok");
    assert!(got.finished);
    assert!(got.duplicate_keys.is_empty());
    let have: std::collections::BTreeSet<_> = got.fetched.keys().cloned().collect();
    let want: std::collections::BTreeSet<_> = expected.fetched.keys().cloned().collect();
    assert_eq!(have, want);
    assert_eq!(got.edges, expected.edges);
}
