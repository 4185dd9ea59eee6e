//! The `trawl` binary: parses the command line, runs the library, reports, exits with a
//! documented code. All crawling lives in the library; each subcommand has its file.

mod cli;
mod config;
mod crawl;
mod diff;
mod docs;
mod exit;
mod export;
mod progress;
mod prune;
mod report;
mod serve;
mod source;
mod status;
mod status_view;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use exit::{BAD_INPUT, SUCCESS};

// A crawl makes and drops small strings by the million (a URL, a key, an anchor per link):
// jemalloc's per-thread caches cost less per page than glibc's bins and consolidation
// (BENCHMARKS.md, "The allocator").
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: dirty pages go back to the OS after a second
/// instead of ten, which keeps a crawl's peak RSS near glibc's at the same CPU cost.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] = b"dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { BAD_INPUT } else { SUCCESS };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Crawl(args) => crawl::crawl(*args),
        Command::Export(args) => export::export(args),
        Command::Report(args) => report::report(args),
        Command::Status(args) => status::status(args),
        Command::Diff(args) => diff::diff(args),
        Command::Prune(args) => prune::prune(args),
        Command::Serve(args) => serve::serve(args),
        Command::Config(args) => config::config(*args),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}
