//! robots.txt parsing and matching on hostile input: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl::internals::Robots;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (body, path) = data.split_at(split);
    let robots = Robots::parse(body);
    let path = String::from_utf8_lossy(path.get(1..).unwrap_or(&[]));
    let _ = robots.is_allowed_path("trawl", &format!("/{path}"));
    let _ = robots.crawl_delay("trawl");
    let _ = robots.sitemaps();
    if let Ok(url) = url::Url::parse("https://example.org/").and_then(|b| b.join(&path)) {
        let _ = robots.is_allowed("trawl", &url);
    }
});
