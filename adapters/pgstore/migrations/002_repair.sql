-- The repair path: dispatch state on the outbox, and an append-only audit of finding changes.

-- The last batch that failed, so that health reports it instead of the last good batch.
ALTER TABLE {{table "cursors"}} ADD COLUMN last_failure_at timestamptz, ADD COLUMN last_failure text;

-- Outbox rows keep the seed's columns (a host's own relay may read just those); the dispatcher
-- adds a status, a lease and a fencing token. attempt counts claims and guards every finalize,
-- retry and renew; failures counts the attempts that spent the retry budget. available_at is
-- when the row may next be claimed: the retry time of a pending row, the lease expiry of a
-- running one, so one index serves both.
ALTER TABLE {{table "outbox"}}
    ADD COLUMN finding_id       bigint,
    ADD COLUMN status           text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'done', 'dead')),
    ADD COLUMN attempt          bigint NOT NULL DEFAULT 0,
    ADD COLUMN failures         integer NOT NULL DEFAULT 0,
    ADD COLUMN available_at     timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN lease_owner      text,
    ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN last_error       text,
    ADD COLUMN errors           jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN dead_at          timestamptz;

UPDATE {{table "outbox"}} SET status = 'done' WHERE processed_at IS NOT NULL;
UPDATE {{table "outbox"}} SET finding_id = (payload->>'finding_id')::bigint
    WHERE payload ? 'finding_id' AND jsonb_typeof(payload->'finding_id') = 'number';

-- A host relaying the outbox itself sets processed_at and never status: such rows are finished
-- too, so every predicate of the dispatcher also asks for processed_at IS NULL. The seed's
-- index outbox_pending stays for such relays.
CREATE INDEX {{name "outbox_ready"}} ON {{table "outbox"}} (available_at, id)
    WHERE status IN ('pending', 'running') AND processed_at IS NULL;
-- Per-aggregate order: a command waits while an older one of its aggregate is unfinished.
CREATE INDEX {{name "outbox_aggregate_unfinished"}} ON {{table "outbox"}} (aggregate_type, aggregate_id, id)
    WHERE status IN ('pending', 'running') AND processed_at IS NULL;
-- A queue table churns: vacuum and analyze it far more often than the defaults would, so that
-- dead index entries of finished rows do not slow the claim.
ALTER TABLE {{table "outbox"}} SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
CREATE INDEX {{name "outbox_finding"}} ON {{table "outbox"}} (finding_id);
CREATE INDEX {{name "outbox_dead"}} ON {{table "outbox"}} (id) WHERE status = 'dead';

ALTER TABLE {{table "findings"}} ADD COLUMN resolution_note text,
    -- The outbox aggregate type of the store that found it, so that a webhook resolving "payment
    -- 7" does not resolve another table's record 7.
    ADD COLUMN aggregate_type text;
UPDATE {{table "findings"}} AS f SET aggregate_type = o.aggregate_type
    FROM {{table "outbox"}} AS o WHERE o.finding_id = f.id;
CREATE INDEX {{name "findings_open_id"}} ON {{table "findings"}} (id) WHERE resolved_at IS NULL;
CREATE INDEX {{name "findings_record"}} ON {{table "findings"}} (record_id) WHERE resolved_at IS NULL;

-- Every change of a finding's state, by whom and why. Rows are only ever inserted.
CREATE TABLE {{table "finding_events"}} (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    finding_id bigint NOT NULL REFERENCES {{table "findings"}} (id),
    at         timestamptz NOT NULL DEFAULT now(),
    action     text NOT NULL CHECK (action IN ('resolved', 'reopened', 'command redriven')),
    actor      text NOT NULL,
    resolution text,
    note       text NOT NULL DEFAULT ''
);
CREATE INDEX {{name "finding_events_finding"}} ON {{table "finding_events"}} (finding_id, id);

CREATE FUNCTION {{table "finding_events_append_only"}}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the finding audit is append-only: % is not allowed', TG_OP;
END
$$;
CREATE TRIGGER {{name "finding_events_append_only"}} BEFORE UPDATE OR DELETE ON {{table "finding_events"}}
    FOR EACH ROW EXECUTE FUNCTION {{table "finding_events_append_only"}}();
CREATE TRIGGER {{name "finding_events_no_truncate"}} BEFORE TRUNCATE ON {{table "finding_events"}}
    FOR EACH STATEMENT EXECUTE FUNCTION {{table "finding_events_append_only"}}();
