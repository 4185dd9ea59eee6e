-- trawl schema, version 5: how far a Redis crawl's results are collected into this file.

-- One row per results stream of a Redis crawl (a host's own, and its part in each
-- shard; `keys::Stream::member` names it): the last entry
-- committed here. The collector reads on from it after any interruption, so each entry is
-- written exactly once. Empty in a local crawl's file.
CREATE TABLE collected (
    stream  TEXT PRIMARY KEY,
    last_id TEXT NOT NULL
);
