//! Start a crawl, stop it after N pages, then resume it in the same file: the second run
//! fetches only what the first left queued.
//!
//! ```sh
//! cargo run --example resume -- https://example.org/ 20
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(seed), stop_after) = (args.next(), args.next()) else {
        eprintln!("usage: resume URL [PAGES]");
        std::process::exit(2);
    };
    let stop_after: usize = stop_after.map_or(Ok(10), |n| n.parse())?;
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("site.db");

    // First run: ask for a clean stop once `stop_after` pages are fetched.
    let fetched = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(Notify::new());
    let (f, s) = (Arc::clone(&fetched), Arc::clone(&stop));
    let first = trawl::Crawler::builder()
        .db(&db)
        .seed(&seed)
        .on_page(move |_| {
            if f.fetch_add(1, Ordering::SeqCst) + 1 == stop_after {
                s.notify_one(); // stored as a permit if the crawl is not waiting yet
            }
        })
        .build()?
        .run(async move { stop.notified().await })
        .await?;
    report("first run", &first);

    // Second run: same file, no seed needed; it resumes with the stored configuration.
    let second = trawl::Crawler::builder()
        .db(&db)
        .build()?
        .run(std::future::pending())
        .await?;
    report("second run", &second);
    Ok(())
}

fn report(name: &str, s: &trawl::Summary) {
    println!(
        "{name}: {:?} (resumed: {}), {} pages in {:.1?}, {} URLs known, {} still queued",
        s.outcome, s.resumed, s.run.pages, s.run.elapsed, s.known_urls, s.queued
    );
}
