//! Shared support for integration tests: a deterministic generated site ([`site`]) and a
//! local server for it with an access log ([`server`]).
//!
//! Each test binary that says `mod support;` compiles all of this and uses only part of it.
#![allow(dead_code, unused_imports, unused_macros)]

pub mod adhoc;
pub mod backend;
pub mod browser;
pub mod check;
pub mod db;
pub mod editable;
pub mod faults;
pub mod limited;
pub mod redis;
pub mod run;
pub mod server;
pub mod site;
pub mod sitemapped;
pub mod ui;

pub use server::SiteServer;
pub use site::{Expected, ExpectedPage, Site, SiteSpec, NEVER_FETCHED};
