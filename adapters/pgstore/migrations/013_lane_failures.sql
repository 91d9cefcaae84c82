-- A lane's last failed step, kept apart from its row in lanes, as 011 keeps a job's: a step held
-- up by a lock on that row (another session's transaction, a step of the same lane stuck in its
-- commit) fails at its deadline, and its failure must still be recorded, for health, without
-- waiting for the same lock. The lane's last_failure_at and last_failure, which earlier releases
-- write, are still read: Status reports the later one. created_at is when the lane first failed,
-- for a lane that has failed and never committed a step.
CREATE TABLE {{table "lane_failures"}} (
    job        text NOT NULL,
    lane       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    failed_at  timestamptz NOT NULL,
    failure    text NOT NULL,
    PRIMARY KEY (job, lane)
);
