//! Crawl a site into a temporary database, then list its links to fix: broken, missing
//! fragments, blocked and transient ones, with the page, line and column of each.
//!
//! ```sh
//! cargo run --example broken_links -- https://example.org/
//! ```

use trawl::report::{self, Kind, Options, OutputFormat};
use trawl::store::{OpenMode, SqliteStore};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(seed) = std::env::args().nth(1) else {
        eprintln!("usage: broken_links URL");
        std::process::exit(2);
    };
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("site.db");

    let summary = trawl::Crawler::builder()
        .db(&db)
        .seed(seed)
        .build()?
        .run(async {
            tokio::signal::ctrl_c().await.ok();
        })
        .await?;
    eprintln!("{} pages crawled", summary.run.pages);

    // The same query as `trawl report --db FILE broken`: target, class, status, error,
    // source, line, column, kind, anchor.
    let store = SqliteStore::open(&db, OpenMode::Read)?;
    let rows = report::run(
        &store,
        Kind::Broken,
        &Options::new(OutputFormat::Table),
        &mut std::io::stdout(),
    )?;
    eprintln!("{rows} broken link rows");
    Ok(())
}
