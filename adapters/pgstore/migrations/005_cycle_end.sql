-- A cycle's high-water mark: the key of the last row present when the cycle's first batch was
-- read (a JSON array, as position). A cycle reads no row beyond it, so it ends however fast rows
-- arrive; rows beyond it are the next cycle's. NULL = not yet fixed (the cycle has not started).
ALTER TABLE {{table "cursors"}} ADD COLUMN cycle_end jsonb;
ALTER TABLE {{table "shards"}} ADD COLUMN cycle_end jsonb;
