//! `trawl prune`: drop a file's old generations (its arguments live here with it).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use trawl::store::{OpenMode, SqliteStore};

use crate::exit::{exit_for, fail, BAD_INPUT};

/// `trawl prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The crawl's SQLite file (not while a crawl runs in it).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Keep the newest N generations (1: only the current one).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: u64,
}

pub(crate) fn prune(args: PruneArgs) -> ExitCode {
    if !args.db.exists() {
        let shown = args.db.display();
        return fail(
            BAD_INPUT,
            format!("{shown} does not exist; give the --db file of a crawl"),
        );
    }
    exit_for(run_prune(&args), |_| None)
}

fn run_prune(args: &PruneArgs) -> anyhow::Result<()> {
    // Opened as a crawler opens it: the file's lock is taken, so a running crawl is
    // refused, not raced.
    let mut store = SqliteStore::open(&args.db, OpenMode::Crawl)?;
    let keep = usize::try_from(args.keep).unwrap_or(usize::MAX);
    let pruned = store.prune(keep)?;
    let list = |g: &[i64]| {
        let names: Vec<String> = g.iter().map(i64::to_string).collect();
        names.join(", ")
    };
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    match pruned.dropped.is_empty() {
        true => eprintln!(
            "{}: nothing to drop; it keeps generation(s) {}",
            args.db.display(),
            list(&pruned.kept)
        ),
        false => eprintln!(
            "{}: dropped generation(s) {}, kept {}; {:.1} MiB -> {:.1} MiB",
            args.db.display(),
            list(&pruned.dropped),
            list(&pruned.kept),
            mib(pruned.bytes_before),
            mib(pruned.bytes_after)
        ),
    }
    Ok(())
}
