//! The crawl a reading command reads: a `--db` file, or a Redis crawl's results file (a
//! SQLite file like a local crawl's, so every format and report works the same on both).

use std::path::PathBuf;

use crate::cli::Source;

/// The SQLite file a reading command reads: the `--db` file, or a Redis crawl's results
/// file.
pub(crate) struct Readable {
    pub(crate) path: PathBuf,
}

/// A reading command given both `--db` and `--store` is refused: which would it read?
/// (`trawl crawl` takes both: the Redis crawl, and the file it collects into.)
pub(crate) fn only_one(source: &Source) -> anyhow::Result<()> {
    if source.store.is_some() && source.db.is_some() {
        anyhow::bail!("give --db FILE or --store URL with --crawl-id NAME, not both");
    }
    Ok(())
}

pub(crate) async fn readable(source: &Source) -> anyhow::Result<Readable> {
    if let Some(local) = local_file(source)? {
        return Ok(local);
    }
    let (Some(store), Some(id)) = (&source.store, &source.crawl_id) else {
        anyhow::bail!("give --db FILE, or --store URL with --crawl-id NAME");
    };
    let path = trawl::store::redis::copy::results_file(store, id).await?;
    Ok(Readable { path })
}

/// [`readable`] from outside a runtime: a Redis crawl's copy runs on a current-thread one.
pub(crate) fn readable_blocking(source: &Source) -> anyhow::Result<Readable> {
    only_one(source)?;
    if let Some(local) = local_file(source)? {
        return Ok(local);
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(readable(source))
}

/// The `--db` file, when the source is not a Redis crawl.
pub(crate) fn local_file(source: &Source) -> anyhow::Result<Option<Readable>> {
    if source.store.is_some() {
        return Ok(None);
    }
    let db = source
        .db
        .clone()
        .ok_or_else(|| anyhow::anyhow!("give --db FILE, or --store URL with --crawl-id NAME"))?;
    Ok(Some(Readable { path: db }))
}
