-- A job's last failed batch, kept apart from its cursor row: a batch held up by a lock on that
-- row (another session's transaction) fails at its deadline, and its failure must still be
-- recorded, for health, without waiting for the same lock. The cursor's last_failure_at and
-- last_failure, which earlier releases write, are still read: Status reports the later one.
CREATE TABLE {{table "failures"}} (
    job       text PRIMARY KEY,
    failed_at timestamptz NOT NULL,
    failure   text NOT NULL
);
