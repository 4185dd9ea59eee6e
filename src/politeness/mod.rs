//! Politeness: what trawl asks of each host before fetching from it.
//!
//! [`robots`] reads robots.txt, [`retry_after`] reads the `Retry-After` header (both pure
//! parsers), and [`fetch_robots`] fetches a host's robots.txt by RFC 9309's rules.
//! [`prepare`] prepares each host once before its first URL (robots.txt, then its
//! sitemaps), and [`hosts`] keeps what this process learnt of each host, which the
//! dispatcher asks for every URL it takes. The per-host spacing and pauses are shared by
//! every process of a crawl, so they live in the store.

pub mod fetch_robots;
pub mod hosts;
pub mod prepare;
pub mod retry_after;
pub mod robots;
