//! One error type for every part of a Redis crawl (joining it, the store, `status`,
//! `copy`), so the binary tells the user's mistakes from the rest with one downcast.

/// What can go wrong with a Redis crawl. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The `--store` value is not a Redis URL.
    #[error("--store {store:?} is not usable: {why}")]
    BadStore {
        /// As given.
        store: String,
        /// What is wrong.
        why: String,
    },
    /// The crawl id is unusable.
    #[error("--crawl-id {id:?}: {why}")]
    BadCrawlId {
        /// As given.
        id: String,
        /// What is wrong.
        why: String,
    },
    /// A crawl id is needed with --store.
    #[error("a Redis crawl needs a name: add --crawl-id NAME (every process of the crawl uses the same)")]
    NoCrawlId,
    /// No seeds and no crawl of that id yet.
    #[error("Redis holds no crawl {id:?} yet; give at least one seed URL to start it")]
    NoSeeds {
        /// The crawl id.
        id: String,
    },
    /// Redis refused a call for a reason waiting will not fix.
    #[error("Redis error: {0}")]
    Redis(#[source] redis::RedisError),
    /// The server is older than the scripts need.
    #[error("Redis {0} is too old for trawl, which needs Redis 6.2 or newer (its scripts pop a batch with LPOP COUNT); upgrade the server, or crawl into a SQLite file with --db alone")]
    OldRedis(String),
    /// Redis stayed unreachable until the crawl was stopped.
    #[error("Redis was unreachable ({0}); the crawl stopped with nothing lost: run the same command when Redis is back")]
    Unreachable(String),
    /// Data under the crawl's keys is not what trawl wrote.
    #[error("Redis holds unreadable data for crawl ({what}: {detail}); was the key space written by another program? Use another --crawl-id")]
    Corrupt {
        /// Which value.
        what: String,
        /// The parse error.
        detail: String,
    },
    /// The WARC records of a page could not be written, so its result was not stored.
    #[error(transparent)]
    Warc(#[from] crate::warc::WarcError),
    /// A bug in trawl.
    #[error("internal error: {0}; please report it")]
    Internal(String),
    /// Writing the SQLite copy failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The copy's target exists.
    #[error("{0} already exists; give a new file to copy the crawl into (or remove it)")]
    TargetExists(String),
    /// This process was given a results file other than the crawl's.
    #[error("crawl {id:?} collects its results into {path} on {machine} (the --db of the first process that gave one); give that --db on that machine, or no --db")]
    OtherResults {
        /// The crawl id.
        id: String,
        /// Where the crawl's results go.
        path: String,
        /// The machine holding that file.
        machine: String,
    },
    /// The crawl's results are in a file this process cannot read.
    #[error("crawl {id:?} collects its results into {path} on {machine}; read it there (trawl export --db {path}), or with --store from that machine")]
    ResultsElsewhere {
        /// The crawl id.
        id: String,
        /// Where the crawl's results go.
        path: String,
        /// The machine holding that file.
        machine: String,
    },
    /// The `--db` file holds another crawl's results.
    #[error("{path} holds the results of {}; {}", if *finished { "a finished crawl" } else { "an unfinished crawl, not this Redis crawl's" }, if *finished { "add --recrawl to crawl again into it (its link checks younger than --check-cache-age are kept, the rest is replaced), or give a new --db" } else { "resume it as it was made, or give a new --db" })]
    FileHoldsCrawl {
        /// The file.
        path: String,
        /// Whether that crawl finished.
        finished: bool,
    },
    /// `--recrawl` or `--recheck` of a file into a Redis crawl that began without it.
    #[error("crawl {id:?} began before {path} was given to it; --recrawl, --recheck and --refresh take a file's finished crawl into a new Redis crawl: give a new --crawl-id")]
    ReuseStarted {
        /// The crawl id.
        id: String,
        /// The file.
        path: String,
    },
    /// No process ever collected the crawl's results.
    #[error("no process collects the results of crawl {id:?} yet: run one of its processes with --db FILE (trawl crawl --store ... --crawl-id {id} --db FILE) and read that file")]
    NoResults {
        /// The crawl id.
        id: String,
    },
}

impl DistError {
    /// Whether the user's input is at fault (the CLI exits 2).
    pub fn is_usage(&self) -> bool {
        match self {
            DistError::BadStore { .. }
            | DistError::BadCrawlId { .. }
            | DistError::NoCrawlId
            | DistError::NoSeeds { .. }
            | DistError::TargetExists(_)
            | DistError::OtherResults { .. }
            | DistError::FileHoldsCrawl { .. }
            | DistError::ReuseStarted { .. } => true,
            DistError::Store(e) => e.is_usage(),
            DistError::Redis(_)
            | DistError::OldRedis(_)
            | DistError::Unreachable(_)
            | DistError::Corrupt { .. }
            | DistError::Warc(_)
            | DistError::Internal(_)
            | DistError::ResultsElsewhere { .. }
            | DistError::NoResults { .. } => false,
        }
    }
}
