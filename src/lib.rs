//! trawl: a site crawler.
pub mod extract;
pub mod link;
pub mod url_norm;
