//! Politeness: what trawl asks of each host before fetching from it.
//!
//! Pure parsers only: [`robots`] reads robots.txt. Fetching and scheduling live elsewhere.

pub mod robots;
