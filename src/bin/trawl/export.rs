//! `trawl export`: the pages or the link graph of a crawl in a format, or a Redis crawl
//! copied into a SQLite file.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use trawl::store::{OpenMode, SqliteStore};

use crate::cli::ExportArgs;
use crate::exit::exit_for;
use crate::source::readable_blocking;

pub(crate) fn export(args: ExportArgs) -> ExitCode {
    exit_for(run_export(&args), |e| {
        let x = e.downcast_ref::<trawl::export::ExportError>()?;
        Some((x.is_broken_pipe(), x.is_usage()))
    })
}

pub(crate) fn run_export(args: &ExportArgs) -> anyhow::Result<()> {
    use trawl::export::{self, Filter, Format};
    let format: Format = args.format.parse().map_err(anyhow::Error::msg)?;
    let what = match &args.what {
        Some(w) => w.parse().map_err(anyhow::Error::msg)?,
        None => format.default_what(),
    };
    let filter = Filter {
        internal_only: args.internal_only,
        collapse: args.collapse,
        status: args
            .status
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?,
    };
    if let Some(to) = &args.to {
        let (store, id) = (
            args.source.store.as_deref().unwrap_or_default(),
            args.source.crawl_id.as_deref().unwrap_or_default(),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let copied = rt.block_on(trawl::store::redis::copy::to_sqlite(store, id, to))?;
        eprintln!(
            "copied crawl {id:?}: {} URLs ({} fetched), {} edges into {}",
            copied.urls,
            copied.pages,
            copied.edges,
            to.display()
        );
        return Ok(());
    }
    // Refused combinations must not leave an empty --out file behind.
    export::check(format, what, &filter)?;
    let readable = readable_blocking(&args.source)?;
    let store = SqliteStore::open(&readable.path, OpenMode::Read)?;
    if let Some(n) = args.generation.generation {
        store.read_generation(n)?;
    }
    let max = args.sitemap_max_urls;
    match (&args.out, format) {
        (Some(path), Format::Sitemap) => {
            export::sitemap_xml::to_files(&store, path, max)?;
        }
        (Some(path), _) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = std::io::BufWriter::new(file);
            export::export(&store, format, what, &filter, &mut w)?;
        }
        (None, Format::Sitemap) => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            export::sitemap_xml::to_writer(&store, max, &mut w)?;
            w.flush().map_err(export::ExportError::from)?;
        }
        (None, _) => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            export::export(&store, format, what, &filter, &mut w)?;
        }
    }
    Ok(())
}
