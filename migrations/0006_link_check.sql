-- trawl schema, version 6: link checking (fragments, where each link is, checked URLs).

-- The link's #fragment as written in the URL (percent-encoded, without the `#`); NULL
-- when the link has none. `trawl report broken` matches it against the target's `ids`.
ALTER TABLE edges ADD COLUMN fragment TEXT;
-- Where the link's element starts in the source page's bytes: line and byte column, both
-- from 1. NULL for edges that no element made (redirects, sitemaps, a Refresh header).
ALTER TABLE edges ADD COLUMN line INTEGER;
ALTER TABLE edges ADD COLUMN col INTEGER;

-- An HTML page's fragment targets: every `id` and every `<a name>`, newline-separated,
-- as written (entities decoded), in no order that matters. NULL when not collected: not HTML,
-- `check-fragments` off, or more than the per-page cap (then no fragment on it is judged).
ALTER TABLE urls ADD COLUMN ids TEXT;
-- 1 when the URL was checked, not crawled: an out-of-scope link under `check-external`
-- (asked with HEAD, then GET when HEAD is refused; its links are not followed). 2 when
-- its answer was kept from an earlier run by `--recrawl` (younger than check-cache-age).
ALTER TABLE urls ADD COLUMN checked INTEGER;
