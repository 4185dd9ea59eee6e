-- trawl schema, version 8: where each page's links are in `edges`.
--
-- A page's edges are written in one go, so their rowids are consecutive: `edges_from` is
-- the rowid of its first edge and `outlinks` how many it has (0: none; both NULL: not
-- recorded, as for pages written before this version). A refresh carries a 304 page's
-- links over by that rowid range of the previous generation's edges table, which then
-- needs no index by `src`.
ALTER TABLE urls ADD COLUMN edges_from INTEGER;
ALTER TABLE urls ADD COLUMN outlinks INTEGER;
ALTER TABLE gen_urls ADD COLUMN edges_from INTEGER;
ALTER TABLE gen_urls ADD COLUMN outlinks INTEGER;
