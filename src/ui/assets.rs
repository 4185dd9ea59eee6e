//! The page: one HTML document with its style and script put in at first use, so a
//! request carrying the token gets everything in one answer (a `<script src>` would not
//! carry it). Plain JavaScript, no build step, nothing fetched from elsewhere.

use std::sync::OnceLock;

const HTML: &str = include_str!("assets/index.html");
const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");

/// The whole page.
pub(super) fn page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        HTML.replacen("/*STYLE*/", STYLE, 1)
            .replacen("/*SCRIPT*/", SCRIPT, 1)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_is_whole_and_small() {
        let page = super::page();
        assert!(!page.contains("/*STYLE*/") && !page.contains("/*SCRIPT*/"));
        assert!(page.contains("name=\"viewport\""));
        assert!(page.len() < 200 * 1024, "{} bytes", page.len());
    }
}
