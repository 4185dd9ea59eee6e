//! WARC output: every HTTP exchange of a crawl as a `request` and a `response` record
//! (WARC 1.1, one gzip member per record), after a `warcinfo` record per run, so the crawl
//! can be replayed and indexed by the tools that read web archives.
//!
//! The fetcher captures each exchange ([`Capture`]: the request head it sent, the
//! response head and the body bytes it handed out, capped like the crawl's); when the
//! response is dropped the capture goes to one writer thread that owns the file and does
//! the encoding, hashing and compression, off the workers' path. The channel is bounded
//! and a capture reserves its slot before the request is sent, so a slow disk holds the
//! fetches back and nothing is ever dropped.
//!
//! Ordering with the database: a page's result is committed only after its records are
//! written and synced ([`CommitBarrier`], called by the store writer before each commit).
//! So after a crash every committed page has its records in the file; a page fetched but
//! not committed is fetched again on resume and recorded again (a second capture of it).
//!
//! Bodies are recorded as trawl reads them: decoded (reqwest undoes gzip, br, deflate and
//! zstd, and drops `Content-Encoding` and `Content-Length`), with the chunked framing
//! removed. The recorded head says so: no `Transfer-Encoding`, and a `Content-Length` of
//! the bytes recorded.

mod capture;
mod exchange;
mod file;
mod record;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::SystemTime;

use tokio::sync::mpsc;

pub(crate) use capture::declared_length;
pub use capture::{Capture, Earlier, WarcSink};

use capture::Exchange;
use exchange::records;
use record::{new_id, Kind, Record};

/// Why WARC output failed. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    /// The path names a directory.
    #[error("--warc {path} is a directory; give a file name, e.g. {path}/crawl.warc.gz")]
    IsDirectory {
        /// The path given.
        path: String,
    },
    /// The file's directory does not exist.
    #[error("cannot create the WARC file {path}: the directory {dir} does not exist; create it first or give another --warc path")]
    NoDirectory {
        /// The path given.
        path: String,
        /// Its directory.
        dir: String,
    },
    /// The file cannot be opened for appending.
    #[error("cannot open the WARC file {path} for appending: {source}; check its permissions or give another --warc path")]
    Open {
        /// The path given.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file exists and is not a gzip-per-record WARC file.
    #[error("{path} is not a gzip-per-record WARC file ({detail}); it was left untouched: give another --warc path")]
    NotWarc {
        /// The path given.
        path: String,
        /// What was found.
        detail: String,
    },
    /// Another process writes the file.
    #[error("the WARC file {path} is in use by another trawl process; wait for it to finish or give another --warc path")]
    Locked {
        /// The path given.
        path: String,
    },
    /// The WARC file and the database are one file.
    #[error("--warc {path} is the crawl's database; give the WARC file a name of its own, e.g. crawl.warc.gz")]
    SameAsDb {
        /// The path given.
        path: String,
    },
    /// Writing failed during the crawl (a full disk, most often).
    #[error("cannot write the WARC file {path}: {detail}; every page committed so far has its records in the file: free some space (or fix the file's permissions) and run the same command again to resume")]
    Write {
        /// The file.
        path: String,
        /// What the OS said.
        detail: String,
    },
}

/// What the writer thread and its users share.
struct Shared {
    path: PathBuf,
    file: File,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Exchanges sent to the writer, in channel order (counted under the lock that sends).
    sent: u64,
    /// Exchanges the writer has finished with (written, or given up on after a failure).
    done: u64,
    /// `done` at the last fsync.
    synced: u64,
    /// The first write failure; nothing is written after it.
    failed: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves counters that are still right.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn write_error(&self, detail: String) -> WarcError {
        WarcError::Write {
            path: self.path.display().to_string(),
            detail,
        }
    }
}

/// An open WARC file and its writer thread, for one run of a crawl.
pub struct Warc {
    sink: WarcSink,
}

/// Lets the store writer wait, before it commits, until every record sent so far is
/// written and synced.
pub struct CommitBarrier {
    shared: Arc<Shared>,
}

/// Refuse a `--warc` path that can never work (a directory, a missing directory, a file
/// that is not a gzip WARC, the crawl's database `db` itself) before anything is written.
pub fn check_path(path: &Path, db: Option<&Path>) -> Result<(), WarcError> {
    let same = db.is_some_and(
        |db| match (std::path::absolute(path), std::path::absolute(db)) {
            (Ok(a), Ok(b)) => a == b,
            _ => path == db,
        },
    );
    if same {
        return Err(WarcError::SameAsDb {
            path: path.display().to_string(),
        });
    }
    file::check(path)
}

impl Warc {
    /// Open (or create) the file at `path`, cut an incomplete last record, write a
    /// `warcinfo` record with `info` (`name: value` lines), and start the writer thread.
    /// `queue` bounds the exchanges captured and not yet taken by the writer.
    pub fn open(path: &Path, info: &[(&str, String)], queue: usize) -> Result<Warc, WarcError> {
        let (file, _cut) = file::open(path)?;
        let warcinfo_id = new_id();
        let mut block = String::new();
        for (name, value) in info {
            block.push_str(name);
            block.push_str(": ");
            block.push_str(value);
            block.push_str("\r\n");
        }
        let filename = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let warcinfo = Record {
            kind: Kind::Warcinfo,
            id: warcinfo_id.clone(),
            date: SystemTime::now(),
            content_type: "application/warc-fields",
            fields: vec![("WARC-Filename", filename)],
            block: block.into_bytes(),
            payload_at: None,
        };
        let shared = Arc::new(Shared {
            path: path.to_owned(),
            file,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        append(&shared.file, &warcinfo.gzip_member())
            .map_err(|e| shared.write_error(e.to_string()))?;
        let (tx, rx) = mpsc::channel(queue.max(1));
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("trawl-warc".into())
            .spawn(move || run(&thread_shared, rx, &warcinfo_id))
            .map_err(|e| shared.write_error(format!("cannot start the writer thread: {e}")))?;
        Ok(Warc {
            sink: WarcSink { tx, shared },
        })
    }

    /// A handle for the fetcher.
    pub fn sink(&self) -> WarcSink {
        self.sink.clone()
    }

    /// A barrier for the store writer.
    pub fn barrier(&self) -> CommitBarrier {
        CommitBarrier {
            shared: self.sink.shared.clone(),
        }
    }

    /// Wait until every exchange captured so far is written and synced; the first write
    /// failure, if any. The writer thread ends once every [`WarcSink`] is dropped.
    pub fn finish(self) -> Result<(), WarcError> {
        self.barrier().wait()
    }
}

impl CommitBarrier {
    /// Block until every exchange sent before this call is written, then sync the file
    /// (once per call at most, and only when something new was written).
    pub fn wait(&self) -> Result<(), WarcError> {
        let shared = &self.shared;
        let mut state = shared.lock();
        let target = state.sent;
        while state.done < target && state.failed.is_none() {
            state = shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        if let Some(detail) = &state.failed {
            return Err(shared.write_error(detail.clone()));
        }
        if state.synced >= target {
            return Ok(());
        }
        drop(state);
        // Synced outside the lock: captures keep flowing to the writer meanwhile.
        shared
            .file
            .sync_data()
            .map_err(|e| shared.write_error(e.to_string()))?;
        let mut state = shared.lock();
        state.synced = state.synced.max(target);
        Ok(())
    }
}

/// Append `bytes` with one write call per attempt (so a crash leaves at most one partial
/// member, at the end).
fn append(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = file;
    f.write_all(bytes)
}

/// The writer thread: encode, hash, compress and append each exchange in order.
fn run(shared: &Shared, mut rx: mpsc::Receiver<Exchange>, warcinfo: &str) {
    // Wakes barrier waiters if this thread dies, so a commit never waits for ever.
    struct Guard<'a>(&'a Shared);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                let mut state = self.0.lock();
                state
                    .failed
                    .get_or_insert_with(|| "the WARC writer panicked".into());
                self.0.changed.notify_all();
            }
        }
    }
    let _guard = Guard(shared);
    let mut end = shared.file.metadata().map(|m| m.len()).unwrap_or(0);
    while let Some(ex) = rx.blocking_recv() {
        let failed = shared.lock().failed.is_some();
        let result = if failed {
            Ok(())
        } else {
            let (request, response) = records(&ex, warcinfo);
            let mut bytes = request.gzip_member();
            bytes.extend_from_slice(&response.gzip_member());
            match append(&shared.file, &bytes) {
                Ok(()) => {
                    end += bytes.len() as u64;
                    Ok(())
                }
                Err(e) => {
                    // Leave no partial record behind when the OS lets us; the next open
                    // cuts it otherwise.
                    let _ = shared.file.set_len(end);
                    Err(e.to_string())
                }
            }
        };
        let mut state = shared.lock();
        if let Err(e) = result {
            tracing::error!(path = %shared.path.display(), error = %e, "cannot write the WARC file");
            state.failed.get_or_insert(e);
        }
        state.done += 1;
        shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_starts_with_warcinfo_and_finish_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.warc.gz");
        let warc = Warc::open(&path, &[("software", "trawl/test".into())], 4).unwrap();
        warc.finish().unwrap();
        let mut out = String::new();
        use std::io::Read;
        flate2::read::MultiGzDecoder::new(File::open(&path).unwrap())
            .read_to_string(&mut out)
            .unwrap();
        assert!(
            out.starts_with("WARC/1.1\r\nWARC-Type: warcinfo\r\n"),
            "{out}"
        );
        assert!(out.contains("WARC-Filename: t.warc.gz\r\n"), "{out}");
        assert!(out.ends_with("software: trawl/test\r\n\r\n\r\n"), "{out}");
    }
}
