//! Both stores from one test body: [`both_stores!`] runs each `async fn name(store: Backend)`
//! as `name::sqlite` and `name::redis`, each handing the body a [`Backend`]: a SQLite
//! file in a temporary directory, or a Redis crawl on a real redis-server started for the
//! test (stopped when it ends). A Redis crawl is read back through the same copy into
//! SQLite that `trawl export --to` makes, so the assertions are the same for both.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use trawl::{Crawler, CrawlerBuilder, Summary};

use super::db;
use super::redis::RedisServer;

/// Where a test's crawls live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A SQLite file per crawl.
    Sqlite,
    /// A Redis crawl per crawl name, in one redis-server.
    Redis,
}

/// See the module doc. Crawls are named; each name is its own crawl (a file, a crawl id).
pub struct Backend {
    pub kind: Kind,
    dir: tempfile::TempDir,
    redis: Option<RedisServer>,
    copies: AtomicUsize,
}

impl Backend {
    /// A backend of `kind` (a Redis one starts its server).
    pub fn new(kind: Kind) -> Backend {
        Backend {
            kind,
            dir: tempfile::tempdir().unwrap(),
            redis: (kind == Kind::Redis).then(RedisServer::start),
            copies: AtomicUsize::new(0),
        }
    }

    /// Whether crawls live in Redis.
    pub fn is_redis(&self) -> bool {
        self.kind == Kind::Redis
    }

    /// A temporary directory for the test's other files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The SQLite file of the crawl `name` (for a Redis crawl: none; see [`Backend::db`]).
    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.db"))
    }

    /// The file a Redis crawl `name` collects its results into.
    fn results(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}-results.db"))
    }

    /// The Redis server, for a Redis backend.
    pub fn redis(&self) -> &RedisServer {
        self.redis.as_ref().expect("a Redis backend")
    }

    /// A builder for the crawl `name`.
    pub fn builder(&self, name: &str) -> CrawlerBuilder {
        match &self.redis {
            None => Crawler::builder().db(self.file(name)),
            // The crawl's process collects its results into a file of its own name.
            Some(r) => Crawler::builder()
                .store(r.url())
                .crawl_id(name)
                .db(self.results(name)),
        }
    }

    /// A builder for run `run` (2, 3, ...) of the finished crawl `name` in its file (with
    /// `recrawl` or `recheck_failed`): the same file; for Redis, a new crawl id `name.run`
    /// whose process collects into the first crawl's results file.
    pub fn again(&self, name: &str, run: usize) -> CrawlerBuilder {
        match &self.redis {
            None => self.builder(name),
            Some(r) => Crawler::builder()
                .store(r.url())
                .crawl_id(format!("{name}.{run}"))
                .db(self.results(name)),
        }
    }

    /// The file holding the results of the crawl `name` (and of its recrawls): the
    /// SQLite file, or the one its Redis crawl collected into.
    pub fn results_file(&self, name: &str) -> PathBuf {
        match &self.redis {
            None => self.file(name),
            Some(_) => self.results(name),
        }
    }

    /// Build what `builder` describes (made by [`Backend::builder`]).
    pub async fn build(&self, builder: CrawlerBuilder) -> Result<Crawler, trawl::Error> {
        match self.kind {
            Kind::Sqlite => builder.build(),
            Kind::Redis => builder.build_distributed().await,
        }
    }

    /// Build and run a crawl to its end (at most two minutes); its summary.
    pub async fn crawl(&self, builder: CrawlerBuilder) -> Summary {
        self.crawl_within(builder, Duration::from_secs(120)).await
    }

    /// [`Backend::crawl`] for a crawl that may take up to `limit` to end.
    pub async fn crawl_within(&self, builder: CrawlerBuilder, limit: Duration) -> Summary {
        tokio::time::timeout(limit, async {
            self.build(builder)
                .await
                .unwrap()
                .run(std::future::pending())
                .await
        })
        .await
        .expect("the crawl ends")
        .unwrap()
    }

    /// The flags a reading command (`status`, `report`, `export`) names the crawl `name`
    /// with: `--db FILE`, or `--store URL --crawl-id NAME`.
    pub fn read_args(&self, name: &str) -> Vec<String> {
        match &self.redis {
            None => vec!["--db".into(), self.file(name).display().to_string()],
            Some(r) => vec!["--store".into(), r.url(), "--crawl-id".into(), name.into()],
        }
    }

    /// The flags `trawl crawl` names the crawl `name` with: `--db FILE`, or `--store URL
    /// --crawl-id NAME --db RESULTS` (the process collects the results into RESULTS).
    pub fn args(&self, name: &str) -> Vec<String> {
        self.crawl_args(name, name.to_owned())
    }

    /// The flags `trawl crawl` names run `run` of the crawl `name` with, as
    /// [`Backend::again`] builds it: the same file, or a new crawl id collecting into the
    /// first crawl's results file.
    pub fn again_args(&self, name: &str, run: usize) -> Vec<String> {
        self.crawl_args(name, format!("{name}.{run}"))
    }

    /// The file of the crawl `name`, or the Redis crawl `crawl_id` collecting into it.
    fn crawl_args(&self, name: &str, crawl_id: String) -> Vec<String> {
        match &self.redis {
            None => vec!["--db".into(), self.file(name).display().to_string()],
            Some(r) => vec![
                "--store".into(),
                r.url(),
                "--crawl-id".into(),
                crawl_id,
                "--db".into(),
                self.results(name).display().to_string(),
            ],
        }
    }

    /// The crawl `name` as a SQLite file to read: the file itself, or a fresh copy of the
    /// Redis crawl (what `trawl export --to` writes).
    pub async fn db(&self, name: &str) -> PathBuf {
        let Some(r) = &self.redis else {
            return self.file(name);
        };
        let n = self.copies.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("{name}-copy{n}.db"));
        trawl::store::redis::copy::to_sqlite(&r.url(), name, &path)
            .await
            .unwrap_or_else(|e| panic!("copying crawl {name}: {e}"));
        path
    }

    /// Everything the crawl `name` stored, read back.
    pub async fn read(&self, name: &str) -> db::Crawled {
        db::read(&self.db(name).await)
    }

    /// Pages stored so far by the crawl `name` on `host` (`127.0.0.1:PORT`), while it runs.
    pub fn stored(&self, name: &str, host: &str) -> i64 {
        match &self.redis {
            None => super::run::fetched(&self.file(name)),
            Some(r) => super::redis::stored(|args| r.cli(args), name, host) as i64,
        }
    }

    /// The store is sound between runs: the SQLite file (if made yet) passes its integrity
    /// check; a Redis crawl (if started yet) copies into a sound file whose URLs are stored
    /// once each.
    pub async fn assert_sound(&self, name: &str) {
        match self.kind {
            Kind::Sqlite => {
                let file = self.file(name);
                assert_eq!(db::integrity(&file).as_deref().unwrap_or("ok"), "ok");
            }
            Kind::Redis => {
                let meta = format!("trawl:{{{name}}}:meta");
                // Nothing written yet, like a file not yet created: no crawl, or one whose
                // first process was killed before it named the results file (the next run
                // names it).
                if self.redis().cli(&["hexists", &meta, "results"]).trim() != "1" {
                    return;
                }
                let got = self.read(name).await;
                assert_eq!(got.integrity, "ok");
                assert!(got.duplicate_keys.is_empty(), "{:?}", got.duplicate_keys);
            }
        }
    }

    /// No process is left recorded as crawling `name`, and nothing is held: the running
    /// pid of the file is cleared; a Redis crawl lists no process and no lease.
    pub fn assert_released(&self, name: &str, host: &str) {
        match &self.redis {
            None => {
                let conn = rusqlite::Connection::open_with_flags(
                    self.file(name),
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                )
                .unwrap();
                let pid: Option<i64> = conn
                    .query_row("SELECT running_pid FROM crawl", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(pid, None, "a clean stop clears the running pid");
            }
            Some(r) => {
                let procs = r.cli(&["hlen", &format!("trawl:{{{name}}}:procs")]);
                assert_eq!(procs.trim(), "0", "a clean stop removes the heartbeat");
                let held = super::redis::held(|args| r.cli(args), name, host);
                assert_eq!(
                    held,
                    (0, 0),
                    "a clean stop gives every token and lease back"
                );
            }
        }
    }
}

/// `both_stores!(name, ...)`: each `async fn name(store: Backend)` of the test file runs
/// once against each store, as the tests `name::sqlite` and `name::redis`.
macro_rules! both_stores {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                use $crate::support::backend::{Backend, Kind};

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name(Backend::new(Kind::Sqlite)).await
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn redis() {
                    super::$name(Backend::new(Kind::Redis)).await
                }
            }
        )+
    };
}
pub(crate) use both_stores;
