//! A fault-injection site: a hand-written HTTP/1.1 server on 127.0.0.1:0 whose faults are
//! chosen by URL path, with an access log as the oracle, plus a second listener that
//! accepts connections and never answers.
//!
//! Every response is written byte by byte from a tokio `TcpListener`, so the transport
//! faults (a body cut by a reset, a short `Content-Length`, malformed chunking, a drip-fed
//! body, an endless one) are exactly what the bytes say. Each response closes its
//! connection (`Connection: close`), except where the fault is the closing itself.
//!
//! The site is grouped in families ([`Family`]); `/` links every family's entry URLs and
//! `/family/NAME` links one family's; both also link the normal pages `/ok/1` .. `/ok/5`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

pub use super::adhoc::{Hit, Log};

/// The normal pages every index links: each must be fetched exactly once.
pub const OK_PAGES: [&str; 5] = ["/ok/1", "/ok/2", "/ok/3", "/ok/4", "/ok/5"];

/// Links that must never be followed: they sit in comments, scripts and non-HTML bodies.
pub const TRAPS: [&str; 5] = [
    "/trap-comment",
    "/trap-script",
    "/trap-pdf",
    "/trap-json",
    "/trap-unclosed-comment",
];

/// Size of the `Content-Length` announced by `/reset`, and the bytes sent before it.
pub const RESET_ANNOUNCED: usize = 10_000;
/// Bytes `/reset` sends before resetting.
pub const RESET_SENT: usize = 100;

/// The bodies of the non-HTML resources, so tests can check the recorded sizes.
pub fn pdf_body() -> Vec<u8> {
    let mut b =
        b"%PDF-1.4\n1 0 obj << /URI (/trap-pdf) >> endobj\n<a href=\"/trap-pdf\">x</a>\n".to_vec();
    b.resize(1_500, b'%');
    b
}

/// A PNG signature and an IHDR-looking chunk, padded.
pub fn png_body() -> Vec<u8> {
    let mut b = vec![0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
    b.extend_from_slice(b"\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0");
    b.resize(777, 0);
    b
}

/// JSON that mentions a link in HTML form.
pub fn json_body() -> Vec<u8> {
    br#"{"next": "/trap-json", "html": "<a href=\"/trap-json\">next</a>", "n": [1, 2, 3]}"#.to_vec()
}

/// A title in windows-1252 and UTF-8 forms, for the charset pages.
pub const LATIN_TITLE: &str = "Café Müller";

/// The UTF-8 title of `/lying-meta` (whose `<meta>` claims Shift_JIS).
pub const LYING_TITLE: &str = "Grüße, naïve café";

/// The scenario families, each with the entry URLs its index links (paths on the main
/// server; [`SILENT`] stands for the never-answering host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Broken bodies and connections.
    Transport,
    /// Redirect loops and chains.
    Redirects,
    /// 429 storms and a 503 with an HTTP-date.
    Politeness,
    /// Wrong, lying and missing charsets.
    Charsets,
    /// Malformed HTML and non-HTML bodies.
    Markup,
    /// Calendars, ever-deeper paths, session IDs.
    Traps,
}

/// Placeholder in [`Family::entries`] for the never-answering host's URL.
pub const SILENT: &str = "<silent>";

impl Family {
    /// Every family.
    pub const ALL: [Family; 6] = [
        Family::Transport,
        Family::Redirects,
        Family::Politeness,
        Family::Charsets,
        Family::Markup,
        Family::Traps,
    ];

    /// The name in `/family/NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Transport => "transport",
            Family::Redirects => "redirects",
            Family::Politeness => "politeness",
            Family::Charsets => "charsets",
            Family::Markup => "markup",
            Family::Traps => "traps",
        }
    }

    /// The entry URLs (paths) its index links.
    pub fn entries(self) -> &'static [&'static str] {
        match self {
            Family::Transport => &[
                "/slowloris",
                "/endless",
                "/reset",
                "/short-length",
                "/bad-chunked",
                SILENT,
            ],
            Family::Redirects => &["/redirect-loop", "/chain/20"],
            Family::Politeness => &[
                "/429-storm/1",
                "/429-storm/2",
                "/429-storm/3",
                "/503-date",
                "/503-rfc850",
                "/503-asctime",
            ],
            Family::Charsets => &["/wrong-charset", "/lying-meta", "/no-charset"],
            Family::Markup => &["/malformed", "/doc.pdf", "/image.png", "/data.json"],
            Family::Traps => &["/cal/2026/1", "/deep/", "/s?sid=1"],
        }
    }
}

/// What the server noticed beyond the access log.
#[derive(Debug, Default)]
pub struct Counters {
    /// Body bytes `/endless` wrote (all connections).
    pub endless_sent: AtomicU64,
    /// Set when a client hung up on `/endless`.
    pub endless_hung_up: AtomicBool,
    /// Set when a client hung up on `/slowloris`.
    pub slowloris_hung_up: AtomicBool,
    /// Requests of `/503-date` so far.
    pub date_503: AtomicUsize,
    /// Requests of `/503-rfc850` and `/503-asctime` so far.
    pub obsolete_503: [AtomicUsize; 2],
    /// Requests of `/s` so far (the next session ID).
    pub sid: AtomicUsize,
    /// Connections the silent host accepted.
    pub silent_accepted: AtomicUsize,
}

/// A running fault site.
pub struct FaultServer {
    /// `http://127.0.0.1:PORT` of the site.
    pub base: String,
    /// `http://127.0.0.1:PORT2` of the host that accepts and never answers.
    pub silent: String,
    /// Every request to the site, in arrival order (path and query).
    pub log: Log,
    /// Side observations.
    pub counters: Arc<Counters>,
    tasks: Vec<JoinHandle<()>>,
}

struct Shared {
    log: Log,
    counters: Arc<Counters>,
    silent: String,
}

impl FaultServer {
    /// Start both listeners on the current runtime.
    pub async fn start() -> FaultServer {
        let site = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let quiet = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", site.local_addr().unwrap());
        let silent = format!("http://{}", quiet.local_addr().unwrap());
        let log: Log = Arc::default();
        let counters = Arc::new(Counters::default());
        let shared = Arc::new(Shared {
            log: log.clone(),
            counters: counters.clone(),
            silent: silent.clone(),
        });
        let site_task = tokio::spawn(async move {
            // Connection tasks live in the set: aborting this task drops them all.
            let mut conns = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = site.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        conns.spawn(serve(stream, shared.clone()));
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
        });
        let c = counters.clone();
        let quiet_task = tokio::spawn(async move {
            // Holds every connection open, reads nothing, writes nothing.
            let mut held = Vec::new();
            while let Ok((stream, _)) = quiet.accept().await {
                c.silent_accepted.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        FaultServer {
            base,
            silent,
            log,
            counters,
            tasks: vec![site_task, quiet_task],
        }
    }

    /// The full URL of an entry (the silent placeholder becomes the silent host's URL).
    pub fn url(&self, entry: &str) -> String {
        if entry == SILENT {
            format!("{}/silent", self.silent)
        } else {
            format!("{}{entry}", self.base)
        }
    }

    /// Arrival times of requests for exactly `path` (with its query, if any).
    pub fn hits(&self, path: &str) -> Vec<Instant> {
        super::adhoc::hits_of(&self.log, path)
    }

    /// Every request so far.
    pub fn all(&self) -> Vec<Hit> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Read one request head; `None` if the client went away or sent no request line.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > 16 * 1024 {
            return None;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let line = head.lines().next()?;
    let mut parts = line.split_ascii_whitespace();
    let _method = parts.next()?;
    parts.next().map(str::to_owned)
}

/// The head of a response (no `Content-Length` or framing unless in `headers`).
fn head(status: &str, headers: &[(&str, String)]) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    h.into_bytes()
}

/// A complete response with `Content-Length`, then the connection is closed.
async fn respond(
    s: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut all: Vec<(&str, String)> = headers.to_vec();
    all.push(("Content-Length", body.len().to_string()));
    all.push(("Connection", "close".into()));
    let mut bytes = head(status, &all);
    bytes.extend_from_slice(body);
    s.write_all(&bytes).await?;
    s.shutdown().await
}

fn html_type() -> (&'static str, String) {
    ("Content-Type", "text/html; charset=utf-8".into())
}

async fn html(s: &mut TcpStream, body: &str) -> std::io::Result<()> {
    respond(s, "200 OK", &[html_type()], body.as_bytes()).await
}

async fn redirect(s: &mut TcpStream, to: &str) -> std::io::Result<()> {
    respond(
        s,
        "302 Found",
        &[("Location", to.to_string()), html_type()],
        b"moved",
    )
    .await
}

fn index(shared: &Shared, families: &[Family]) -> String {
    let mut page = String::from("<html><head><title>faults</title></head><body>\n");
    for ok in OK_PAGES {
        page.push_str(&format!("<a href=\"{ok}\">{ok}</a>\n"));
    }
    for f in families {
        for e in f.entries() {
            let href = if *e == SILENT {
                format!("{}/silent", shared.silent)
            } else {
                e.to_string()
            };
            page.push_str(&format!("<a href=\"{href}\">{e}</a>\n"));
        }
    }
    page.push_str("</body></html>\n");
    page
}

async fn serve(mut s: TcpStream, shared: Arc<Shared>) {
    let Some(target) = read_head(&mut s).await else {
        return;
    };
    shared.log.lock().unwrap().push(Hit {
        // This raw server reads only the target; the crawler asks it with GET.
        method: "GET".into(),
        path: target.clone(),
        at: Instant::now(),
    });
    let _ = route(&mut s, &target, &shared).await;
}

async fn route(s: &mut TcpStream, target: &str, shared: &Shared) -> std::io::Result<()> {
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let c = &shared.counters;
    match segs.as_slice() {
        [""] => html(s, &index(shared, &Family::ALL)).await,
        ["family", name] => match Family::ALL.iter().find(|f| f.name() == *name) {
            Some(f) => html(s, &index(shared, &[*f])).await,
            None => not_found(s).await,
        },
        ["ok", n] => {
            let n: usize = n.parse().unwrap_or(1);
            let next = n % OK_PAGES.len() + 1;
            html(
                s,
                &format!("<html><title>ok {n}</title><a href=\"/ok/{next}\">next</a></html>"),
            )
            .await
        }
        ["landing", ..] => html(s, "<html><title>landing</title>fine</html>").await,

        // --- transport ---
        ["slowloris"] => {
            s.write_all(&head(
                "200 OK",
                &[html_type(), ("Content-Length", "64".into())],
            ))
            .await?;
            for b in b"<html><title>slow</title>".iter().cycle().take(64) {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if s.write_all(&[*b]).await.is_err() {
                    c.slowloris_hung_up.store(true, Ordering::SeqCst);
                    return Ok(());
                }
            }
            Ok(())
        }
        ["endless"] => {
            s.write_all(&head(
                "200 OK",
                &[html_type(), ("Transfer-Encoding", "chunked".into())],
            ))
            .await?;
            let data = "<p>endless endless endless endless endless endless</p>\n".repeat(80);
            let chunk = format!("{:x}\r\n{data}\r\n", data.len());
            loop {
                if s.write_all(chunk.as_bytes()).await.is_err() {
                    c.endless_hung_up.store(true, Ordering::SeqCst);
                    return Ok(());
                }
                c.endless_sent
                    .fetch_add(data.len() as u64, Ordering::SeqCst);
            }
        }
        ["reset"] => {
            let mut bytes = head(
                "200 OK",
                &[html_type(), ("Content-Length", RESET_ANNOUNCED.to_string())],
            );
            let mut body = b"<html><title>reset</title><p>".to_vec();
            body.resize(RESET_SENT, b'x');
            bytes.extend_from_slice(&body);
            s.write_all(&bytes).await?;
            s.flush().await?;
            // Let the client read the head and the first bytes, so the fault lands in the
            // body; then a real reset (SO_LINGER 0: RST instead of FIN).
            tokio::time::sleep(Duration::from_millis(100)).await;
            s.set_zero_linger()?;
            Ok(())
        }
        ["short-length"] => {
            let mut bytes = head("200 OK", &[html_type(), ("Content-Length", "500".into())]);
            let mut body = b"<html><title>short</title><p>".to_vec();
            body.resize(200, b'y');
            bytes.extend_from_slice(&body);
            s.write_all(&bytes).await?;
            // A clean close (FIN) 300 bytes early.
            s.shutdown().await
        }
        ["bad-chunked"] => {
            let mut bytes = head(
                "200 OK",
                &[html_type(), ("Transfer-Encoding", "chunked".into())],
            );
            // One well-formed chunk, then a chunk size that is not hexadecimal.
            let first = "<html><title>bad</title>";
            bytes.extend_from_slice(format!("{:x}\r\n{first}\r\n", first.len()).as_bytes());
            bytes.extend_from_slice(b"zz\r\n<p>not a chunk size</p>\r\n0\r\n\r\n");
            s.write_all(&bytes).await?;
            s.shutdown().await
        }

        // --- redirects ---
        ["redirect-loop"] => redirect(s, "/redirect-loop/b").await,
        ["redirect-loop", "b"] => redirect(s, "/redirect-loop").await,
        ["chain", n] => match n.parse::<u32>() {
            Ok(0) => html(s, "<html><title>end of chain</title></html>").await,
            Ok(n) => redirect(s, &format!("/chain/{}", n - 1)).await,
            Err(_) => not_found(s).await,
        },

        // --- politeness ---
        ["429-storm", _] => {
            respond(
                s,
                "429 Too Many Requests",
                &[("Retry-After", "1".into())],
                b"slow down",
            )
            .await
        }
        ["503-date"] => {
            if c.date_503.fetch_add(1, Ordering::SeqCst) == 0 {
                // Date and Retry-After from the same clock reading: exactly 1 s apart.
                let now = SystemTime::now();
                respond(
                    s,
                    "503 Service Unavailable",
                    &[
                        ("Date", httpdate::fmt_http_date(now)),
                        (
                            "Retry-After",
                            httpdate::fmt_http_date(now + Duration::from_secs(1)),
                        ),
                    ],
                    b"down for a second",
                )
                .await
            } else {
                html(s, "<html><title>back</title></html>").await
            }
        }

        // The two obsolete HTTP-date forms RFC 9110 says recipients must accept.
        [form @ ("503-rfc850" | "503-asctime")] => {
            let i = usize::from(*form == "503-asctime");
            if c.obsolete_503[i].fetch_add(1, Ordering::SeqCst) == 0 {
                let now = SystemTime::now();
                let then = httpdate::fmt_http_date(now + Duration::from_secs(1));
                let value = if i == 0 {
                    rfc850(&then)
                } else {
                    asctime(&then)
                };
                respond(
                    s,
                    "503 Service Unavailable",
                    &[
                        ("Date", httpdate::fmt_http_date(now)),
                        ("Retry-After", value),
                    ],
                    b"down for a second",
                )
                .await
            } else {
                html(s, "<html><title>back</title></html>").await
            }
        }

        // --- charsets ---
        ["wrong-charset"] => {
            // The header says UTF-8; the bytes are windows-1252.
            let text = format!(
                "<html><head><title>{LATIN_TITLE}</title></head><body>Crème brûlée, à la carte.\
                 <a href=\"/landing/after-wrong-charset\">on</a></body></html>"
            );
            let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&text);
            respond(s, "200 OK", &[html_type()], &bytes).await
        }
        ["lying-meta"] => {
            // The <meta> says Shift_JIS; the bytes are UTF-8; the header names no charset.
            let text = format!(
                "<html><head><meta charset=\"shift_jis\"><title>{LYING_TITLE}</title></head>\
                 <body>Ünïcödé — “quotes” <a href=\"/landing/after-lying-meta\">on</a></body></html>"
            );
            respond(
                s,
                "200 OK",
                &[("Content-Type", "text/html".into())],
                text.as_bytes(),
            )
            .await
        }
        ["no-charset"] => {
            let filler = "Grüße aus Köln, schöne Füße, süße Brötchen, déjà vu. ".repeat(40);
            let text = format!(
                "<html><head><title>{LATIN_TITLE}</title></head><body>{filler}\
                 <a href=\"/landing/after-no-charset\">on</a></body></html>"
            );
            let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&text);
            respond(s, "200 OK", &[("Content-Type", "text/html".into())], &bytes).await
        }

        // --- markup ---
        ["malformed"] => html(s, MALFORMED).await,
        ["doc.pdf"] => {
            respond(
                s,
                "200 OK",
                &[("Content-Type", "application/pdf".into())],
                &pdf_body(),
            )
            .await
        }
        ["image.png"] => {
            respond(
                s,
                "200 OK",
                &[("Content-Type", "image/png".into())],
                &png_body(),
            )
            .await
        }
        ["data.json"] => {
            respond(
                s,
                "200 OK",
                &[("Content-Type", "application/json".into())],
                &json_body(),
            )
            .await
        }

        // --- traps ---
        ["cal", y, m] => {
            let (y, m): (u32, u32) = (y.parse().unwrap_or(2026), m.parse().unwrap_or(1));
            let (ny, nm) = if m >= 12 { (y + 1, 1) } else { (y, m + 1) };
            html(
                s,
                &format!("<html><title>{y}-{m}</title><a href=\"/cal/{ny}/{nm}\">next</a></html>"),
            )
            .await
        }
        ["deep", ..] => {
            html(
                s,
                "<html><title>deeper</title><a href=\"more/\">more</a></html>",
            )
            .await
        }
        ["s"] => {
            let next = c.sid.fetch_add(1, Ordering::SeqCst) + 2;
            html(
                s,
                &format!("<html><title>session</title><a href=\"/s?sid={next}\">again</a></html>"),
            )
            .await
        }
        _ => not_found(s).await,
    }
}

async fn not_found(s: &mut TcpStream) -> std::io::Result<()> {
    respond(s, "404 Not Found", &[html_type()], b"no such fault").await
}

/// Unclosed tags, unquoted attributes, an attribute value spanning lines, links hidden in
/// comments and script strings (never to be followed), an unquoted link (to be followed),
/// and a comment that never closes, swallowing the rest.
pub const MALFORMED: &str = "<html><head><title>Malformed</title>
<body><div class=a id=main><p>unclosed <b>bold <i>italic <span>
<a href=/landing/unquoted class=x>unquoted</a>
<a href=\"/landing/multi
line\">spanning two lines</a>
<!-- <a href=\"/trap-comment\">in a comment</a> -->
<script>var s = '<a href=\"/trap-script\">x</a>'; document.write(\"<a href='/trap-script'>\");</script>
<table><tr><td><a href='/landing/in-table'>cell<td>another
<p>after the script <a href=/landing/after-script>ok</a>
</div></div></span>
<!-- never closed <a href=/trap-unclosed-comment>x</a>
";

/// Keys (`BASE/PATH`) the markup pages must lead to.
pub const MALFORMED_TARGETS: [&str; 4] = [
    "/landing/unquoted",
    "/landing/multiline",
    "/landing/in-table",
    "/landing/after-script",
];

/// The log's paths, for messages.
pub fn paths(log: &Mutex<Vec<Hit>>) -> Vec<String> {
    log.lock().unwrap().iter().map(|h| h.path.clone()).collect()
}

/// "Sun, 06 Nov 1994 08:49:37 GMT" as RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT".
fn rfc850(imf: &str) -> String {
    let p: Vec<&str> = imf.split(' ').collect();
    let day = match p[0].trim_end_matches(',') {
        "Mon" => "Monday",
        "Tue" => "Tuesday",
        "Wed" => "Wednesday",
        "Thu" => "Thursday",
        "Fri" => "Friday",
        "Sat" => "Saturday",
        _ => "Sunday",
    };
    format!("{day}, {}-{}-{} {} GMT", p[1], p[2], &p[3][2..], p[4])
}

/// "Sun, 06 Nov 1994 08:49:37 GMT" as asctime: "Sun Nov  6 08:49:37 1994".
fn asctime(imf: &str) -> String {
    let p: Vec<&str> = imf.split(' ').collect();
    let day: u32 = p[1].parse().unwrap();
    format!(
        "{} {} {day:>2} {} {}",
        p[0].trim_end_matches(','),
        p[2],
        p[4],
        p[3]
    )
}
