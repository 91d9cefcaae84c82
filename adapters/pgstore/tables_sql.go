package pgstore

// tableSQL holds the store's statements over the reconciler's own tables alone, built in New
// from Config.Tables: the review API's (review.go), the lanes' (lanes.go) and the status and
// failures of a job (status.go). The statements that read or write the host table depend on
// its columns' types and are built on first use (statements.go).
type tableSQL struct {
	// review.go
	resolveFinding, resolveRecordFindings, reopenFinding, listFindings, countFindings, finding, findingHistory string
	findingSupersedes                                                                                          string
	// lockFinding takes finding $1's record lock, the one commits take before they open or
	// supersede the record's findings (statements.go, lockRecords) and repair deliveries before
	// they apply its command (pgoutbox): a person resolving it takes turns with both.
	lockFinding string
	// lanes.go
	readLane, createLane, advanceLane, laneFailure string
	// status.go
	cursorStatus, recordFailure, lastFailure, laneStatus string
	// coverage.go
	openSamples string
	// groups.go
	commitGroups, listGroups, group, countGroups string
}

func newTableSQL(t Tables) tableSQL {
	return tableSQL{
		lockFinding: `SELECT count(pg_advisory_xact_lock(hashtext($2), hashtext(job || ' ' || record_id))) FROM ` + t.table("findings") + `
			WHERE id = $1`,
		// resolveFinding resolves finding $1 as $2 by $3 with note $4, in its history too; it returns
		// whether the finding exists and whether it was open.
		resolveFinding: `WITH upd AS (
			UPDATE ` + t.table("findings") + ` SET resolved_at = now(), resolution = $2, resolved_by = $3, resolution_note = $4
			WHERE id = $1 AND resolved_at IS NULL RETURNING id
		), ev AS (
			INSERT INTO ` + t.table("finding_events") + ` (finding_id, action, actor, resolution, note)
			SELECT id, 'resolved', $3, $2, $4 FROM upd RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM ` + t.table("findings") + ` WHERE id = $1), EXISTS (SELECT 1 FROM ev)`,
		// resolveRecordFindings resolves the open findings of kinds $2 (none: any) of record $1 of
		// aggregate type $6 (or none), as $3 by $4 with note $5, and returns their ids. It locks
		// them first in the order commits lock a record's findings (lockFindings: by kind, a job
		// at a time), whatever order the update would visit them in: a commit holding one while
		// waiting for another that the webhook holds, waiting for the first, was a deadlock.
		resolveRecordFindings: `WITH locked AS MATERIALIZED (
			SELECT id FROM ` + t.table("findings") + `
			WHERE record_id = $1 AND (aggregate_type = $6 OR aggregate_type IS NULL) AND resolved_at IS NULL
				AND (coalesce(cardinality($2::text[]), 0) = 0 OR kind = ANY($2))
			ORDER BY job, kind FOR NO KEY UPDATE
		), upd AS (
			UPDATE ` + t.table("findings") + ` SET resolved_at = now(), resolution = $3, resolved_by = $4, resolution_note = $5
			WHERE id IN (SELECT id FROM locked) AND resolved_at IS NULL
			RETURNING id
		), ev AS (
			INSERT INTO ` + t.table("finding_events") + ` (finding_id, action, actor, resolution, note)
			SELECT id, 'resolved', $4, $3, $5 FROM upd
		)
		SELECT id FROM upd ORDER BY id`,
		// reopenFinding reopens finding $1 for actor $2 with note $3, unless the same drift has been
		// found again since; it returns whether the finding exists, whether such a newer finding is
		// open, and whether it was reopened.
		reopenFinding: `WITH f AS (
			SELECT id, job, record_id, kind, resolved_at FROM ` + t.table("findings") + ` WHERE id = $1
		), sibling AS (
			SELECT EXISTS (SELECT 1 FROM ` + t.table("findings") + ` AS o, f WHERE o.job = f.job AND o.record_id = f.record_id
				AND o.kind = f.kind AND o.resolved_at IS NULL AND o.id <> f.id) AS found
		), upd AS (
			UPDATE ` + t.table("findings") + ` AS t SET resolved_at = NULL, resolution = NULL, resolved_by = NULL, resolution_note = NULL,
				superseded_by = NULL
			FROM sibling WHERE t.id = $1 AND t.resolved_at IS NOT NULL AND NOT sibling.found RETURNING t.id
		), ev AS (
			INSERT INTO ` + t.table("finding_events") + ` (finding_id, action, actor, note)
			SELECT id, 'reopened', $2, $3 FROM upd RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM f), (SELECT found FROM sibling), EXISTS (SELECT 1 FROM ev)`,
		// listFindings starts ListFindings' statement: the columns of findingColumns ($1 the store's
		// aggregate type) from the findings table, as f; ListFindings adds the WHERE clause of the
		// filters asked for, the order and the limit.
		listFindings: `SELECT ` + findingColumns + ` FROM ` + t.table("findings") + ` AS f`,
		// countFindings starts CountFindings' statement, which adds the same WHERE clause.
		countFindings: `SELECT count(*) FROM ` + t.table("findings") + ` AS f`,
		// finding reads finding $2; $1 is the store's aggregate type (findingColumns).
		finding: `SELECT ` + findingColumns + ` FROM ` + t.table("findings") + ` AS f WHERE f.id = $2`,
		// findingHistory reads the history of finding $1: its events, and its repair commands' states
		// with their failures and last errors.
		findingHistory: `SELECT at, action, actor, coalesce(resolution, ''), note, error, failures FROM (
			SELECT at, action, actor, resolution, note, '' AS error, 0 AS failures, 0 AS src, id FROM ` + t.table("finding_events") + ` WHERE finding_id = $1
			UNION ALL
			SELECT coalesce(processed_at, dead_at, created_at), 'command ' || status, event_type,
				NULL, '', coalesce(last_error, ''), failures, 1, id
			FROM ` + t.table("outbox") + ` WHERE finding_id = $1
		) h ORDER BY at, src, id`,
		// findingSupersedes reads the ids of the findings that finding $1 superseded.
		findingSupersedes: `SELECT id FROM ` + t.table("findings") + ` WHERE superseded_by = $1 ORDER BY id`,
		// readLane reads lane $2 of job $1: its position and version.
		readLane: "SELECT position, version FROM " + t.table("lanes") + " WHERE job = $1 AND lane = $2",
		// createLane creates lane $2 of job $1 at position $3 after a step of $4 objects ($5: the pass
		// ended; $6: a gap's reason, recorded with the sweep's completed cycles at that moment),
		// unless it exists with a version.
		createLane: `INSERT INTO ` + t.table("lanes") + ` AS l (job, lane, position, version, last_run_at, last_run_objects,
				passes_completed, last_end_at, gap_at, gap_reason, gap_sweep_cycles)
			VALUES ($1, $2, $3, 1, now(), $4, CASE WHEN $5 THEN 1 ELSE 0 END, CASE WHEN $5 THEN now() END,
				CASE WHEN $6 <> '' THEN now() END, nullif($6, ''),
				CASE WHEN $6 <> '' THEN coalesce((SELECT cycles_completed FROM ` + t.table("cursors") + ` WHERE job = $1), 0) END)
			ON CONFLICT (job, lane) DO UPDATE SET position = EXCLUDED.position, version = 1, last_run_at = EXCLUDED.last_run_at,
				last_run_objects = EXCLUDED.last_run_objects, passes_completed = EXCLUDED.passes_completed,
				last_end_at = EXCLUDED.last_end_at, gap_at = EXCLUDED.gap_at, gap_reason = EXCLUDED.gap_reason,
				gap_sweep_cycles = EXCLUDED.gap_sweep_cycles
			WHERE l.version = 0`,
		// advanceLane moves lane $2 of job $1 from version $3 to position $4 after a step of $5
		// objects ($6: the pass ended; $7: a gap's reason).
		advanceLane: `UPDATE ` + t.table("lanes") + ` SET position = $4, version = version + 1,
				last_run_at = now(), last_run_objects = $5,
				passes_completed = passes_completed + CASE WHEN $6 THEN 1 ELSE 0 END,
				last_end_at = CASE WHEN $6 THEN now() ELSE last_end_at END,
				gap_at = CASE WHEN $7 <> '' THEN now() ELSE gap_at END,
				gap_reason = CASE WHEN $7 <> '' THEN $7 ELSE gap_reason END,
				gap_sweep_cycles = CASE WHEN $7 <> '' THEN coalesce((SELECT cycles_completed FROM ` + t.table("cursors") + ` WHERE job = $1), 0)
					ELSE gap_sweep_cycles END
			WHERE job = $1 AND lane = $2 AND version = $3`,
		// laneFailure records failure $3 of lane $2 of job $1, apart from the lane's row, whose
		// lock may be what made the step fail (migration 013).
		laneFailure: `INSERT INTO ` + t.table("lane_failures") + ` (job, lane, failed_at, failure) VALUES ($1, $2, now(), $3)
		ON CONFLICT (job, lane) DO UPDATE SET failed_at = EXCLUDED.failed_at, failure = EXCLUDED.failure`,
		// cursorStatus reads the cycle and last batch figures and the last failure of job $1.
		cursorStatus: `SELECT cycle_started_at, last_cycle_completed_at, cycles_completed, last_batch_at,
		last_batch_scanned, last_batch_unverifiable, last_failure_at, last_failure FROM ` + t.table("cursors") + ` WHERE job = $1`,
		// recordFailure records failure $2 of job $1, apart from the job's cursor row, whose lock
		// may be what made the batch fail (migration 010).
		recordFailure: `INSERT INTO ` + t.table("failures") + ` (job, failed_at, failure) VALUES ($1, now(), $2)
		ON CONFLICT (job) DO UPDATE SET failed_at = EXCLUDED.failed_at, failure = EXCLUDED.failure`,
		// lastFailure reads the last failure of job $1 that recordFailure recorded.
		lastFailure: `SELECT failed_at, failure FROM ` + t.table("failures") + ` WHERE job = $1`,
		// laneStatus reads the lanes of job $1, those that have only failed included, each with
		// its later failure: the one laneFailure recorded or the one on its row (earlier
		// releases').
		laneStatus: `SELECT lane, coalesce(l.created_at, f.created_at), l.last_run_at, coalesce(l.passes_completed, 0), l.last_end_at,
			l.gap_at, coalesce(l.gap_reason, ''), l.gap_sweep_cycles,
			CASE WHEN f.failed_at >= l.last_failure_at OR l.last_failure_at IS NULL THEN f.failed_at ELSE l.last_failure_at END,
			coalesce(CASE WHEN f.failed_at >= l.last_failure_at OR l.last_failure_at IS NULL THEN f.failure ELSE l.last_failure END, '')
		FROM (SELECT * FROM ` + t.table("lanes") + ` WHERE job = $1) AS l
			FULL JOIN (SELECT * FROM ` + t.table("lane_failures") + ` WHERE job = $1) AS f USING (job, lane)
		ORDER BY lane`,
		openSamples: openSamplesSQL(t),
		// commitGroups records the groups of jsonb array $3 under job $1 and lane $2: each inserted,
		// or replacing the record of the same group unless it is pending and that one tied out
		// (migration 014). The array holds each group once, sorted, so that two commits lock
		// their groups in one order.
		commitGroups: `INSERT INTO ` + t.table("groups") + ` AS g (job, lane, account, group_id, status, amount, currency,
				itemized, expected, members, findings, unmatched, held, records, seen_at, tied_out_at)
			SELECT $1, $2, r.account, r.id, r.status, r.amount, r.currency, r.itemized, r.expected, r.members, r.findings,
				r.unmatched, r.held, coalesce(r.records, '{}'), now(), CASE WHEN r.tied_out THEN now() END
			FROM jsonb_to_recordset($3::jsonb) AS r(account text, id text, status text, amount bigint, currency text,
				itemized boolean, expected bigint, members integer, findings integer, unmatched integer, held boolean,
				records text[], tied_out boolean)
			ON CONFLICT (job, account, group_id) DO UPDATE SET lane = EXCLUDED.lane, status = EXCLUDED.status,
				amount = EXCLUDED.amount, currency = EXCLUDED.currency, itemized = EXCLUDED.itemized,
				expected = EXCLUDED.expected, members = EXCLUDED.members, findings = EXCLUDED.findings,
				unmatched = EXCLUDED.unmatched, held = EXCLUDED.held, records = EXCLUDED.records,
				seen_at = EXCLUDED.seen_at, tied_out_at = EXCLUDED.tied_out_at
			WHERE EXCLUDED.tied_out_at IS NOT NULL OR g.tied_out_at IS NULL`,
		// listGroups lists the groups of job $1 (any if empty), of jobs $2 (any if none), of
		// account $3 and status $4 (any if empty), in state $5 (reconcile.GroupQuery.State), below
		// seq $6 (any if 0; cast, or `$6 = 0` would type it int4), newest first, $7 of them.
		listGroups: `SELECT ` + groupColumns + ` FROM ` + t.table("groups") + ` WHERE ` + groupFilter + `
			AND CASE $5 WHEN 'pending' THEN tied_out_at IS NULL
				WHEN 'held' THEN tied_out_at IS NOT NULL AND held AND findings = 0
				WHEN 'not_held' THEN tied_out_at IS NOT NULL AND (NOT held OR findings > 0)
				ELSE true END
			AND ($6::bigint = 0 OR seq < $6::bigint)
			ORDER BY seq DESC LIMIT $7`,
		// group reads the group numbered $1.
		group: `SELECT ` + groupColumns + ` FROM ` + t.table("groups") + ` WHERE seq = $1`,
		// countGroups counts listGroups' groups ($1 to $4), by state.
		countGroups: `SELECT count(*), count(*) FILTER (WHERE tied_out_at IS NULL),
				count(*) FILTER (WHERE tied_out_at IS NOT NULL AND (NOT held OR findings > 0))
			FROM ` + t.table("groups") + ` WHERE ` + groupFilter,
	}
}

// groupColumns are the columns scanned into a reconcile.GroupRecord (groups.go, scanGroup).
const groupColumns = `seq, job, lane, account, group_id, status, amount, currency, itemized, expected, members, findings,
	unmatched, held, records, seen_at, tied_out_at`

// groupFilter selects groups by job $1, jobs $2, account $3 and status $4, each if set.
const groupFilter = `($1 = '' OR job = $1) AND (coalesce(cardinality($2::text[]), 0) = 0 OR job = ANY($2))
	AND ($3 = '' OR account = $3) AND ($4 = '' OR status = $4)`
