-- trawl schema, version 1. Applied once at open; PRAGMA user_version records it.
-- Times are Unix milliseconds. Read it with the sqlite3 shell; see README.md "Schema".

-- One row: what this file is crawling and with which configuration.
CREATE TABLE crawl (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    seeds         TEXT    NOT NULL,  -- JSON array of the seed URLs
    config        TEXT    NOT NULL,  -- TOML of the effective configuration
    trawl_version TEXT    NOT NULL,
    started_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,  -- last commit of the store writer
    finished_at   INTEGER,           -- set when the frontier drained; NULL while unfinished
    running_pid   INTEGER            -- the process crawling now, NULL when none
);

-- Per-host state shared by every URL of the host (host name, plus :port when not default).
CREATE TABLE hosts (
    id   INTEGER PRIMARY KEY,
    name TEXT    NOT NULL UNIQUE
);

-- Every URL trawl has seen: fetched, queued, failed, or skipped with the reason.
CREATE TABLE urls (
    id           INTEGER PRIMARY KEY,
    key          TEXT    NOT NULL,  -- canonical URL: what two spellings of one page share
    url          TEXT,              -- the URL fetched, when it differs from key (else NULL)
    host_id      INTEGER NOT NULL REFERENCES hosts(id),
    depth        INTEGER NOT NULL,  -- clicks from a seed; a redirect keeps its source's depth
    state        INTEGER NOT NULL,  -- 0 queued, 1 done (a response came), 2 failed, 3 skipped
    skip_reason  TEXT,              -- state 3: out-of-scope, excluded, max-depth, ...
    referrer     INTEGER,           -- first page that linked here (urls.id)
    status       INTEGER,           -- HTTP status
    content_type TEXT,
    size         INTEGER,           -- body bytes (decompressed) read or announced
    truncated    INTEGER,           -- 1 when the body passed max-body and was cut
    title        TEXT,
    fetched_at   INTEGER,
    fetch_ms     INTEGER,           -- request start to body end
    error_kind   TEXT,              -- state 2: timeout, connect, redirect-loop, ...
    error        TEXT
);

-- The link graph: one row per link occurrence on a page, and one per redirect hop.
CREATE TABLE edges (
    src      INTEGER NOT NULL,      -- urls.id of the page (or the redirecting URL)
    dst      INTEGER NOT NULL,      -- urls.id of the target
    kind     INTEGER NOT NULL,      -- 0 a, 1 area, 2 link, 3 iframe, 4 frame, 5 redirect, 6 canonical, 7 sitemap
    nofollow INTEGER NOT NULL DEFAULT 0
);

-- Queued URLs the frontier keeps on disk instead of in memory (per-host order by seq).
-- Rebuilt from urls.state = 0 whenever a crawl resumes.
CREATE TABLE spill (
    seq     INTEGER PRIMARY KEY,
    host_id INTEGER NOT NULL,
    url_id  INTEGER NOT NULL
);
CREATE INDEX spill_by_host ON spill(host_id, seq);
