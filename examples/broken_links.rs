//! Crawl a site into a temporary database, then list its broken links: every URL that
//! failed or answered 4xx/5xx, with the pages linking to it.
//!
//! ```sh
//! cargo run --example broken_links -- https://example.org/
//! ```

use trawl::report::{self, Kind, OutputFormat};
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

    // The same query as `trawl report --db FILE broken`: target, status, error, source, kind.
    let store = SqliteStore::open(&db, OpenMode::Read)?;
    let rows = report::run(
        &store,
        Kind::Broken,
        OutputFormat::Table,
        None,
        &mut std::io::stdout(),
    )?;
    eprintln!("{rows} broken link rows");
    Ok(())
}
