-- trawl schema, version 9: `gen_urls` becomes an ordinary (rowid) table, found by a unique
-- index on (generation, id).
--
-- As a WITHOUT ROWID table its whole rows were the keys of its one B-tree, and a page's
-- `ids` (every id and anchor name on it, often kilobytes) pushed rows onto overflow
-- pages: every lookup by id waded through them, and reading an earlier generation's
-- broken links took three times as long as reading the current one's. The columns stay
-- in `urls` order after `generation`.
CREATE TABLE gen_urls_rowid (
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
    edges_from   INTEGER,
    outlinks     INTEGER
);
INSERT INTO gen_urls_rowid SELECT * FROM gen_urls ORDER BY generation, id;
DROP TABLE gen_urls;
ALTER TABLE gen_urls_rowid RENAME TO gen_urls;
CREATE UNIQUE INDEX gen_urls_by_id ON gen_urls(generation, id);
CREATE INDEX gen_urls_by_key ON gen_urls(generation, key);
