//! Politeness: what trawl asks of each host before fetching from it.
//!
//! [`robots`] reads robots.txt, [`retry_after`] reads the `Retry-After` header (both pure
//! parsers), and [`fetch_robots`] fetches a host's robots.txt by RFC 9309's rules. The
//! per-host spacing, pauses and the robots.txt state of each host live in the frontier,
//! which is where dispatch decisions are made.

pub mod fetch_robots;
pub mod retry_after;
pub mod robots;
