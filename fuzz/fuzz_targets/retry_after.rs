//! Retry-After parsing: never a panic, never a delay past the cap once capped.
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use trawl::internals::{capped, parse_retry_after};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Some(d) = parse_retry_after(s, SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 30)) {
        assert!(capped(d, Duration::from_secs(600)) <= Duration::from_secs(600));
    }
});
