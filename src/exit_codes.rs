//! The binary's exit codes, documented in `trawl crawl --help` and README.md.

/// Done: the crawl finished (or there was nothing to do); the export was written.
pub const SUCCESS: u8 = 0;
/// Something failed while running (the store, the disk, a bug); committed work is safe.
/// Also a finished crawl with URLs that failed or answered 4xx/5xx, under
/// `--fail-on-errors`.
pub const FAILED: u8 = 1;
/// Bad input: an unusable seed, option, config file or database. Nothing was written.
pub const BAD_INPUT: u8 = 2;
/// Stopped by Ctrl-C or SIGTERM; running the same command resumes.
pub const INTERRUPTED: u8 = 130;
