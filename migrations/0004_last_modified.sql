-- trawl schema, version 4: the response's validator, for conditional requests later.

-- The Last-Modified header of the response, as sent (an HTTP-date).
ALTER TABLE urls ADD COLUMN last_modified TEXT;
