//! GraphML: the link graph for networkx, igraph, Gephi and yEd.
//!
//! Nodes are URLs (`n{urls.id}`), edges are links. Every attribute is declared with its
//! type in a `<key>`; a missing value (no status for a URL never fetched, no title) has no
//! `<data>` element at all, because readers convert values by the declared type and an
//! empty string is not an int. Nodes are streamed, then edges: GraphML allows edges to
//! name nodes declared earlier or later, but some readers only handle the earlier case.

use std::io::Write;

use super::filter::{EdgeOrder, Filter};
use super::rows::{edge_row, for_each, page_row, PageRow};
use super::xml::write_escaped;
use super::ExportError;
use crate::store::SqliteStore;

/// (id, type) of every node attribute; `attr.name` is the id too, which is what readers
/// name the attribute after.
const NODE_KEYS: [(&str, &str); 7] = [
    ("url", "string"),
    ("status", "int"),
    ("depth", "int"),
    ("state", "string"),
    ("content_type", "string"),
    ("title", "string"),
    ("size", "long"),
];
const EDGE_KEYS: [(&str, &str); 3] = [
    ("kind", "string"),
    ("nofollow", "boolean"),
    ("count", "int"),
];

/// The whole graph: every URL the filter keeps, then every edge between kept URLs.
/// Returns nodes plus edges written.
pub fn graph(
    store: &SqliteStore,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    out.write_all(
        b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" \
xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns \
http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n",
    )?;
    for (id, ty) in NODE_KEYS {
        writeln!(
            out,
            "  <key id=\"{id}\" for=\"node\" attr.name=\"{id}\" attr.type=\"{ty}\"/>"
        )?;
    }
    for (id, ty) in EDGE_KEYS {
        if id == "count" && !filter.collapse {
            continue;
        }
        writeln!(
            out,
            "  <key id=\"{id}\" for=\"edge\" attr.name=\"{id}\" attr.type=\"{ty}\"/>"
        )?;
    }
    out.write_all(b"  <graph id=\"trawl\" edgedefault=\"directed\">\n")?;
    let mut n = for_each(store, &filter.pages_sql(), page_row, |page| {
        node(out, &page)
    })?;
    let collapse = filter.collapse;
    n += for_each(
        store,
        &filter.edges_sql(EdgeOrder::Stored),
        |r| edge_row(r, collapse),
        |e| {
            write!(
                out,
                "    <edge source=\"n{}\" target=\"n{}\"><data key=\"kind\">{}</data><data key=\"nofollow\">{}</data>",
                e.src, e.dst, e.kind, e.nofollow
            )?;
            if let Some(count) = e.count {
                write!(out, "<data key=\"count\">{count}</data>")?;
            }
            out.write_all(b"</edge>\n")?;
            Ok(())
        },
    )?;
    out.write_all(b"  </graph>\n</graphml>\n")?;
    Ok(n)
}

fn node(out: &mut dyn Write, p: &PageRow) -> Result<(), ExportError> {
    write!(out, "    <node id=\"n{}\">", p.id)?;
    text(out, "url", Some(&p.url))?;
    let r = p.result.as_ref();
    if let Some(status) = p.status() {
        write!(out, "<data key=\"status\">{status}</data>")?;
    }
    write!(out, "<data key=\"depth\">{}</data>", p.depth)?;
    text(out, "state", Some(p.state))?;
    text(
        out,
        "content_type",
        r.and_then(|r| r.content_type.as_deref()),
    )?;
    text(out, "title", r.and_then(|r| r.title.as_deref()))?;
    if let Some(size) = r.and_then(|r| r.size) {
        write!(out, "<data key=\"size\">{size}</data>")?;
    }
    out.write_all(b"</node>\n")?;
    Ok(())
}

fn text(out: &mut dyn Write, key: &str, value: Option<&str>) -> Result<(), ExportError> {
    if let Some(v) = value {
        write!(out, "<data key=\"{key}\">")?;
        write_escaped(out, v)?;
        out.write_all(b"</data>")?;
    }
    Ok(())
}
