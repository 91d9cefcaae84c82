-- What each batch of a sweep verified, so that Status finds a job's lag without scanning the
-- host table (lagmarks.go). One row per committed batch of the current and the previous cycle:
-- the rows read lie in the key range (lo, hi]; those verified were verified at "at", the others
-- keep their older time, and floor is the earliest last-verified time (or creation) of any of
-- them right after the commit. Marks of older cycles are deleted when a cycle completes.
CREATE TABLE {{table "lag_marks"}} (
    job     text NOT NULL,
    cycle   bigint NOT NULL,          -- the cursor's cycles_completed while the batch ran
    version bigint NOT NULL,          -- the cursor's version after the batch: the batches' order
    lo      jsonb,                    -- the position before the batch; NULL = the cycle's start
    hi      jsonb,                    -- the key of the batch's last row; for the cycle's last batch its high-water mark
    at      timestamptz NOT NULL,     -- the commit's time
    floor   timestamptz NOT NULL,     -- min over the batch's rows of coalesce(last verified, created)
    rows    integer NOT NULL,         -- rows read
    started timestamptz NOT NULL,     -- when the cycle started (-infinity if unknown)
    -- The version of the previous cycle's first mark whose range reaches past hi (past the
    -- last such mark's version if none): Status reads the previous cycle's marks from there
    -- on, without comparing keys. NULL for a cycle's last batch.
    frontier bigint,
    PRIMARY KEY (job, cycle, version)
);
