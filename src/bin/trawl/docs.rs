//! `trawl completions` and `trawl man`: the shell completion scripts and the manual pages,
//! made from the command-line definitions.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::exit::{fail, BAD_INPUT, FAILED, SUCCESS};

pub(crate) fn completions(args: CompletionsArgs) -> ExitCode {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "trawl", &mut out);
    ExitCode::from(SUCCESS)
}

pub(crate) fn man(args: ManArgs) -> ExitCode {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    cmd.build();
    let page = match &args.command {
        None => clap_mangen::Man::new(cmd),
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => {
                let title = format!("trawl-{}", sub.get_name());
                clap_mangen::Man::new(sub.clone()).title(title)
            }
            None => {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .map(|c| c.get_name())
                    .filter(|&n| n != "help")
                    .collect();
                return fail(
                    BAD_INPUT,
                    format!("no command `{name}`; the commands are {}", names.join(", ")),
                );
            }
        },
    };
    let page = page.source(format!("trawl {}", env!("CARGO_PKG_VERSION")));
    let mut roff = Vec::new();
    if let Err(e) = page.render(&mut roff) {
        return fail(FAILED, e);
    }
    // A man page opens with its .TH line; clap_mangen puts the definition of the
    // apostrophe string first, which may as well follow it.
    let roff = String::from_utf8_lossy(&roff);
    let mut lines: Vec<&str> = roff.lines().collect();
    if let Some(i) = lines.iter().position(|l| l.starts_with(".TH ")) {
        let th = lines.remove(i);
        lines.insert(0, th);
    }
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", lines.join("\n")).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(FAILED, e),
        _ => ExitCode::from(SUCCESS),
    }
}
