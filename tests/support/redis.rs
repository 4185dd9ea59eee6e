//! Real redis-server processes for the distributed tests: one server with persistence on
//! a free loopback port (restartable, to test a Redis that goes away), or a three-master
//! cluster created with `redis-cli --cluster create`. Each is stopped when dropped.
//!
//! `scripts/test` installs redis-server (Debian package) when it is missing.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port whose cluster-bus port (+10000) is free too.
fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = l.local_addr().unwrap().port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

fn binary(name: &str) -> &str {
    let found = Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    assert!(
        found,
        "{name} is not installed: run scripts/test (it installs Debian's redis-server), or apt-get install redis-server"
    );
    name
}

/// One redis-server on 127.0.0.1 with an append-only file fsynced on every write.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// Start a server and wait until it answers.
    pub fn start() -> RedisServer {
        RedisServer::start_with(Vec::new())
    }

    /// A port and directory for a server that is not started yet (`start_again` starts it).
    pub fn not_started() -> RedisServer {
        RedisServer {
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            extra: Vec::new(),
            child: None,
        }
    }

    fn start_with(extra: Vec<String>) -> RedisServer {
        let mut s = RedisServer {
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            extra,
            child: None,
        };
        s.start_again();
        s
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Start the process (again), on the same port and data directory.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(binary("redis-server"))
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(self.dir.path())
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--protected-mode",
                "no",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
            ])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting redis-server");
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if self.cli(&["ping"]).trim() == "PONG" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on {} did not answer",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kill the process (SIGKILL: what is acknowledged is already on disk).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Run `redis-cli -p PORT ARGS...` and return its output.
    pub fn cli(&self, args: &[&str]) -> String {
        Command::new(binary("redis-cli"))
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The data directory.
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three masters, no replicas, slots spread by `redis-cli --cluster create`.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_with(vec![
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-config-file".into(),
                    "nodes.conf".into(),
                    "--cluster-node-timeout".into(),
                    "5000".into(),
                ])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new(binary("redis-cli"))
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        for n in &nodes {
            while !n.cli(&["cluster", "info"]).contains("cluster_state:ok") {
                assert!(Instant::now() < deadline, "cluster did not become ok");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        RedisCluster { nodes }
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`.
    pub fn url(&self) -> String {
        let addrs: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", addrs.join(","))
    }
}

/// Pages the Redis crawl `id` stored so far on `host` (`127.0.0.1:PORT`), through the real
/// key layout: the `stored` count of the host's part in each of the crawl's shards. `cli`
/// runs redis-cli on the server holding the keys.
pub fn stored(cli: impl Fn(&[&str]) -> String, id: &str, host: &str) -> u64 {
    shards(&cli, id)
        .iter()
        .map(|tag| {
            cli(&["hget", &format!("trawl:{{{tag}}}:{host}:counts"), "stored"])
                .trim()
                .parse::<u64>()
                .unwrap_or(0)
        })
        .sum()
}

/// The shard tags of the Redis crawl `id`, from its record (none before it is created).
fn shards(cli: &impl Fn(&[&str]) -> String, id: &str) -> Vec<String> {
    let text = cli(&["hget", &format!("trawl:{{{id}}}:meta"), "shards"]);
    serde_json::from_str(text.trim()).unwrap_or_default()
}

/// What the processes of the Redis crawl `id` hold on `host` now: its tokens (requests
/// in flight, crawl-wide) and the URL leases in every shard.
pub fn held(cli: impl Fn(&[&str]) -> String, id: &str, host: &str) -> (u64, u64) {
    let count = |args: &[&str]| cli(args).trim().parse::<u64>().unwrap_or(0);
    let tokens = count(&["zcard", &format!("trawl:{{{id}/{host}}}:tokens")]);
    let shards = shards(&cli, id);
    assert!(!shards.is_empty(), "crawl {id} records its shards");
    let leases = shards
        .iter()
        .map(|tag| count(&["zcard", &format!("trawl:{{{tag}}}:{host}:lease")]))
        .sum();
    (tokens, leases)
}
