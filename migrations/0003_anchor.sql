-- trawl schema, version 3: the text of each <a> link.

-- Anchor text of an `a` edge (entities decoded, whitespace collapsed, at most 256 chars).
ALTER TABLE edges ADD COLUMN anchor TEXT;
