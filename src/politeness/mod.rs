//! Politeness: what trawl asks of each host before fetching from it.
//!
//! Pure parsers only: [`robots`] reads robots.txt, [`retry_after`] reads the `Retry-After`
//! header. Fetching and scheduling live elsewhere.

pub mod retry_after;
pub mod robots;
