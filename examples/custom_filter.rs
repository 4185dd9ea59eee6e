//! Crawl only what a closure allows: here, no PDFs and nothing under `/archive/`.
//! Refused URLs are still stored (as skipped, reason `filtered`) with the links to them.
//!
//! ```sh
//! cargo run --example custom_filter -- https://example.org/ site.db
//! ```

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(seed), Some(db)) = (args.next(), args.next()) else {
        eprintln!("usage: custom_filter URL DB");
        std::process::exit(2);
    };
    let summary = trawl::Crawler::builder()
        .db(db)
        .seed(seed)
        .follow_if(|url| !url.path().ends_with(".pdf") && !url.path().starts_with("/archive/"))
        .on_page(|page| println!("{} {:?}", page.url, page.result.status))
        .build()?
        .run(async {
            tokio::signal::ctrl_c().await.ok();
        })
        .await?;
    println!(
        "{:?}: {} pages, {} URLs known",
        summary.outcome, summary.run.pages, summary.known_urls
    );
    Ok(())
}
