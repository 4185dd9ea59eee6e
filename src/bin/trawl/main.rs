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
