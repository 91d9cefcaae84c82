-- Every cycle rewrites each verified row's observation (an upsert's update), so a page needs room
-- for a second version of each of its rows for the update to stay on the page (HOT: no new index
-- entry, the old version pruned on the page): at fillfactor 80 about a quarter of a second
-- cycle's updates were HOT (tools/bench engine -cycles 2, 100,000 rows), at 70 under half, at 50
-- all of them. The table grows to about that size anyway at 80, by the updates that leave the
-- page. Metadata only: it takes a SHARE UPDATE EXCLUSIVE lock, which blocks neither reads nor
-- writes. Pages already written keep their fill until rewritten (VACUUM FULL, CLUSTER); new
-- pages, and tables created from now on, get it.
ALTER TABLE {{table "observations"}} SET (fillfactor = 50);
