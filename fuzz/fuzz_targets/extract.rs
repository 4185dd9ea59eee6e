//! Random HTML fed to the extractor in random chunks: never a panic, and the result does
//! not depend on where the chunks were cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl::internals::{extract, Extractor};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    // The first byte picks the cut points; the rest is the document.
    let (seed, html) = (data[0] as usize, &data[1..]);
    let base = url::Url::parse("https://example.org/dir/page").unwrap();
    let whole = extract(&base, None, html);
    let mut e = Extractor::new(base, None);
    let mut ok = true;
    let mut at = 0;
    let mut step = seed % 7 + 1;
    while at < html.len() && ok {
        let end = (at + step).min(html.len());
        ok = e.write(&html[at..end]).is_ok();
        at = end;
        step = (step * 31 + seed) % 13 + 1;
    }
    if ok {
        if let (Ok(a), Ok(b)) = (whole, e.end()) {
            assert_eq!(a, b, "chunking changed the result");
        }
    }
});
