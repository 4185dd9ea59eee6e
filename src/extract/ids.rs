//! A page's fragment targets: what a link's `#fragment` may name. Every `id` and every
//! `<a name>` (the HTML standard's "find a potential indicated element"), kept as one
//! newline-separated text, within a per-page cap so a hostile page costs bounded memory.

/// Bytes of ids kept per page. Past it the page's ids are dropped: a fragment on it is
/// then not judged rather than judged against a part of them. The largest pages of the
/// Rust std docs hold about 100 KiB of ids.
pub const MAX_IDS_BYTES: usize = 1 << 20;

/// The fragment targets found so far.
#[derive(Debug, Default)]
pub(super) struct Ids {
    text: String,
    over: bool,
}

impl Ids {
    /// One id or name, entities decoded. Empty values name nothing; a value with a
    /// newline (possible in `name` only) cannot be stored one per line and is left out.
    pub(super) fn push(&mut self, id: &str) {
        if self.over || id.is_empty() || id.contains('\n') {
            return;
        }
        if self.text.len() + id.len() + 1 > MAX_IDS_BYTES {
            self.over = true;
            self.text = String::new();
            return;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(id);
    }

    /// The ids, unless the page went past the cap.
    pub(super) fn finish(self) -> Option<String> {
        (!self.over).then_some(self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Extractor;
    use url::Url;

    fn ids_of(html: &str) -> Option<String> {
        let mut x = Extractor::with_ids(Url::parse("http://a.test/").unwrap(), None);
        x.write(html.as_bytes()).unwrap();
        x.end().unwrap().ids
    }

    #[test]
    fn ids_and_anchor_names() {
        let html = r#"<h1 id="top-1">x</h1><a name="n&amp;m">old</a><p ID=caps>
            <a id="both" name="also" href="/x">y</a><div id="">empty</div>
            <svg><g id="in-svg"/></svg><noscript><p id="hidden"></p></noscript>"#;
        let mut ids: Vec<String> = ids_of(html).unwrap().lines().map(String::from).collect();
        ids.sort();
        // A `<noscript>`'s ids are read too: harmless, a link to one is rare.
        assert_eq!(
            ids,
            ["also", "both", "caps", "hidden", "in-svg", "n&m", "top-1"]
        );
        assert_eq!(ids_of("<p>none</p>").as_deref(), Some(""));
        let plain = Extractor::new(Url::parse("http://a.test/").unwrap(), None);
        assert_eq!(plain.end().unwrap().ids, None, "not asked for");
    }

    #[test]
    fn past_the_cap_no_ids_are_kept() {
        let mut ids = Ids::default();
        let id = "x".repeat(1000);
        for _ in 0..(MAX_IDS_BYTES / 1000 + 1) {
            ids.push(&id);
        }
        assert_eq!(ids.finish(), None);
    }
}
