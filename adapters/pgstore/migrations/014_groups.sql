-- Groups a tie-out step saw (package tieout: a payout and its balance transactions), one row
-- per (job, account, group_id), written in the step's own commit with its findings and its
-- position (reconcile.GroupSink): what each paid against what its lines add up to, and which
-- are seen but not tied out yet (tied_out_at NULL). seq numbers a group when first recorded,
-- for the console's pages (newest first, keyset on seq).
CREATE TABLE {{table "groups"}} (
    seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job            text NOT NULL,
    lane           text NOT NULL,
    account        text NOT NULL,
    group_id       text NOT NULL,
    status         text NOT NULL,
    amount         bigint NOT NULL,
    currency       text NOT NULL,
    itemized       boolean NOT NULL,
    expected       bigint,           -- the members' sum; NULL when not known
    members        integer NOT NULL DEFAULT 0,
    findings       integer NOT NULL DEFAULT 0,
    unmatched      integer NOT NULL DEFAULT 0,
    held           boolean NOT NULL DEFAULT false,
    records        text[] NOT NULL DEFAULT '{}',   -- the findings' record ids
    seen_at        timestamptz NOT NULL DEFAULT now(),
    tied_out_at    timestamptz,      -- NULL: seen, its members not final yet
    UNIQUE (job, account, group_id)
);

-- The console counts and lists a job's groups not tied out, or not holding.
CREATE INDEX {{name "groups_job_seq"}} ON {{table "groups"}} (job, seq);
CREATE INDEX {{name "groups_pending"}} ON {{table "groups"}} (job) WHERE tied_out_at IS NULL;
