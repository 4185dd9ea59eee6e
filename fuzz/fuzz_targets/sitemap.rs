//! Sitemap parsing (XML, gzip, plain text) on hostile input: never a panic, never past
//! the size cap.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = trawl::internals::parse_sitemap(data, 1 << 20);
});
