-- Coverage (Store.Coverage) buckets a job's rows by how long since they were verified, from the
-- lag marks: a mark's verified rows at first_at, the commit of its first batch (a mark extended
-- by later batches keeps it, so they are counted older, never younger), the others, unverified,
-- at its floor. Both NULL for marks written before this migration: all of such a mark's rows
-- count at its floor.
ALTER TABLE {{table "lag_marks"}} ADD COLUMN unverified integer, ADD COLUMN first_at timestamptz;
-- Coverage's daily samples of open findings read the findings open now (findings_open_detected)
-- and those resolved within the samples' window, each from its index alone.
CREATE INDEX {{name "findings_resolved"}} ON {{table "findings"}} (job, resolved_at) INCLUDE (detected_at)
    WHERE resolved_at IS NOT NULL;
