//! Link checking, the reading side: what a crawled URL or a link's `#fragment` comes to
//! for someone checking a site's links (in CI, mostly). Pure functions over what the crawl
//! stored, so the report that lists links (`report broken`, in every format) and the exit
//! of `trawl crawl --fail-on` judge them the same way.
//!
//! - `class`: [`LinkClass`] (broken, fragment, blocked, transient, redirected), the one
//!   function that classifies a URL's stored result, and sets and counts of classes.
//! - `fragment`: whether a fragment names an element of the target page, as browsers
//!   look for it.

mod class;
mod fragment;

pub(crate) use class::candidates_sql;
pub use class::{classify, ClassCounts, LinkClass, LinkClasses};
pub use fragment::{judge, Fragment, Ids};
