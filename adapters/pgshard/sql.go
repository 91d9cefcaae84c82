package pgshard

import (
	"fmt"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/hosttable"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// rangeSQL holds a sharded job's statements over the host table, built from the store's host
// table pieces (hosttable.Spec), so that they see the rows the store reads.
type rangeSQL struct {
	*hosttable.Spec
	// bounds computes the boundaries of a new shard set: $1 the fractions.
	bounds hosttable.Stmt
	// lag is the lag per shard in one scan: $1 the jobs whose verifications count, $2 the
	// sharded job.
	lag hosttable.Stmt
}

func newRangeSQL(st *hosttable.Spec, t pgstore.Tables) *rangeSQL {
	r := &rangeSQL{Spec: st}
	first := st.Keys[0]
	q := st.Query(1)
	r.bounds = q.Stmt(fmt.Sprintf(`SELECT jsonb_build_array(b)::text FROM unnest((
			SELECT percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY %s) FROM %s AS h%s
		)) AS u(b) WHERE b IS NOT NULL GROUP BY b ORDER BY b`, first, st.Host, q.Where()))
	// The shard of a row: the number of lower bounds at or below its first key.
	bucket := fmt.Sprintf(`width_bucket(%s, coalesce((SELECT array_agg(s.lower_bound ->> 0 ORDER BY s.shard) FROM %s AS s
		WHERE s.job = $2 AND s.shard > 0), '{}')::%s[])`, first, table(t, "shards"), st.KeyTypes[0])
	q = st.Query(2)
	r.lag = q.Stmt(fmt.Sprintf(`SELECT %s, count(*), coalesce(extract(epoch FROM max(%s)), 0)::float8
		FROM %s GROUP BY 1`, bucket, st.LagValue, q.LagFrom()))
	return r
}

// table returns the quoted, schema-qualified name of one of the reconciler's tables.
func table(t pgstore.Tables, name string) string { return pgtables.Name(t.Prefix, t.Schema, name) }

// shardSQL holds the statements on the shards table for one set of tables. Every statement
// that changes a leased shard is guarded by its lease token: a worker whose lease was taken
// over changes nothing.
type shardSQL struct {
	ensureCursor, lockJob, shardCount       string
	claim, renew, release, readShard        string
	advance, wrap, readyToRoll, roll, prune string
	completeCycle, shards, nextCycle        string
}

func newShardSQL(t pgstore.Tables) shardSQL {
	shards, cursors := table(t, "shards"), table(t, "cursors")
	// The identifiers are checked plain names, so quoting them in a literal is safe.
	token := "nextval('" + table(t, "shard_lease_tokens") + "')"
	const fence = ` WHERE job = $1 AND shard = $2 AND lease_token = $3`
	// The job's current cycle is due: its previous cycle completed at least MinCycleInterval ago.
	const cycleDue = `(j.next_cycle_at IS NULL OR j.next_cycle_at <= now())`
	return shardSQL{
		// The job's cursor row records its completed cycles; every shard commit that wraps
		// locks it first, so that exactly one of the last shards to wrap sees them all done.
		ensureCursor: `INSERT INTO ` + cursors + ` (job) VALUES ($1) ON CONFLICT (job) DO NOTHING`,
		lockJob:      `SELECT cycles_completed, position IS NOT NULL FROM ` + cursors + ` WHERE job = $1 FOR UPDATE`,
		shardCount:   `SELECT count(*) FROM ` + shards + ` WHERE job = $1`,
		// A free shard: not yet wrapped in the job's current cycle, that cycle due to start
		// (ShardConfig.MinCycleInterval), and not leased (or its lease expired). The least
		// recently worked goes first, so that work spreads.
		claim: `WITH c AS (
				SELECT s.shard, s.lease_until IS NOT NULL AS expired, coalesce(s.lease_owner, '') AS prev_owner
				FROM ` + shards + ` AS s JOIN ` + cursors + ` AS j ON j.job = s.job
				WHERE s.job = $1 AND s.cycle <= j.cycles_completed AND ` + cycleDue + `
					AND (s.lease_until IS NULL OR s.lease_until <= now())
				ORDER BY s.last_batch_at NULLS FIRST, s.shard
				LIMIT 1
				FOR UPDATE OF s SKIP LOCKED
			)
			UPDATE ` + shards + ` AS s SET lease_owner = $2, lease_token = ` + token + `, lease_until = now() + $3::interval,
				leases = s.leases + 1, takeovers = s.takeovers + c.expired::int
			FROM c WHERE s.job = $1 AND s.shard = c.shard
			RETURNING s.shard, s.lease_token, c.expired, c.prev_owner`,
		renew:   `UPDATE ` + shards + ` SET lease_until = now() + $4::interval` + fence,
		release: `UPDATE ` + shards + ` SET lease_owner = NULL, lease_until = NULL` + fence,
		// The shard's cursor, bounds and cycle, if the lease still holds, and whether the shard
		// is open: not wrapped in the job's current cycle, and that cycle due to start. Its
		// high-water mark counts only in the shard cycle it was fixed in (cycle_end_cycle): a
		// release before migration 005 wraps and rolls shards without clearing it.
		readShard: `SELECT coalesce(s.position::text, ''), s.version, coalesce(s.lower_bound::text, ''), coalesce(s.upper_bound::text, ''),
				s.cycle <= j.cycles_completed AND ` + cycleDue + `,
				coalesce(CASE WHEN s.cycle_end_cycle = s.cycle THEN s.cycle_end::text END, '')
			FROM ` + shards + ` AS s JOIN ` + cursors + ` AS j ON j.job = s.job
			WHERE s.job = $1 AND s.shard = $2 AND s.lease_token = $3`,
		// Compare-and-set on the version read ($4), fenced by the lease token ($3).
		advance: `UPDATE ` + shards + ` SET position = $5::jsonb, version = version + 1, last_batch_at = now(),
				last_batch_scanned = $6::int, last_batch_unverifiable = $7::int, scanned_this_cycle = scanned_this_cycle + $6::int,
				cycle_end = $8::jsonb, cycle_end_cycle = cycle` +
			fence + ` AND version = $4`,
		// A wrap may carry the shard's last rows ($5 scanned, $6 unverifiable).
		wrap: `UPDATE ` + shards + ` SET position = NULL, cycle_end = NULL, cycle_end_cycle = NULL, version = version + 1, cycle = cycle + 1, last_wrapped_at = now(),
				last_batch_at = CASE WHEN $5::int > 0 THEN now() ELSE last_batch_at END,
				last_batch_scanned = CASE WHEN $5::int > 0 THEN $5 ELSE last_batch_scanned END,
				last_batch_unverifiable = CASE WHEN $5::int > 0 THEN $6 ELSE last_batch_unverifiable END,
				scanned_this_cycle = scanned_this_cycle + $5::int` +
			fence + ` AND version = $4`,
		// With the job's cursor row locked: its current cycle, and whether every shard has
		// wrapped in it.
		readyToRoll: `SELECT j.cycles_completed, NOT EXISTS (SELECT 1 FROM ` + shards + ` AS s WHERE s.job = $1 AND s.cycle <= j.cycles_completed),
				EXISTS (SELECT 1 FROM ` + shards + ` AS s WHERE s.job = $1)
			FROM ` + cursors + ` AS j WHERE j.job = $1`,
		// A new shard set for cycle $2, starting $5 from now: shard i gets bounds $3[i], $4[i]
		// (JSON text; NULL is open). Existing shards restart their cursor with a new version,
		// so that a batch read before cannot commit; their lease tokens stay, and only grow.
		roll: `INSERT INTO ` + shards + ` AS s (job, shard, lower_bound, upper_bound, cycle, position, version, cycle_started_at)
			SELECT $1, n::int - 1, lo::jsonb, hi::jsonb, $2, NULL, 0, now() + $5::interval
			FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS b(lo, hi, n)
			ON CONFLICT (job, shard) DO UPDATE SET lower_bound = EXCLUDED.lower_bound, upper_bound = EXCLUDED.upper_bound,
				cycle = EXCLUDED.cycle, position = NULL, cycle_end = NULL, cycle_end_cycle = NULL, version = s.version + 1, cycle_started_at = EXCLUDED.cycle_started_at,
				scanned_this_cycle = 0`,
		prune: `DELETE FROM ` + shards + ` WHERE job = $1 AND shard >= $2`,
		// The next cycle starts $3 from now (ShardConfig.MinCycleInterval): no shard is leased
		// before.
		completeCycle: `UPDATE ` + cursors + ` SET cycles_completed = cycles_completed + 1, last_cycle_completed_at = now(),
				cycle_started_at = now() + $3::interval, next_cycle_at = now() + $3::interval, version = version + 1
			WHERE job = $1 AND cycles_completed = $2`,
		// How long until the job's next cycle may start; no row if it may now.
		nextCycle: `SELECT extract(epoch FROM next_cycle_at - now())::float8 FROM ` + cursors + ` WHERE job = $1 AND next_cycle_at > now()`,
		shards: `SELECT s.shard, coalesce(s.lower_bound::text, ''), coalesce(s.upper_bound::text, ''), coalesce(s.lower_bound ->> 0, ''),
				coalesce(s.position::text, ''), s.version, s.cycle > j.cycles_completed, s.cycle_started_at, s.last_wrapped_at,
				s.last_batch_at, s.last_batch_scanned, s.last_batch_unverifiable, s.scanned_this_cycle,
				coalesce(s.lease_owner, ''), s.lease_until > now(), s.lease_until, s.leases, s.takeovers
			FROM ` + shards + ` AS s JOIN ` + cursors + ` AS j ON j.job = s.job WHERE s.job = $1 ORDER BY s.shard`,
	}
}
