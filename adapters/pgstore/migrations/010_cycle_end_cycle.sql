-- The cycle a high-water mark was fixed in: cycles_completed (a shard's cycle) when it was set. A
-- mark of another cycle is ignored: releases before migration 005 end cycles without clearing
-- cycle_end, and during a rolling deploy the mark they leave behind would limit the next cycle.
-- NULL for marks set before this migration, which are ignored too (a new one is fixed).
ALTER TABLE {{table "cursors"}} ADD COLUMN cycle_end_cycle bigint;
ALTER TABLE {{table "shards"}} ADD COLUMN cycle_end_cycle bigint;
