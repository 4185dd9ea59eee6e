//! `trawl diff`: what changed between two generations of a crawl (its arguments live here
//! with it, as `trawl prune`'s do in `prune`).

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use trawl::report::{self, Change, DiffOptions, OutputFormat, ReportError};

use crate::cli::Source;
use crate::exit::exit_for;
use crate::source::readable_blocking;

/// `trawl diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub source: Source,
    /// The earlier generation [default: the one before --to].
    #[arg(long, value_name = "N")]
    pub from: Option<i64>,
    /// The later generation [default: the latest].
    #[arg(long, value_name = "N")]
    pub to: Option<i64>,
    /// Aligned columns for people, or CSV / a JSON array for programs.
    #[arg(long, value_parser = ["table", "csv", "json"], default_value = "table")]
    pub format: String,
    /// At most N rows [default: all].
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Only these kinds of change, comma-separated: added, removed, status, redirect,
    /// changed, title, link-added, link-removed, broken-new, broken-fixed [default: all].
    #[arg(long, value_name = "CHANGES", value_delimiter = ',', value_parser = parse_change)]
    pub change: Vec<Change>,
}

/// The `--generation` of the reading commands: which generation of the file they read.
#[derive(Debug, Args)]
pub struct GenerationArg {
    /// Read generation N of the file (1 is the first crawl, each --refresh adds one;
    /// `trawl status` lists those kept) [default: the latest].
    #[arg(long, value_name = "N")]
    pub generation: Option<i64>,
}

fn parse_change(s: &str) -> Result<Change, String> {
    s.parse()
}

pub(crate) fn diff(args: DiffArgs) -> ExitCode {
    exit_for(run_diff(&args), |e| {
        let x = e.downcast_ref::<ReportError>()?;
        Some((x.is_broken_pipe(), x.is_usage()))
    })
}

fn run_diff(args: &DiffArgs) -> anyhow::Result<()> {
    let options = DiffOptions {
        from: args.from,
        to: args.to,
        format: args
            .format
            .parse::<OutputFormat>()
            .map_err(anyhow::Error::msg)?,
        limit: args.limit,
        changes: (!args.change.is_empty()).then(|| args.change.clone()),
    };
    let readable = readable_blocking(&args.source)?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    report::diff(&readable.path, &options, &mut w)?;
    w.flush().map_err(ReportError::from)?;
    Ok(())
}
