-- trawl schema, version 2: retries and host pauses.

-- Attempts made for the URL (transient faults are retried); the last error is kept.
ALTER TABLE urls ADD COLUMN attempts INTEGER;

-- A 429 or 503 pauses the host until this Unix ms; honoured again after a restart.
ALTER TABLE hosts ADD COLUMN paused_until INTEGER;

-- The page asked not to be indexed (meta robots or X-Robots-Tag noindex).
ALTER TABLE urls ADD COLUMN noindex INTEGER;
