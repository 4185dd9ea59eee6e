//! The crawl a reading command reads: a `--db` file, or a temporary SQLite copy of a Redis
//! crawl (every format and report then works the same on both).

use std::path::PathBuf;

use crate::cli::Source;

/// The SQLite file a reading command reads: the `--db` file, or a temporary copy of a
/// Redis crawl (removed when dropped).
pub(crate) struct Readable {
    pub(crate) path: PathBuf,
    _copy: Option<tempfile::TempDir>,
}

pub(crate) async fn readable(source: &Source) -> anyhow::Result<Readable> {
    if let Some(local) = local_file(source)? {
        return Ok(local);
    }
    let (Some(store), Some(id)) = (&source.store, &source.crawl_id) else {
        anyhow::bail!("give --db FILE, or --store URL with --crawl-id NAME");
    };
    let dir = tempfile::Builder::new().prefix("trawl-copy").tempdir()?;
    let path = dir.path().join("crawl.db");
    trawl::store::redis::copy::to_sqlite(store, id, &path).await?;
    Ok(Readable {
        path,
        _copy: Some(dir),
    })
}

/// [`readable`] from outside a runtime: a Redis crawl's copy runs on a current-thread one.
pub(crate) fn readable_blocking(source: &Source) -> anyhow::Result<Readable> {
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
    Ok(Some(Readable {
        path: db,
        _copy: None,
    }))
}
