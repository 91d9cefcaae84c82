-- Scaling past one process: sharded jobs leased by workers in any number of processes, and
-- rate budgets shared by all of them.

-- Lease tokens come from one sequence, so that a token is never issued twice, even for a shard
-- that was removed and made again when a job's shard set changed.
CREATE SEQUENCE {{table "shard_lease_tokens"}};

-- One row per shard of a sharded job: a range of the first key column, a cursor within it, the
-- job cycle it is on, and a lease. The job's own row in the cursors table counts its completed
-- cycles: shard rows whose cycle is at most that number still have rows to read in the current
-- cycle; a shard that wrapped is one ahead and waits for the others.
CREATE TABLE {{table "shards"}} (
    job                     text NOT NULL,
    shard                   integer NOT NULL,
    lower_bound             jsonb,                  -- inclusive, a one-element JSON array; NULL = open downward
    upper_bound             jsonb,                  -- exclusive; NULL = open upward
    position                jsonb,                  -- key of the last row read, a JSON array; NULL = start
    version                 bigint NOT NULL DEFAULT 0, -- compare-and-set on every advance
    cycle                   bigint NOT NULL DEFAULT 0,
    cycle_started_at        timestamptz NOT NULL DEFAULT now(),
    last_wrapped_at         timestamptz,
    last_batch_at           timestamptz,
    last_batch_scanned      integer NOT NULL DEFAULT 0,
    last_batch_unverifiable integer NOT NULL DEFAULT 0,
    scanned_this_cycle      bigint NOT NULL DEFAULT 0,
    lease_owner             text,
    lease_token             bigint NOT NULL DEFAULT 0, -- fencing token: every write is guarded by it
    lease_until             timestamptz,             -- NULL = not leased
    leases                  bigint NOT NULL DEFAULT 0,
    takeovers               bigint NOT NULL DEFAULT 0, -- claims of a lease that expired unreleased
    PRIMARY KEY (job, shard)
);

-- A sharded job's next cycle may not start before next_cycle_at (its last cycle's completion plus
-- ShardConfig.MinCycleInterval): shards are not leased before then. NULL = no wait.
ALTER TABLE {{table "cursors"}} ADD COLUMN next_cycle_at timestamptz;

-- A token bucket per key (a Stripe account) that workers in every process draw from. tokens is
-- the content as of at, which lies in the future while a rate-limit answer pauses the bucket;
-- a negative content is calls already promised to waiting callers.
CREATE TABLE {{table "rate_budgets"}} (
    key        text PRIMARY KEY,
    tokens     float8 NOT NULL,
    at         timestamptz NOT NULL,
    rate       float8 NOT NULL,
    burst      float8 NOT NULL,
    granted    bigint NOT NULL DEFAULT 0,
    throttles  bigint NOT NULL DEFAULT 0,
    paused_until timestamptz
);
