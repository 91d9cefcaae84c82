-- The reconciler's own tables. Names are rendered with the configured prefix and schema.

-- One cursor per job: where the keyset sweep stands, and when cycles start and complete.
CREATE TABLE {{table "cursors"}} (
    job                     text PRIMARY KEY,
    position                jsonb,                  -- key of the last row read, a JSON array; NULL = cycle start
    version                 bigint NOT NULL DEFAULT 0, -- compare-and-set on every advance
    cycle_started_at        timestamptz NOT NULL DEFAULT now(),
    last_cycle_completed_at timestamptz,
    cycles_completed        bigint NOT NULL DEFAULT 0,
    last_batch_at           timestamptz,
    last_batch_scanned      integer NOT NULL DEFAULT 0,
    last_batch_unverifiable integer NOT NULL DEFAULT 0
);

-- Last confirmed external state per (job, record). Rewritten on every verification, so pages
-- keep room for HOT updates.
CREATE TABLE {{table "observations"}} (
    job            text NOT NULL,
    record_id      text NOT NULL,
    external_state text NOT NULL,
    verified_at    timestamptz NOT NULL,
    PRIMARY KEY (job, record_id)
) WITH (fillfactor = 80);

CREATE TABLE {{table "findings"}} (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job            text NOT NULL,
    record_id      text NOT NULL,
    kind           text NOT NULL,
    local_state    text NOT NULL,
    external_state text NOT NULL DEFAULT '',
    detail         text NOT NULL DEFAULT '',
    command        text NOT NULL DEFAULT '',
    detected_at    timestamptz NOT NULL DEFAULT now(),
    resolved_at    timestamptz,
    resolution     text,
    resolved_by    text,
    CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);

-- At most one open finding per (job, record, kind): the deduplication the engine relies on.
CREATE UNIQUE INDEX {{name "findings_open"}} ON {{table "findings"}} (job, record_id, kind)
    WHERE resolved_at IS NULL;
CREATE INDEX {{name "findings_open_detected"}} ON {{table "findings"}} (job, detected_at)
    WHERE resolved_at IS NULL;

-- Transactional outbox of repair commands, in the seed's columns.
CREATE TABLE {{table "outbox"}} (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    aggregate_type text NOT NULL,
    aggregate_id   text NOT NULL,
    event_type     text NOT NULL,
    payload        jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    processed_at   timestamptz
);
CREATE INDEX {{name "outbox_pending"}} ON {{table "outbox"}} (id) WHERE processed_at IS NULL;
