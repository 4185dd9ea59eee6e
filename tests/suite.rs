//! The integration tests, one module per file beside this one, in one test binary: the
//! `support` servers, sites and stores are compiled once rather than once per file, and
//! one harness spreads every test over `RUST_TEST_THREADS` (31 binaries took 2 min 48 s
//! to build alone on 2 cores, 2026-12-08). Run one file's tests with
//! `cargo test --test suite <file>::`.

mod support;

mod charset;
mod cli;
mod cli_extra;
mod compression;
mod crawl;
mod discovery;
mod disk_full;
mod events;
mod export_formats;
mod faults;
mod generations;
mod http2;
mod limits;
mod link_check;
mod metrics;
mod politeness;
mod proxy;
mod redis;
mod refresh;
mod report;
mod report_ci;
mod resume;
mod robots_cases;
mod seeds;
mod site_selftest;
mod stress_resume;
mod traps;
mod ui;
mod ui_live;
mod visited_memory;
mod warc;

/// With `autotests = false` a file in `tests/` runs only when it is a module above: one
/// left out would compile and fail nothing, silently.
#[test]
fn every_file_in_tests_is_a_module_of_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let suite = include_str!("suite.rs");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && name != "suite" {
            assert!(
                suite.contains(&format!("\nmod {name};\n")),
                "tests/{name}.rs is not a module of tests/suite.rs: add `mod {name};` there, \
                 or its tests never run"
            );
        }
    }
}
