//! `trawl status` output: lines for people, or one JSON object.

use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use trawl::status::{State, Status};

/// Write `s` for people.
pub fn text(s: &Status, out: &mut dyn Write) -> std::io::Result<()> {
    let db = s.db.display();
    let pid = s
        .running_pid
        .map(|p| format!(" (pid {p})"))
        .unwrap_or_default();
    match s.state {
        State::NotStarted => writeln!(out, "{db}: no crawl started yet")?,
        State::Running => writeln!(out, "{db}: running{pid}")?,
        State::Finished => writeln!(out, "{db}: finished")?,
        State::Stopped if s.running_pid.is_some() => writeln!(
            out,
            "{db}: stopped, unfinished: the crawl{pid} was killed or crashed; `trawl crawl --db {db}` resumes it"
        )?,
        State::Stopped => writeln!(
            out,
            "{db}: stopped, unfinished; `trawl crawl --db {db}` resumes it"
        )?,
    }
    if s.state == State::NotStarted {
        return Ok(());
    }
    if !s.seeds.is_empty() {
        writeln!(out, "  seeds:    {}", s.seeds.join(" "))?;
    }
    if let (Some(g), true) = (
        s.generation,
        s.generations.len() > 1 || s.generation > Some(1),
    ) {
        let kept: Vec<String> = s.generations.iter().map(i64::to_string).collect();
        writeln!(out, "  generation: {g} (kept: {})", kept.join(", "))?;
    }
    if let Some(t) = s.started_at {
        writeln!(out, "  started:  {}", when(t, s.now))?;
    }
    match s.state {
        State::Finished => {
            if let Some(t) = s.finished_at {
                writeln!(out, "  finished: {}", when(t, s.now))?;
            }
        }
        _ => {
            if let Some(t) = s.updated_at {
                writeln!(out, "  last commit: {}", when(t, s.now))?;
            }
        }
    }
    if let Some(ms) = s.elapsed_ms {
        writeln!(out, "  elapsed:  {}", span(ms))?;
    }
    writeln!(
        out,
        "  URLs:     {} known: {} done, {} failed, {} queued, {} skipped",
        s.known, s.done, s.failed, s.queued, s.skipped
    )?;
    if !s.status_classes.is_empty() {
        writeln!(out, "  status:   {}", counts(&s.status_classes))?;
    }
    if !s.errors.is_empty() {
        writeln!(out, "  errors:   {}", counts(&s.errors))?;
    }
    for seed in &s.failed_seeds {
        writeln!(out, "  seed failed: {}", seed)?;
    }
    match s.recent_rate {
        Some(r) => writeln!(
            out,
            "  rate:     {r:.1} pages/s over the last minute ({} pages)",
            s.recent_pages
        )?,
        None => {
            if let Some(r) = s.average_rate() {
                writeln!(out, "  rate:     {r:.1} pages/s on average")?;
            }
        }
    }
    Ok(())
}

/// Write `s` as one JSON object (times in Unix ms, as in the file).
pub fn json(s: &Status, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, s)?;
    writeln!(out)
}

fn counts(m: &std::collections::BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Unix ms time in UTC, and how long ago.
fn when(ms: i64, now: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    format!(
        "{} ({} ago)",
        humantime::format_rfc3339_seconds(t),
        span(now - ms)
    )
}

/// A duration rounded to the second (to the ms below one second).
fn span(ms: i64) -> String {
    let ms = ms.max(0) as u64;
    let d = if ms >= 1000 {
        Duration::from_secs(ms / 1000)
    } else {
        Duration::from_millis(ms)
    };
    humantime::format_duration(d).to_string()
}

/// `trawl status` of a Redis crawl, for people.
pub fn redis_text(
    s: &trawl::store::redis::status::RedisStatus,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let id = &s.crawl_id;
    match s.state {
        "running" => writeln!(out, "crawl {id:?}: running in {} processes", s.processes.len())?,
        "finished" => writeln!(out, "crawl {id:?}: finished")?,
        _ => writeln!(
            out,
            "crawl {id:?}: stopped, unfinished; `trawl crawl --store ... --crawl-id {id}` resumes it"
        )?,
    }
    let now = trawl::store::now_ms();
    if !s.seeds.is_empty() {
        writeln!(out, "  seeds:    {}", s.seeds.join(" "))?;
    }
    if let Some(t) = s.started_at {
        writeln!(out, "  started:  {}", when(t, now))?;
    }
    if let Some(t) = s.finished_at {
        writeln!(out, "  finished: {}", when(t, now))?;
    }
    let c = &s.counts;
    writeln!(
        out,
        "  urls:     {} known, {} stored, {} queued, {} leased, {} to retry, {} skipped",
        c.known, c.stored, c.queued, c.leased, c.retrying, c.skipped
    )?;
    writeln!(out, "  hosts:    {}", c.hosts)?;
    for seed in &s.failed_seeds {
        writeln!(out, "  seed failed: {seed}")?;
    }
    writeln!(
        out,
        "  processes: {} alive (a heartbeat every 2s)",
        s.processes.len()
    )?;
    for p in &s.processes {
        writeln!(
            out,
            "  process:  {} ({} pages, {} fetching, {} waiting, seen {:.1}s ago)",
            p.id,
            p.pages,
            p.fetching,
            p.waiting,
            p.seen_ms_ago as f64 / 1000.0
        )?;
    }
    Ok(())
}
