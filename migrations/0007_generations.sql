-- trawl schema, version 7: crawl generations (`trawl crawl --refresh`), HTTP validators and
-- content hashes, so a finished crawl can be asked again with conditional requests and
-- compared with what it found before (`trawl diff`).

-- The generation `urls` and `edges` hold: 1 for a first crawl, one more per `--refresh`.
ALTER TABLE crawl ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;

-- The response's `ETag`, as sent; NULL when there was none. A refresh sends it back as
-- `If-None-Match` (and `last_modified` as `If-Modified-Since`).
ALTER TABLE urls ADD COLUMN etag TEXT;
-- xxh3-128 of the body as read (after Content-Encoding is undone), 32 hex digits; NULL
-- when no body was read. Compares pages across generations without their validators.
ALTER TABLE urls ADD COLUMN content_hash TEXT;
-- In a refresh: 1 when the server answered 304 (the previous generation's record and
-- links carried over, not parsed again), 2 when a 200 came with the same content hash;
-- NULL otherwise (changed, new, or not a refresh).
ALTER TABLE urls ADD COLUMN unchanged INTEGER;

-- Earlier generations, kept by `--refresh` until `trawl prune` drops them.
--
-- `gen_urls`: a copy of `urls` as each generation finished (the same columns, in the same
-- order, after `generation`; a later migration adding a column to `urls` adds it here
-- too). URL rows keep their ids from one generation to the next.
CREATE TABLE gen_urls (
    generation   INTEGER NOT NULL,
    id           INTEGER NOT NULL,
    key          TEXT    NOT NULL,
    url          TEXT,
    host_id      INTEGER NOT NULL,
    depth        INTEGER NOT NULL,
    state        INTEGER NOT NULL,
    skip_reason  TEXT,
    referrer     INTEGER,
    status       INTEGER,
    content_type TEXT,
    size         INTEGER,
    truncated    INTEGER,
    title        TEXT,
    fetched_at   INTEGER,
    fetch_ms     INTEGER,
    error_kind   TEXT,
    error        TEXT,
    attempts     INTEGER,
    noindex      INTEGER,
    last_modified TEXT,
    ids          TEXT,
    checked      INTEGER,
    etag         TEXT,
    content_hash TEXT,
    unchanged    INTEGER,
    PRIMARY KEY (generation, id)
) WITHOUT ROWID;
CREATE INDEX gen_urls_by_key ON gen_urls(generation, key);

-- Edges: generation N's `edges` table itself, renamed `gen_edges_N` (and indexed by `src`)
-- when generation N + 1 began, so keeping a generation's millions of edges copies none.
-- `gen_edges` is a view over every `gen_edges_N` with the generation as its first column,
-- rebuilt whenever one is added or dropped; with none, it is empty.
CREATE VIEW gen_edges AS
    SELECT 0 AS generation, src, dst, kind, nofollow, anchor, fragment, line, col
    FROM edges WHERE 0;

-- When each earlier generation ran (the current one's times are in `crawl`).
CREATE TABLE generations (
    generation  INTEGER PRIMARY KEY,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER
);
