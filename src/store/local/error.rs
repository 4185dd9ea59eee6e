//! What can go wrong with the SQLite file, each message saying what the user can do.

/// Why the store failed. Each message says what the user can do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file is not a SQLite database, or is damaged.
    #[error("{path} is not a usable trawl database ({detail}); it was left untouched: give another --db path, or restore the file from a backup")]
    Corrupt {
        /// The file.
        path: String,
        /// What SQLite or trawl found.
        detail: String,
    },
    /// A SQLite database, but not one trawl made.
    #[error("{path} is a SQLite database but not a trawl crawl; it was left untouched: give another --db path")]
    NotTrawl {
        /// The file.
        path: String,
    },
    /// Made by a newer trawl.
    #[error("{path} has schema version {found}, newer than this trawl understands ({supported}); upgrade trawl")]
    TooNew {
        /// The file.
        path: String,
        /// The file's version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// Another process holds the crawl.
    #[error("{path} is in use by another trawl process{pid}; wait for it to finish or stop it, then run again")]
    Locked {
        /// The file.
        path: String,
        /// " (pid N)" when known.
        pid: String,
    },
    /// The file or its directory cannot be written.
    #[error("{path} cannot be written ({detail}); check its permissions and free disk space")]
    ReadOnly {
        /// The file.
        path: String,
        /// What the OS or SQLite said.
        detail: String,
    },
    /// The folder the file is to be made in does not exist.
    #[error("cannot make {path}: its folder {dir} does not exist; create the folder, or give --db a path in an existing one")]
    NoFolder {
        /// The file.
        path: String,
        /// Its folder.
        dir: String,
    },
    /// The file could not be opened at all.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The disk is full: what is committed is safe.
    #[error("the disk holding {path} is full; everything committed so far is safe: free some space and run the same command again to resume")]
    DiskFull {
        /// The file.
        path: String,
    },
    /// Any other SQLite error.
    #[error("database error on {path}: {source}")]
    Sqlite {
        /// The file.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The WARC records of a page could not be written, so its result was not committed.
    #[error(transparent)]
    Warc(#[from] crate::warc::WarcError),
    /// The directory for the visited set's overflow files is unusable.
    #[error(
        "cannot create the visited set's overflow files in {dir}: {source}; make the directory \
         writable, or set visited-memory = 0 to keep every URL in memory"
    )]
    VisitedDir {
        /// The directory (the database's).
        dir: String,
        /// Why.
        source: std::io::Error,
    },
    /// `--generation N` names a generation the file does not keep.
    #[error("{path} keeps no generation {asked}; it keeps {}: choose one of those (trawl prune drops old ones)", kept.join(", "))]
    NoGeneration {
        /// The file.
        path: String,
        /// The generation asked for.
        asked: i64,
        /// The generations it keeps, oldest first.
        kept: Vec<String>,
    },
    /// `trawl prune` would drop the generation an unfinished refresh carries pages from.
    #[error("{path}: generation {generation} is a refresh that has not finished, and it needs generation {} to carry unchanged pages over; finish it first (trawl crawl --db FILE resumes it) or prune with a larger --keep", generation - 1)]
    RefreshUnfinished {
        /// The file.
        path: String,
        /// The unfinished generation.
        generation: i64,
    },
    /// The writer thread is gone (it stopped on an earlier error).
    #[error("the store writer has stopped")]
    WriterGone,
}

impl StoreError {
    /// Whether the user's input is at fault (a path, a file that is not a usable crawl, a
    /// file in use), as opposed to a failure while working on a good file: the CLI exits 2
    /// for these, 1 for the others.
    pub fn is_usage(&self) -> bool {
        match self {
            StoreError::Corrupt { .. }
            | StoreError::NotTrawl { .. }
            | StoreError::TooNew { .. }
            | StoreError::Locked { .. }
            | StoreError::ReadOnly { .. }
            | StoreError::Open { .. }
            | StoreError::NoFolder { .. }
            | StoreError::VisitedDir { .. }
            | StoreError::NoGeneration { .. }
            | StoreError::RefreshUnfinished { .. } => true,
            StoreError::DiskFull { .. }
            | StoreError::Sqlite { .. }
            | StoreError::Warc(_)
            | StoreError::WriterGone => false,
        }
    }
}
