//! `trawl report`: broken links, redirect chains, depths, top pages, orphans, a summary.

use std::io::Write;
use std::process::ExitCode;

use trawl::store::{OpenMode, SqliteStore};

use crate::cli::ReportArgs;
use crate::exit::exit_for;
use crate::source::readable_blocking;

pub(crate) fn report(args: ReportArgs) -> ExitCode {
    exit_for(run_report(&args), |e| {
        let x = e.downcast_ref::<trawl::report::ReportError>()?;
        Some((x.is_broken_pipe(), x.is_usage()))
    })
}

pub(crate) fn run_report(args: &ReportArgs) -> anyhow::Result<()> {
    use trawl::report::{self, Kind, Options, OutputFormat};
    let kind: Kind = args.kind.parse().map_err(anyhow::Error::msg)?;
    let format: OutputFormat = args.format.parse().map_err(anyhow::Error::msg)?;
    let options = Options {
        format,
        limit: args.limit,
        classes: args.class,
    };
    let readable = readable_blocking(&args.source)?;
    let store = SqliteStore::open(&readable.path, OpenMode::Read)?;
    if let Some(n) = args.generation.generation {
        store.read_generation(n)?;
    }
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    report::run(&store, kind, &options, &mut w)?;
    w.flush().map_err(report::ReportError::from)?;
    Ok(())
}
