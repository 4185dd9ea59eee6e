//! URL canonicalisation: never a panic, and canonicalising a key again gives the same key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl::internals::canonical_key;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let base = url::Url::parse("https://example.org/a/b").unwrap();
    let Ok(url) = base.join(s) else { return };
    let key = canonical_key(&url);
    let mut stripped = key.clone();
    trawl::internals::strip_session_ids(&mut stripped);
    if let Ok(again) = url::Url::parse(&key) {
        assert_eq!(canonical_key(&again), key, "not idempotent for {s:?}");
    }
    let mut twice = stripped.clone();
    assert!(!trawl::internals::strip_session_ids(&mut twice) || twice == stripped);
});
