//! Politeness: what trawl asks of each host before fetching from it.
pub mod fetch_robots;
pub mod retry_after;
pub mod robots;
