//! A sitemaps.org XML sitemap of the crawled HTML pages that answered 200.
//!
//! The protocol caps one file at 50,000 URLs and 50 MiB; past either, the URLs are split
//! into numbered files with a sitemap index naming them. A split needs files, so standard
//! output only takes a sitemap that fits in one.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::filter::is_html_sql;
use super::rows::sqlite_err;
use super::xml::write_escaped;
use super::ExportError;
use crate::store::SqliteStore;

/// Most URLs one sitemap file may list (sitemaps.org).
pub const MAX_URLS: u64 = 50_000;
/// Largest one sitemap file may be, uncompressed (sitemaps.org).
pub const MAX_BYTES: u64 = 50 * 1024 * 1024;

const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
const FOOT: &str = "</urlset>\n";
const INDEX_HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
const INDEX_FOOT: &str = "</sitemapindex>\n";

fn where_sql() -> String {
    format!(
        "FROM urls WHERE state = 1 AND status = 200 AND {}",
        is_html_sql("content_type")
    )
}

/// What [`to_files`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// URLs listed.
    pub urls: u64,
    /// The sitemap files, in order (one when no split was needed).
    pub files: Vec<PathBuf>,
    /// The index naming them, when split (at the path given).
    pub index: Option<PathBuf>,
}

/// Write the sitemap to `out`, as one file of at most `max_urls` URLs; a larger one is
/// refused before anything is written. Returns the URLs listed.
pub fn to_writer(
    store: &SqliteStore,
    max_urls: u64,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    let err = |e| sqlite_err(store, e);
    // The count and the listing must see the same snapshot while a crawl writes.
    let tx = store.conn().unchecked_transaction().map_err(err)?;
    let count: u64 = tx
        .query_row(&format!("SELECT count(*) {}", where_sql()), [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(err)? as u64;
    if count > max_urls {
        return Err(ExportError::SitemapTooLarge {
            count,
            max: max_urls,
        });
    }
    out.write_all(HEAD.as_bytes())?;
    let mut st = tx
        .prepare(&format!(
            "SELECT coalesce(url, key) {} ORDER BY id",
            where_sql()
        ))
        .map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    let mut n = 0;
    let mut entry = Vec::new();
    while let Some(r) = rows.next().map_err(err)? {
        let loc: String = r.get(0).map_err(err)?;
        url_entry(&mut entry, &loc)?;
        out.write_all(&entry)?;
        n += 1;
    }
    out.write_all(FOOT.as_bytes())?;
    Ok(n)
}

/// Write the sitemap to `path` (`DIR/sitemap.xml`; a directory means `DIR/sitemap.xml`).
/// When it needs more than one file (over `max_urls` URLs or [`MAX_BYTES`]), the parts are
/// `DIR/sitemap-1.xml`, `DIR/sitemap-2.xml`, ... (named after `path`'s stem) and `path`
/// becomes a sitemap index listing them by relative name.
pub fn to_files(store: &SqliteStore, path: &Path, max_urls: u64) -> Result<Written, ExportError> {
    let path = if path.is_dir() {
        path.join("sitemap.xml")
    } else {
        path.to_owned()
    };
    let err = |e| sqlite_err(store, e);
    let mut st = store
        .conn()
        .prepare(&format!(
            "SELECT coalesce(url, key) {} ORDER BY id",
            where_sql()
        ))
        .map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    // The listing streams: the first part is written at `path` itself and only renamed
    // when a second part turns out to be needed, so no count is taken beforehand.
    let mut files = vec![path.clone()];
    let mut part = Part::create(&path)?;
    let mut entry = Vec::new();
    let mut n = 0;
    while let Some(r) = rows.next().map_err(err)? {
        let loc: String = r.get(0).map_err(err)?;
        url_entry(&mut entry, &loc)?;
        let len = entry.len() as u64;
        if part.urls > 0
            && (part.urls >= max_urls || part.bytes + len + FOOT.len() as u64 > MAX_BYTES)
        {
            part.finish()?;
            if files.len() == 1 {
                let first = part_path(&path, 1);
                std::fs::rename(&path, &first)?;
                files[0] = first;
            }
            let next = part_path(&path, files.len() + 1);
            part = Part::create(&next)?;
            files.push(next);
        }
        part.write(&entry)?;
        n += 1;
    }
    part.finish()?;
    let index = if files.len() > 1 {
        write_index(&path, &files)?;
        Some(path)
    } else {
        None
    };
    Ok(Written {
        urls: n,
        files,
        index,
    })
}

/// One `<url>` line for `loc` into `buf` (cleared first).
fn url_entry(buf: &mut Vec<u8>, loc: &str) -> std::io::Result<()> {
    buf.clear();
    buf.extend_from_slice(b"  <url><loc>");
    write_escaped(buf, loc)?;
    buf.extend_from_slice(b"</loc></url>\n");
    Ok(())
}

/// `DIR/STEM-k.EXT` beside `path`.
fn part_path(path: &Path, k: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "sitemap".into(), |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(|| "xml".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-{k}.{ext}"))
}

fn write_index(path: &Path, files: &[PathBuf]) -> Result<(), ExportError> {
    let mut w = BufWriter::new(File::create(path)?);
    w.write_all(INDEX_HEAD.as_bytes())?;
    for f in files {
        let name = f
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        w.write_all(b"  <sitemap><loc>")?;
        write_escaped(&mut w, &name)?;
        w.write_all(b"</loc></sitemap>\n")?;
    }
    w.write_all(INDEX_FOOT.as_bytes())?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

/// One sitemap file being written.
struct Part {
    w: BufWriter<File>,
    urls: u64,
    bytes: u64,
}

impl Part {
    fn create(path: &Path) -> Result<Part, ExportError> {
        let mut w = BufWriter::new(File::create(path)?);
        w.write_all(HEAD.as_bytes())?;
        Ok(Part {
            w,
            urls: 0,
            bytes: HEAD.len() as u64,
        })
    }

    fn write(&mut self, entry: &[u8]) -> Result<(), ExportError> {
        self.w.write_all(entry)?;
        self.urls += 1;
        self.bytes += entry.len() as u64;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), ExportError> {
        self.w.write_all(FOOT.as_bytes())?;
        self.w.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_named_after_the_index() {
        assert_eq!(
            part_path(Path::new("/x/sitemap.xml"), 2),
            Path::new("/x/sitemap-2.xml")
        );
        assert_eq!(
            part_path(Path::new("out/map"), 1),
            Path::new("out/map-1.xml")
        );
    }
}
