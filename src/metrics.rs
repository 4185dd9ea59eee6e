//! Prometheus metrics of a running crawl, served as text on `metrics-addr`.
//!
//! Everything comes from [`Progress`] snapshots (the same counters the progress line
//! shows), rendered on each scrape: nothing is computed unless someone asks.

use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::Response;
use tokio::net::TcpListener;

use crate::live::{Progress, ProgressSnapshot};
use crate::stats::{RunCounts, LATENCY_BUCKETS_MS};

/// Why the metrics endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve metrics on {addr}: {source}; choose another --metrics-addr")]
pub struct MetricsError {
    /// The address asked for.
    pub addr: String,
    /// What the OS said.
    pub source: std::io::Error,
}

/// Bind `addr` and serve `/metrics` (any path, in fact) until `stop` completes. Returns
/// the bound address (useful with port 0) once listening.
pub async fn serve(
    addr: &str,
    progress: Progress,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr, MetricsError> {
    let err = |source| MetricsError {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(err)?;
    let bound = listener.local_addr().map_err(err)?;
    crate::listen::spawn_until(listener, stop, move |_req| {
        let body = render(&progress.snapshot());
        async move {
            Response::builder()
                .header("content-type", "text/plain; version=0.0.4")
                .body(Full::new(Bytes::from(body)))
        }
    });
    Ok(bound)
}

/// The Prometheus text exposition of one snapshot.
pub fn render(s: &ProgressSnapshot) -> String {
    let mut out = String::with_capacity(2048);
    write_pages(&mut out, &s.run);
    for (name, kind, help, value) in counters(&s.run).into_iter().chain(gauges(s)) {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    }
    write_errors(&mut out, &s.run);
    write_latency(&mut out, &s.run);
    out
}

/// A metric of one value: name, type, help, value.
type Simple = (&'static str, &'static str, &'static str, u64);

/// `trawl_pages_total`, by status class and for no response.
fn write_pages(out: &mut String, r: &RunCounts) {
    let _ = writeln!(
        out,
        "# HELP trawl_pages_total URLs fetched this run, by status class.\n# TYPE trawl_pages_total counter"
    );
    for (i, class) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().enumerate() {
        let _ = writeln!(
            out,
            "trawl_pages_total{{class=\"{class}\"}} {}",
            r.by_class[i + 1]
        );
    }
    let no_response = r.pages - r.by_class.iter().sum::<u64>();
    let _ = writeln!(out, "trawl_pages_total{{class=\"none\"}} {no_response}");
}

fn counters(r: &RunCounts) -> [Simple; 7] {
    [
        (
            "trawl_failed_total",
            "counter",
            "URLs that failed (no usable response, loops).",
            r.failed,
        ),
        ("trawl_bytes_total", "counter", "Body bytes read.", r.bytes),
        ("trawl_edges_total", "counter", "Edges recorded.", r.edges),
        (
            "trawl_retries_total",
            "counter",
            "Attempts retried after a transient fault.",
            r.retries,
        ),
        (
            "trawl_host_pauses_total",
            "counter",
            "Hosts paused by a 429 or 503.",
            r.pauses,
        ),
        (
            "trawl_not_modified_total",
            "counter",
            "Refreshed pages answered 304 Not Modified.",
            r.not_modified,
        ),
        (
            "trawl_same_content_total",
            "counter",
            "Refreshed pages answered 200 with the previous content hash.",
            r.same_content,
        ),
    ]
}

fn gauges(s: &ProgressSnapshot) -> [Simple; 7] {
    let f = &s.frontier;
    let v = &s.visited;
    [
        (
            "trawl_fetching",
            "gauge",
            "URLs a worker is fetching now.",
            s.fetching,
        ),
        (
            "trawl_waiting",
            "gauge",
            "URLs taken from the frontier, waiting for a worker.",
            s.waiting,
        ),
        (
            "trawl_queued_memory",
            "gauge",
            "Queued URLs held in memory.",
            f.in_memory as u64,
        ),
        (
            "trawl_queued_disk",
            "gauge",
            "Queued URLs waiting on disk.",
            f.spilled,
        ),
        (
            "trawl_retrying",
            "gauge",
            "URLs waiting for another attempt.",
            f.retrying as u64,
        ),
        (
            "trawl_visited_memory_bytes",
            "gauge",
            "Memory held by the visited set (see visited-memory).",
            v.memory as u64,
        ),
        (
            "trawl_visited_disk",
            "gauge",
            "Visited-set entries moved to disk past visited-memory.",
            v.on_disk as u64,
        ),
    ]
}

/// `trawl_errors_total`, by error kind.
fn write_errors(out: &mut String, r: &RunCounts) {
    let _ = writeln!(
        out,
        "# HELP trawl_errors_total Failures by error kind.\n# TYPE trawl_errors_total counter"
    );
    for (kind, n) in &r.errors {
        let _ = writeln!(out, "trawl_errors_total{{kind=\"{kind}\"}} {n}");
    }
}

/// The `trawl_fetch_duration_seconds` histogram.
fn write_latency(out: &mut String, r: &RunCounts) {
    let _ = writeln!(
        out,
        "# HELP trawl_fetch_duration_seconds Request start to body end.\n# TYPE trawl_fetch_duration_seconds histogram"
    );
    let mut cumulative = 0;
    for (i, le) in LATENCY_BUCKETS_MS.iter().enumerate() {
        cumulative += r.latency[i];
        let _ = writeln!(
            out,
            "trawl_fetch_duration_seconds_bucket{{le=\"{}\"}} {cumulative}",
            *le as f64 / 1000.0
        );
    }
    cumulative += r.latency[LATENCY_BUCKETS_MS.len()];
    let _ = writeln!(
        out,
        "trawl_fetch_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
    );
    let _ = writeln!(
        out,
        "trawl_fetch_duration_seconds_sum {}\ntrawl_fetch_duration_seconds_count {cumulative}",
        r.latency_sum_ms as f64 / 1000.0
    );
}
