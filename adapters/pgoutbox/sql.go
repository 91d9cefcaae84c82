package pgoutbox

import (
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// dispatchSQL holds the dispatcher's statements for one set of tables. Every statement that
// changes a claimed row is guarded by id AND attempt AND status = 'running': a dispatcher whose
// lease was taken over changes nothing.
type dispatchSQL struct {
	outbox                                               string // the table's quoted name
	claim, complete, renew, release, snooze, retry, bury string
	// lockFinding takes the advisory lock pgstore's commits take on finding $1's record before
	// they open or supersede its findings (the store's per-record lock, in the lock space of the
	// findings table as named, $2); findingResolved then reads whether finding $1 is resolved
	// (HandleCommand, ApplyCommand).
	lockFinding, findingResolved string
	findings                     string // the findings table's quoted name
	// dead lists dead commands after id $1, at most $2; redrive re-drives command $1 for
	// actor $2 (DeadCommands and Redrive, dead.go).
	dead, redrive string
}

func newDispatchSQL(t pgstore.Tables) dispatchSQL {
	outbox := pgtables.Name(t.Prefix, t.Schema, "outbox")
	findings, events := pgtables.Name(t.Prefix, t.Schema, "findings"), pgtables.Name(t.Prefix, t.Schema, "finding_events")
	// appendError keeps the last 20 errors with their attempt and time ($3 is the error).
	const appendError = `errors = (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]') FROM (
			SELECT e, n FROM jsonb_array_elements(errors || jsonb_build_array(jsonb_build_object(
				'attempt', attempt, 'at', now(), 'error', $3::text))) WITH ORDINALITY AS x(e, n)
			ORDER BY n DESC LIMIT 20) last), last_error = $3`
	const fence = ` WHERE id = $1 AND attempt = $2 AND status = 'running'`
	return dispatchSQL{
		outbox: outbox,
		// Ready rows: pending and due, or running with an expired lease (available_at is the
		// lease expiry then). A row waits while an older row of its aggregate is unfinished:
		// it must be its aggregate's oldest unfinished row. (Written as a scalar subquery, not
		// NOT EXISTS: an anti-join planned without statistics, as on a freshly filled outbox,
		// scans the whole index per row.)
		// Taking over an expired lease counts a failure: a handler that crashes its process
		// or hangs past its lease must end dead, not be retried forever.
		claim: `WITH c AS (
				SELECT o.id FROM ` + outbox + ` AS o
				WHERE o.status IN ('pending', 'running') AND o.processed_at IS NULL AND o.available_at <= now()
					AND o.id = (SELECT p.id FROM ` + outbox + ` AS p
						WHERE p.status IN ('pending', 'running') AND p.processed_at IS NULL
							AND p.aggregate_type = o.aggregate_type AND p.aggregate_id = o.aggregate_id
						ORDER BY p.id LIMIT 1)
				ORDER BY o.available_at, o.id
				LIMIT $3
				FOR UPDATE SKIP LOCKED
			)
			UPDATE ` + outbox + ` AS o SET status = 'running', attempt = o.attempt + 1, lease_owner = $1,
				lease_expires_at = now() + $2::interval, available_at = now() + $2::interval,
				failures = o.failures + (o.status = 'running')::int,
				last_error = CASE WHEN o.status = 'running' THEN 'the lease of ' || coalesce(o.lease_owner, '?') || ' expired' ELSE o.last_error END,
				errors = CASE WHEN o.status = 'running' THEN o.errors || jsonb_build_array(jsonb_build_object(
					'attempt', o.attempt, 'at', now(), 'error', 'the lease of ' || coalesce(o.lease_owner, '?') || ' expired'))
					ELSE o.errors END
			FROM c WHERE o.id = c.id
			RETURNING o.id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, coalesce(o.finding_id, 0),
				o.attempt, o.failures, o.created_at`,
		complete: `UPDATE ` + outbox + ` SET status = 'done', processed_at = now(), lease_owner = NULL,
			lease_expires_at = NULL, last_error = NULL` + fence,
		// One statement renews every lease a dispatcher holds; it returns the ones it still holds.
		renew: `UPDATE ` + outbox + ` AS o SET lease_expires_at = now() + $3::interval, available_at = now() + $3::interval
			FROM unnest($1::bigint[], $2::bigint[]) AS l(id, attempt)
			WHERE o.id = l.id AND o.attempt = l.attempt AND o.status = 'running'
			RETURNING o.id`,
		release: `UPDATE ` + outbox + ` SET status = 'pending', available_at = now(), lease_owner = NULL,
			lease_expires_at = NULL, last_error = $3` + fence,
		snooze: `UPDATE ` + outbox + ` SET status = 'pending', available_at = now() + $4::interval, lease_owner = NULL,
			lease_expires_at = NULL, ` + appendError + fence,
		retry: `UPDATE ` + outbox + ` SET status = 'pending', failures = failures + 1, available_at = now() + $4::interval,
			lease_owner = NULL, lease_expires_at = NULL, ` + appendError + fence,
		bury: `UPDATE ` + outbox + ` SET status = 'dead', failures = failures + 1, dead_at = now(), lease_owner = NULL,
			lease_expires_at = NULL, ` + appendError + fence,

		findings: findings,
		lockFinding: `SELECT count(pg_advisory_xact_lock(hashtext($2), hashtext(job || ' ' || record_id))) FROM ` + findings + `
			WHERE id = $1`,
		findingResolved: `SELECT resolved_at IS NOT NULL FROM ` + findings + ` WHERE id = $1`,

		dead: `SELECT id, aggregate_type, aggregate_id, event_type, coalesce(finding_id, 0), failures,
				coalesce(last_error, ''), dead_at, errors
			FROM ` + outbox + ` WHERE status = 'dead' AND id > $1 ORDER BY id LIMIT $2`,
		// A dead command is re-driven only if no younger command of its aggregate is applied
		// or queued; the finding's history records who did it.
		redrive: `WITH cmd AS (
				SELECT id, aggregate_type, aggregate_id, finding_id, status = 'dead' AS dead FROM ` + outbox + ` WHERE id = $1
			), younger AS (
				SELECT EXISTS (SELECT 1 FROM ` + outbox + ` AS y, cmd
					WHERE y.aggregate_type = cmd.aggregate_type AND y.aggregate_id = cmd.aggregate_id
						AND y.id > cmd.id AND y.status <> 'dead') AS found
			), upd AS (
				UPDATE ` + outbox + ` AS o SET status = 'pending', failures = 0, available_at = now(), dead_at = NULL
				FROM cmd, younger WHERE o.id = cmd.id AND o.status = 'dead' AND cmd.dead AND NOT younger.found
				RETURNING o.finding_id
			), ev AS (
				INSERT INTO ` + events + ` (finding_id, action, actor, note)
				SELECT finding_id, 'command redriven', $2, 'command ' || $1::text FROM upd WHERE finding_id IS NOT NULL
			)
			SELECT coalesce((SELECT dead FROM cmd), false), (SELECT found FROM younger), EXISTS (SELECT 1 FROM upd)`,
	}
}
