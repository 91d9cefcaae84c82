package pgbudget

import (
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// budgetSQL holds a rate budget's statements. Every statement takes the time from
// clock_timestamp(), read only once the bucket's row is locked (or from $n, for tests), so that
// a grant that waited for the lock is computed at the time it is made; now() would be the
// statement's start, before the wait.
type budgetSQL struct {
	create, reserve, throttle, state string
}

func newBudgetSQL(t pgstore.Tables) budgetSQL {
	budgets := pgtables.Name(t.Prefix, t.Schema, "rate_budgets")
	// settled is the bucket's content at now (or at its own time, if that is later: paused),
	// refilled at $2 per second and capped at $3.
	const settled = `CASE WHEN b.at < b.now THEN least($3::float8, b.tokens + $2::float8 * extract(epoch FROM b.now - b.at)::float8)
		ELSE least($3::float8, b.tokens) END`
	// stepped is the bucket's time, no later than now unless a recorded pause lasts: a time
	// past both is one a database clock stepped back from (a failover to a standby whose clock
	// is behind), and would stall every call for the step, reported as a pause.
	const stepped = `least(at, greatest(now, paused_until))`
	return budgetSQL{
		// The bucket is made empty: workers starting together do not begin with a burst.
		create: `INSERT INTO ` + budgets + ` (key, tokens, at, rate, burst) VALUES ($1, 0, coalesce($4::timestamptz, clock_timestamp()), $2, $3)
			ON CONFLICT (key) DO NOTHING`,
		// $1 key, $2 rate, $3 burst, $4 calls, $5 the longest wait acceptable in seconds, $6
		// the time (NULL: the database clock). Call i (from 1) may be made at ahead +
		// max(0, i - avail) / rate seconds from now; k calls are taken, those of the $4 whose
		// time is within $5 (none if the first's is not): a caller's call is not refused
		// because the last of a grant would come after its deadline. first is the first
		// call's wait.
		reserve: `WITH l AS (
				SELECT tokens, at, paused_until FROM ` + budgets + ` WHERE key = $1 FOR UPDATE
			), n AS (
				SELECT tokens, at, paused_until, coalesce($6::timestamptz, clock_timestamp()) AS now FROM l
			), b AS (
				SELECT tokens, ` + stepped + ` AS at, now FROM n
			), c AS (
				SELECT b.now, greatest(b.at, b.now) AS base, ` + settled + ` AS avail FROM b
			), d AS (
				SELECT now, base, avail, extract(epoch FROM base - now)::float8 AS ahead FROM c
			), p AS (
				SELECT now, avail, ahead, base,
					ahead + greatest(0, 1 - avail) / $2::float8 AS first,
					CASE WHEN ahead + greatest(0, $4::int - avail) / $2::float8 <= $5::float8 THEN $4::int
						WHEN ahead > $5::float8 THEN 0
						ELSE least($4::int, greatest(0, floor(avail + ($5::float8 - ahead) * $2::float8)))::int
					END AS k
				FROM d
			)
			UPDATE ` + budgets + ` AS r SET
				tokens = CASE WHEN p.k > 0 THEN p.avail - p.k ELSE r.tokens END,
				at = CASE WHEN p.k > 0 THEN p.base ELSE r.at END,
				granted = r.granted + p.k,
				rate = $2, burst = $3
			FROM p WHERE r.key = $1
			RETURNING p.k, p.now, p.ahead, p.avail, p.first`,
		// $4 the pause in seconds, $5 the time. The bucket is settled, emptied (what is
		// promised stays promised) and pushed to the pause's end.
		throttle: `WITH l AS (
				SELECT tokens, at, paused_until FROM ` + budgets + ` WHERE key = $1 FOR UPDATE
			), n AS (
				SELECT tokens, at, paused_until, coalesce($5::timestamptz, clock_timestamp()) AS now FROM l
			), b AS (
				SELECT tokens, ` + stepped + ` AS at, now FROM n
			)
			UPDATE ` + budgets + ` AS r SET
				tokens = least(0, ` + settled + `),
				at = greatest(b.at, b.now + make_interval(secs => $4::float8)),
				paused_until = greatest(r.paused_until, b.now + make_interval(secs => $4::float8)),
				throttles = r.throttles + 1
			FROM b WHERE r.key = $1`,
		state: `SELECT tokens, at, rate, burst, granted, throttles, paused_until FROM ` + budgets + ` WHERE key = $1`,
	}
}
