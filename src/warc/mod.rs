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

mod file;
mod record;

use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::SystemTime;

use reqwest::header::{HeaderMap, CONTENT_LENGTH, TRANSFER_ENCODING};
use reqwest::{StatusCode, Version};
use tokio::sync::mpsc;
use url::{Position, Url};

use record::{http_head, new_id, Kind, Record};

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

/// How the body of a captured response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyEnd {
    /// Read to its end.
    Complete,
    /// Cut at `max-body` (`WARC-Truncated: length`).
    Cut,
    /// A timeout stopped it (`time`).
    Timeout,
    /// The connection broke (`disconnect`).
    Broken,
    /// Not read to its end, for a reason of trawl's (`unspecified`): a redirect body over
    /// the read-ahead, a large non-HTML body trawl does not download, a parse error.
    Unread,
}

/// The response head as received.
struct Head {
    version: Version,
    status: StatusCode,
    reason: Option<Vec<u8>>,
    headers: HeaderMap,
    ip: Option<IpAddr>,
}

/// One HTTP exchange, as the writer needs it.
struct Exchange {
    url: Url,
    started: SystemTime,
    request: HeaderMap,
    head: Head,
    body: Vec<u8>,
    end: BodyEnd,
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

/// Where the fetcher sends captures. Cheap to clone.
#[derive(Clone)]
pub struct WarcSink {
    tx: mpsc::Sender<Exchange>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WarcSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarcSink")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
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

impl WarcSink {
    /// Start capturing a request to `url` carrying `request` headers. Waits while the
    /// writer is `queue` exchanges behind: the backpressure that keeps memory bounded.
    pub async fn begin(&self, url: &Url, request: HeaderMap) -> Capture {
        // Reserved before the request is sent, so the capture can be handed over without
        // waiting whenever and wherever the response is dropped.
        let slot = self.tx.clone().reserve_owned().await.ok();
        Capture {
            slot,
            shared: self.shared.clone(),
            exchange: Some(Exchange {
                url: url.clone(),
                started: SystemTime::now(),
                request,
                head: Head {
                    version: Version::HTTP_11,
                    status: StatusCode::OK,
                    reason: None,
                    headers: HeaderMap::new(),
                    ip: None,
                },
                body: Vec::new(),
                end: BodyEnd::Unread,
            }),
            answered: false,
            cap: 0,
            error: None,
        }
    }
}

/// One exchange being captured. Sent to the writer when dropped, if a response head came;
/// a request that got no response leaves no record.
pub struct Capture {
    slot: Option<mpsc::OwnedPermit<Exchange>>,
    shared: Arc<Shared>,
    exchange: Option<Exchange>,
    answered: bool,
    cap: u64,
    error: Option<BodyEnd>,
}

impl Capture {
    /// The response head arrived. `ip`: the server's address, when the connection went to
    /// it directly. `cap`: the most body bytes recorded (the crawl's `max-body`).
    pub fn response(&mut self, resp: &reqwest::Response, ip: bool, cap: u64) {
        if let Some(ex) = &mut self.exchange {
            ex.head = Head {
                version: resp.version(),
                status: resp.status(),
                reason: resp
                    .extensions()
                    .get::<hyper::ext::ReasonPhrase>()
                    .map(|r| r.as_bytes().to_vec()),
                headers: resp.headers().clone(),
                ip: ip.then(|| resp.remote_addr().map(|a| a.ip())).flatten(),
            };
            self.answered = true;
            self.cap = cap;
        }
    }

    /// Body bytes as they arrived (before trawl's own cap): kept up to the cap.
    pub fn body(&mut self, bytes: &[u8]) {
        if let Some(ex) = &mut self.exchange {
            let room = self.cap.saturating_sub(ex.body.len() as u64) as usize;
            if bytes.len() > room {
                ex.body.extend_from_slice(&bytes[..room]);
                ex.end = BodyEnd::Cut;
            } else {
                ex.body.extend_from_slice(bytes);
            }
        }
    }

    /// The body ended (the server sent all of it).
    pub fn ended(&mut self) {
        if let Some(ex) = &mut self.exchange {
            if ex.end == BodyEnd::Unread {
                ex.end = BodyEnd::Complete;
            }
        }
    }

    /// Reading the body failed: `timeout` for a timeout, else a broken connection.
    pub fn failed(&mut self, timeout: bool) {
        self.error = Some(if timeout {
            BodyEnd::Timeout
        } else {
            BodyEnd::Broken
        });
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let (Some(mut ex), Some(slot)) = (self.exchange.take(), self.slot.take()) else {
            return;
        };
        if !self.answered {
            return;
        }
        if let (BodyEnd::Unread | BodyEnd::Complete, Some(e)) = (ex.end, self.error) {
            ex.end = e;
        }
        if ex.end == BodyEnd::Unread
            && declared_length(&ex.head.headers) == Some(ex.body.len() as u64)
        {
            ex.end = BodyEnd::Complete;
        }
        // Counted and sent under one lock, so the count order is the channel order and
        // the barrier's "everything sent before now" means what it says.
        let mut state = self.shared.lock();
        state.sent += 1;
        let _ = slot.send(ex);
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

/// The request and response records of one exchange.
fn records(ex: &Exchange, warcinfo: &str) -> (Record, Record) {
    let request_id = new_id();
    let response_id = new_id();
    let (version, request_version) = versions(ex.head.version);
    let (response_block, payload_at) = response_block(ex, version);
    let mut request_fields = common_fields(ex, warcinfo);
    request_fields.push(("WARC-Concurrent-To", response_id.clone()));
    let mut response_fields = common_fields(ex, warcinfo);
    if let Some(t) = truncation(ex.end) {
        response_fields.push(("WARC-Truncated", t.to_owned()));
    }
    (
        Record {
            kind: Kind::Request,
            id: request_id,
            date: ex.started,
            content_type: "application/http;msgtype=request",
            fields: request_fields,
            block: request_block(ex, request_version),
            payload_at: None,
        },
        Record {
            kind: Kind::Response,
            id: response_id,
            date: ex.started,
            content_type: "application/http;msgtype=response",
            fields: response_fields,
            block: response_block,
            payload_at: Some(payload_at),
        },
    )
}

/// The HTTP version of the response line, and of the request line.
fn versions(version: Version) -> (&'static str, &'static str) {
    let response = match version {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2",
        Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    };
    // hyper speaks HTTP/1.1 whatever version an HTTP/1 server answers with.
    let request = match version {
        Version::HTTP_2 | Version::HTTP_3 => response,
        _ => "HTTP/1.1",
    };
    (response, request)
}

/// The request head as sent: the request line, `Host`, then the other headers.
fn request_block(ex: &Exchange, version: &str) -> Vec<u8> {
    let target = &ex.url[Position::BeforePath..Position::AfterQuery];
    let host = &ex.url[Position::BeforeHost..Position::AfterPort];
    let request_line = format!("GET {target} {version}");
    http_head(
        &request_line,
        std::iter::once(("host", host.as_bytes())).chain(
            ex.request
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes())),
        ),
    )
}

/// The response head and body, and where the body (the payload) starts.
fn response_block(ex: &Exchange, version: &str) -> (Vec<u8>, usize) {
    let head = &ex.head;
    let reason = head.reason.clone().unwrap_or_else(|| {
        head.status
            .canonical_reason()
            .unwrap_or("")
            .as_bytes()
            .to_vec()
    });
    let status_line = format!(
        "{version} {} {}",
        head.status.as_str(),
        String::from_utf8_lossy(&reason)
    );
    // The body is stored decoded and unchunked, so the head must not announce either.
    let length = ex.body.len().to_string();
    let bodiless = head.status.is_informational()
        || head.status == StatusCode::NO_CONTENT
        || head.status == StatusCode::NOT_MODIFIED;
    let headers = head
        .headers
        .iter()
        .filter(|(name, _)| **name != TRANSFER_ENCODING && **name != CONTENT_LENGTH)
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .chain((!bodiless || !ex.body.is_empty()).then_some(("content-length", length.as_bytes())));
    let mut block = http_head(&status_line, headers);
    let payload_at = block.len();
    block.extend_from_slice(&ex.body);
    (block, payload_at)
}

/// The fields both records of an exchange carry.
fn common_fields(ex: &Exchange, warcinfo: &str) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        // What was requested: a fragment is never sent.
        ("WARC-Target-URI", ex.url[..Position::AfterQuery].to_owned()),
        ("WARC-Warcinfo-ID", warcinfo.to_owned()),
    ];
    if let Some(ip) = ex.head.ip {
        fields.push(("WARC-IP-Address", ip.to_string()));
    }
    fields
}

/// `WARC-Truncated`: why a body is not all there, if it is not.
fn truncation(end: BodyEnd) -> Option<&'static str> {
    match end {
        BodyEnd::Complete => None,
        BodyEnd::Cut => Some("length"),
        BodyEnd::Timeout => Some("time"),
        BodyEnd::Broken => Some("disconnect"),
        BodyEnd::Unread => Some("unspecified"),
    }
}

/// The `Content-Length` of `headers`, when present and a number.
pub(crate) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn exchange(body: &[u8], end: BodyEnd) -> Exchange {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("text/html"));
        headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
        let mut request = HeaderMap::new();
        request.insert("user-agent", HeaderValue::from_static("trawl/test"));
        Exchange {
            url: Url::parse("http://example.org:8080/a?b=1#frag").unwrap(),
            started: SystemTime::now(),
            request,
            head: Head {
                version: Version::HTTP_10,
                status: StatusCode::NOT_FOUND,
                reason: Some(b"Nope".to_vec()),
                headers,
                ip: Some("10.1.2.3".parse().unwrap()),
            },
            body: body.to_vec(),
            end,
        }
    }

    fn text(block: &[u8]) -> String {
        String::from_utf8(block.to_vec()).unwrap()
    }

    #[test]
    fn an_exchange_becomes_a_linked_request_and_response() {
        let (req, resp) = records(&exchange(b"<p>gone</p>", BodyEnd::Complete), "<info>");
        assert_eq!(
            text(&req.block),
            "GET /a?b=1 HTTP/1.1\r\nhost: example.org:8080\r\nuser-agent: trawl/test\r\n\r\n"
        );
        assert!(req
            .fields
            .contains(&("WARC-Concurrent-To", resp.id.clone())));
        for rec in [&req, &resp] {
            assert!(rec
                .fields
                .contains(&("WARC-Target-URI", "http://example.org:8080/a?b=1".into())));
            assert!(rec.fields.contains(&("WARC-IP-Address", "10.1.2.3".into())));
            assert!(rec.fields.contains(&("WARC-Warcinfo-ID", "<info>".into())));
        }
        // The body is stored unchunked, so the head announces its real length only.
        assert_eq!(
            text(&resp.block),
            "HTTP/1.0 404 Nope\r\ncontent-type: text/html\r\ncontent-length: 11\r\n\r\n<p>gone</p>"
        );
        assert_eq!(&resp.block[resp.payload_at.unwrap()..], b"<p>gone</p>");
        assert!(!resp.fields.iter().any(|(n, _)| *n == "WARC-Truncated"));
    }

    #[test]
    fn bodies_that_did_not_end_are_marked_truncated() {
        for (end, why) in [
            (BodyEnd::Cut, "length"),
            (BodyEnd::Timeout, "time"),
            (BodyEnd::Broken, "disconnect"),
            (BodyEnd::Unread, "unspecified"),
        ] {
            let (_, resp) = records(&exchange(b"<p>go", end), "<info>");
            assert!(
                resp.fields.contains(&("WARC-Truncated", why.into())),
                "{end:?}"
            );
            assert!(text(&resp.block).contains("content-length: 5\r\n"));
        }
    }

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
