//! How the binary ends: its exit codes (documented in `trawl crawl --help` and README.md)
//! and how an error becomes one line on stderr and a code.

use std::process::ExitCode;

/// Done: the crawl finished (or there was nothing to do); the export was written.
pub const SUCCESS: u8 = 0;
/// Something failed while running (the store, the disk, a bug); committed work is safe.
/// Also a crawl in which not one seed could be fetched, and a finished crawl with links of
/// the classes `--fail-on` names (`--fail-on-errors`: broken links and missing fragments).
pub const FAILED: u8 = 1;
/// Bad input: an unusable seed, option, config file or database. Nothing was written.
pub const BAD_INPUT: u8 = 2;
/// Stopped by Ctrl-C or SIGTERM; running the same command resumes.
pub const INTERRUPTED: u8 = 130;

/// Report `e` as one line on stderr (some messages, e.g. a regex error, span several
/// lines) and exit with `code`.
pub(crate) fn fail(code: u8, e: impl std::fmt::Display) -> ExitCode {
    let text = e.to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    eprintln!("trawl: {}", line.join(" "));
    ExitCode::from(code)
}

/// An error and its causes, each cause once: a message often already includes its
/// source's text, and `{:#}` would repeat it.
pub(crate) fn with_causes(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !msg.contains(&text) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&text);
        }
    }
    msg
}

/// The exit of a command that reads a crawl: a reader gone away (`| head`) is success,
/// bad input exits 2, anything else 1. `classify` knows the command's own error type:
/// (broken pipe, bad input).
pub(crate) fn exit_for(
    result: anyhow::Result<()>,
    classify: impl Fn(&anyhow::Error) -> Option<(bool, bool)>,
) -> ExitCode {
    let Err(e) = result else {
        return ExitCode::from(SUCCESS);
    };
    let (broken_pipe, usage) = classify(&e).unwrap_or_else(|| {
        let usage = e
            .downcast_ref::<trawl::store::StoreError>()
            .is_some_and(|s| s.is_usage())
            || e.downcast_ref::<trawl::store::redis::DistError>()
                .is_some_and(|d| d.is_usage());
        (false, usage)
    });
    if broken_pipe {
        return ExitCode::from(SUCCESS);
    }
    fail(if usage { BAD_INPUT } else { FAILED }, with_causes(&e))
}
