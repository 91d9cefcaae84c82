-- Lanes: steps that start from the external side (a reverse scan of recently created objects,
-- an event log) and record under a sweep's job. One row per (job, lane) holds the feed's
-- position, compare-and-set on version like a cursor.
CREATE TABLE {{table "lanes"}} (
    job              text NOT NULL,
    lane             text NOT NULL,
    position         text NOT NULL DEFAULT '',   -- the feed's own encoding; '' = none yet
    version          bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_run_at      timestamptz,
    last_run_objects integer NOT NULL DEFAULT 0,
    passes_completed bigint NOT NULL DEFAULT 0,   -- steps that reached the feed's end
    last_end_at      timestamptz,
    -- The last restart without replay (a lost or too old checkpoint): the sweep's completed
    -- cycles at that moment tell when a full cycle has covered what the lane did not read.
    gap_at           timestamptz,
    gap_reason       text,
    gap_sweep_cycles bigint,
    -- The last step that failed, so that health reports a lane that keeps failing.
    last_failure_at  timestamptz,
    last_failure     text,
    PRIMARY KEY (job, lane)
);

-- An object only the external system has stays what it is: once a person resolved its
-- missing_locally finding, later passes do not open it again. This index finds resolved ones.
CREATE INDEX {{name "findings_missing_locally"}} ON {{table "findings"}} (job, record_id)
    WHERE kind = 'missing_locally';
