package pgstore

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// statements are the store's SQL, built once from the config and the host table's column
// types. Every identifier is quoted; values are always bound parameters. Column types come
// from the catalog (format_type), never from configuration.
type statements struct {
	readCursor, readFirst, readAfter string
	insertCursor, advanceCursor      string
	insertWrapped, wrapCursor        string
	observe, findings                string
	observeTakesJob                  bool
}

func buildStatements(cfg Config, types map[string]string) (*statements, error) {
	t := cfg.Tables
	q := func(c string) string { return "h." + pgx.Identifier{c}.Sanitize() }
	host := pgx.Identifier{cfg.Table}.Sanitize()
	if cfg.Schema != "" {
		host = pgx.Identifier{cfg.Schema, cfg.Table}.Sanitize()
	}

	keys := make([]string, len(cfg.KeyColumns))
	keyText := make([]string, len(cfg.KeyColumns))
	params := make([]string, len(cfg.KeyColumns))
	for i, k := range cfg.KeyColumns {
		keys[i] = q(k)
		keyText[i] = q(k) + "::text"
		// $1 is the grace in seconds and $2 the limit; the cursor values follow.
		params[i] = fmt.Sprintf("$%d::text::%s", i+3, types[k])
	}
	recent := fmt.Sprintf("%s > now() - make_interval(secs => $1::float8)", q(cfg.UpdatedAtColumn))
	if cfg.Observations == ObserveInHostColumns {
		// Our own write to the host row may fire an updated_at trigger; a row whose last change
		// is no later than our last verification (within the tolerance) has not changed since.
		recent = fmt.Sprintf("%s AND NOT coalesce(%s <= %s + make_interval(secs => %f), false)",
			recent, q(cfg.UpdatedAtColumn), q(cfg.VerifiedAtColumn), cfg.OwnWriteTolerance.Seconds())
	}
	sel := fmt.Sprintf("SELECT %s, %s::text, %s::text, %s::text, %s, coalesce(%s, false) FROM %s AS h",
		strings.Join(keyText, ", "), q(cfg.IDColumn), q(cfg.ExternalIDColumn), q(cfg.StateColumn),
		q(cfg.CreatedAtColumn), recent, host)
	order := fmt.Sprintf(" ORDER BY %s LIMIT $2", strings.Join(keys, ", "))

	cursors := t.table("cursors")
	st := &statements{
		readCursor: "SELECT position, version FROM " + cursors + " WHERE job = $1",
		readFirst:  sel + order,
		readAfter:  fmt.Sprintf("%s WHERE (%s) > (%s)%s", sel, strings.Join(keys, ", "), strings.Join(params, ", "), order),

		insertCursor: `INSERT INTO ` + cursors + ` (job, position, version, last_batch_at, last_batch_scanned, last_batch_unverifiable)
			SELECT $1, $3, 1, now(), $4, $5 WHERE $2::bigint = 0
			ON CONFLICT (job) DO NOTHING`,
		advanceCursor: `UPDATE ` + cursors + ` SET position = $3, version = version + 1,
			last_batch_at = now(), last_batch_scanned = $4, last_batch_unverifiable = $5
			WHERE job = $1 AND version = $2`,
		insertWrapped: `INSERT INTO ` + cursors + ` (job, position, version, cycles_completed, last_cycle_completed_at)
			SELECT $1, NULL, 1, 1, now() WHERE $2::bigint = 0
			ON CONFLICT (job) DO NOTHING`,
		wrapCursor: `UPDATE ` + cursors + ` SET position = NULL, version = version + 1,
			cycles_completed = cycles_completed + 1, last_cycle_completed_at = now(), cycle_started_at = now()
			WHERE job = $1 AND version = $2`,

		findings: `WITH input AS (
				SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
					AS t(record_id, kind, local_state, external_state, detail, command)
			), opened AS (
				INSERT INTO ` + t.table("findings") + ` (job, record_id, kind, local_state, external_state, detail, command)
				SELECT $1, record_id, kind, local_state, external_state, detail, command FROM input
				ON CONFLICT (job, record_id, kind) WHERE resolved_at IS NULL DO NOTHING
				RETURNING id, record_id, kind, local_state, external_state, command
			), queued AS (
				INSERT INTO ` + t.table("outbox") + ` (aggregate_type, aggregate_id, event_type, payload)
				SELECT $2, record_id, command, jsonb_build_object('job', $1::text, 'record_id', record_id,
					'finding_id', id, 'kind', kind, 'expected_local_state', local_state, 'external_state', external_state)
				FROM opened WHERE command <> '' ORDER BY id
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM opened), (SELECT count(*) FROM queued)`,
	}
	if cfg.Observations == ObserveInHostColumns {
		st.observe = fmt.Sprintf(`UPDATE %s AS h SET %s = t.e, %s = now()
			FROM unnest($1::text[], $2::text[]) AS t(r, e) WHERE %s = t.r::%s`,
			host, pgx.Identifier{cfg.ObservedColumn}.Sanitize(), pgx.Identifier{cfg.VerifiedAtColumn}.Sanitize(),
			q(cfg.IDColumn), types[cfg.IDColumn])
	} else {
		st.observeTakesJob = true
		st.observe = `INSERT INTO ` + t.table("observations") + ` (job, record_id, external_state, verified_at)
			SELECT $1, r, e, now() FROM unnest($2::text[], $3::text[]) AS t(r, e)
			ON CONFLICT (job, record_id) DO UPDATE
			SET external_state = EXCLUDED.external_state, verified_at = EXCLUDED.verified_at`
	}
	return st, nil
}
