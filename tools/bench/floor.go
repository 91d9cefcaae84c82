package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The SQL floor: the engine bench's database work written by hand as the plainest set-based
// SQL, with no engine around it, so that the bench can say how far the engine is from what the
// database alone costs. A batch is one keyset read and one transaction: the cursor's
// compare-and-set, the observations' upsert, and the findings with their commands in one
// statement, pipelined. It writes the same observations, findings and commands as the engine
// into reconciler tables of its own (pgstore's migrations, so the same indexes), judged by the
// same policy from the same gateway's answers; it leaves out what buys the engine's other guarantees (a
// row deleted or changed since the read, lag marks, Once findings, the commit's time zone, a
// cursor read by another process) and all of the engine's Go around the SQL.

// floorRead is the keyset read: $1 the last id read, $2 the batch size, $3 the grace.
const floorRead = `SELECT id, stripe_payment_intent_id, status, updated_at > now() - $3::interval
	FROM %s WHERE id > $1 ORDER BY id LIMIT $2`

// floorStart creates the job's cursor; floorAdvance moves it to $3 if it is still at version
// $2; floorWrap ends the cycle.
const (
	floorStart   = `INSERT INTO %s (job) VALUES ($1)`
	floorAdvance = `UPDATE %s SET position = jsonb_build_array($3::bigint), version = version + 1,
		last_batch_at = now(), last_batch_scanned = $4 WHERE job = $1 AND version = $2`
	floorWrap = `UPDATE %s SET position = NULL, version = version + 1, cycles_completed = cycles_completed + 1,
		last_cycle_completed_at = now() WHERE job = $1 AND version = $2`
)

// floorObserve upserts the observations: $1 the job, $2 the record ids, $3 their states.
const floorObserve = `INSERT INTO %s (job, record_id, external_state, verified_at)
	SELECT $1, r, e, now() FROM unnest($2::text[], $3::text[]) AS t(r, e)
	ON CONFLICT (job, record_id) DO UPDATE SET external_state = EXCLUDED.external_state, verified_at = EXCLUDED.verified_at`

// floorFindings opens the findings and queues the commands of the new ones: $1 the job, $2 the
// aggregate type, then the findings' columns; the commands' payloads get the finding's id.
const floorFindings = `WITH input AS (
		SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
			AS t(record_id, kind, local_state, external_state, detail, command, external_id, payload)
	), opened AS (
		INSERT INTO %[1]s (job, record_id, kind, local_state, external_state, detail, command, aggregate_type, external_id)
		SELECT $1, record_id, kind, local_state, external_state, detail, command, $2, external_id FROM input
		ON CONFLICT (job, record_id, kind) WHERE resolved_at IS NULL DO NOTHING
		RETURNING id, record_id, kind, command
	)
	INSERT INTO %[2]s (aggregate_type, aggregate_id, event_type, finding_id, payload)
	SELECT $2, o.record_id, o.command, o.id, i.payload::jsonb || jsonb_build_object('finding_id', o.id)
	FROM opened AS o JOIN input AS i ON i.record_id = o.record_id AND i.kind = o.kind WHERE o.command <> ''`

// floorRanges is the table of the floor's ranges variant (-floor-ranges): what a storage
// design recording a batch's in-sync verifications as one row would write instead of an
// observation for each. A row holds the batch's key range, the ids in it that were read but
// not verified (they keep their older time), and the time. Not a design built: a measure of
// the headroom such a design would have over the floor.
const (
	floorRanges = `CREATE TABLE %s (job text NOT NULL, after bigint NOT NULL, upto bigint NOT NULL,
		unverified text[] NOT NULL, verified_at timestamptz NOT NULL, PRIMARY KEY (job, upto))`
	floorRange = `INSERT INTO %s (job, after, upto, unverified, verified_at) VALUES ($1, $2, $3, $4, now())`
)

// floorJob is the floor's job; pgstore's default aggregate type is the table.
const floorJob, floorAggregate = "bench", paymentsTable

// floorCycle runs one cycle of the floor over schema's payments table, batch rows at a time,
// into fresh reconciler tables, and returns its figures. With ranges, a batch's in-sync rows
// are recorded as one row of the floorRanges table instead of an observation each.
func floorCycle(ctx context.Context, pool *pgxpool.Pool, schema string, tables pgstore.Tables, batch int, ranges bool) (cycle, error) {
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		return cycle{}, err
	}
	if ranges {
		if _, err := pool.Exec(ctx, fmt.Sprintf(floorRanges, floorTable(tables, "ranges"))); err != nil {
			return cycle{}, fmt.Errorf("bench: floor: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(floorStart, floorTable(tables, "cursors")), floorJob); err != nil {
		return cycle{}, fmt.Errorf("bench: floor: %w", err)
	}
	return floorSweep(ctx, pool, schema, tables, batch, 0, ranges)
}

// floorNextCycle runs the next cycle of the floor over the tables of one floorCycle has run in,
// where every verified row's observation is an update.
func floorNextCycle(ctx context.Context, pool *pgxpool.Pool, schema string, tables pgstore.Tables, batch int) (cycle, error) {
	var version int64
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT version FROM %s WHERE job = $1`, floorTable(tables, "cursors")), floorJob).Scan(&version); err != nil {
		return cycle{}, fmt.Errorf("bench: floor: %w", err)
	}
	return floorSweep(ctx, pool, schema, tables, batch, version, false)
}

func floorTable(tables pgstore.Tables, name string) string {
	return pgx.Identifier{tables.Schema, tables.Prefix + name}.Sanitize()
}

// floorSweep times one cycle from the start, its cursor at version; ranges as for floorCycle.
func floorSweep(ctx context.Context, pool *pgxpool.Pool, schema string, tables pgstore.Tables, batch int, version int64, ranges bool) (cycle, error) {
	c := cycle{Verdicts: map[string]int{}}
	table := func(name string) string { return floorTable(tables, name) }
	read := fmt.Sprintf(floorRead, pgx.Identifier{schema, paymentsTable}.Sanitize())
	advance, wrap := fmt.Sprintf(floorAdvance, table("cursors")), fmt.Sprintf(floorWrap, table("cursors"))
	observe := fmt.Sprintf(floorObserve, table("observations"))
	findings := fmt.Sprintf(floorFindings, table("findings"), table("outbox"))
	addRange := fmt.Sprintf(floorRange, table("ranges"))
	const job, aggregate = floorJob, floorAggregate
	policy, gw := stripepolicy.PaymentIntentPolicy(), &mixGateway{}
	grace := reconcile.DefaultGrace
	var last int64
	start := time.Now()
	for {
		rows, err := pool.Query(ctx, read, last, batch, grace)
		if err != nil {
			return c, fmt.Errorf("bench: floor: read: %w", err)
		}
		var obsIDs, obsStates, unverified []string
		var f floorFindingCols
		n, after := 0, last
		for rows.Next() {
			var id int64
			var ext, local string
			var recent bool
			if err := rows.Scan(&id, &ext, &local, &recent); err != nil {
				rows.Close()
				return c, fmt.Errorf("bench: floor: read: %w", err)
			}
			n, last = n+1, id
			v, state := floorJudge(ctx, gw, policy, ext, local, recent)
			if c.Verdicts[v.Verdict.String()]++; recent || v.Verdict == reconcile.Unverifiable {
				if ranges {
					unverified = append(unverified, strconv.FormatInt(id, 10))
				}
				continue // not verified
			}
			if ranges && v.Verdict == reconcile.InSync {
				continue // the batch's range row records it
			}
			rid := strconv.FormatInt(id, 10)
			obsIDs, obsStates = append(obsIDs, rid), append(obsStates, state)
			if v.Kind != "" && (v.Verdict == reconcile.Repairable || v.Verdict == reconcile.NeedsReview) {
				f.add(job, rid, ext, local, state, v)
			}
		}
		if err := rows.Err(); err != nil {
			return c, fmt.Errorf("bench: floor: read: %w", err)
		}
		c.Batches++
		// A short read is the cycle's last: its commit ends the cycle, as the engine's does.
		b := &pgx.Batch{}
		if n < batch {
			b.Queue(wrap, job, version)
		} else {
			b.Queue(advance, job, version, last, n)
		}
		if ranges && n > 0 {
			b.Queue(addRange, job, after, last, append([]string{}, unverified...))
		}
		if len(obsIDs) > 0 {
			b.Queue(observe, job, obsIDs, obsStates)
		}
		if len(f.ids) > 0 {
			b.Queue(findings, job, aggregate, f.ids, f.kinds, f.locals, f.externals, f.details, f.commands, f.externalIDs, f.payloads)
		}
		if err := floorCommit(ctx, pool, b); err != nil {
			return c, err
		}
		if version++; n < batch {
			break
		}
	}
	elapsed := time.Since(start)
	scanned := 0
	for _, k := range c.Verdicts {
		scanned += k
	}
	c.Seconds = round(elapsed.Seconds(), 3)
	c.RowsPerS = math.Round(float64(scanned) / elapsed.Seconds())
	c.GatewayCalls = gw.calls.Load()
	var err error
	c.Findings, c.Commands, err = countFindings(ctx, pool, tables)
	return c, err
}

// floorJudge asks gw about the PaymentIntent ext and judges the answer by policy, as the engine
// would: a recent row is InFlight and not asked. It returns the decision and the external state.
func floorJudge(ctx context.Context, gw *mixGateway, policy reconcile.Classifier[string, *stripe.PaymentIntent], ext, local string, recent bool) (reconcile.Decision, string) {
	if recent {
		return reconcile.Decision{Verdict: reconcile.InFlight}, ""
	}
	pi, err := gw.fetch(ctx, ext)
	if err != nil {
		return reconcile.Decision{Verdict: reconcile.Unverifiable}, ""
	}
	return policy.Classify(local, pi), stripepolicy.PaymentIntentState(pi)
}

// floorCommit runs b in one transaction, its first statement the cursor's compare-and-set.
func floorCommit(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("bench: floor: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err == nil && tag.RowsAffected() != 1 {
		err = reconcile.ErrConcurrentRun
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench: floor: write: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("bench: floor: commit: %w", err)
	}
	return nil
}

// floorFindingCols are a batch's findings, column by column, as floorFindings takes them.
type floorFindingCols struct {
	ids, kinds, locals, externals, details, commands, externalIDs []string
	payloads                                                      []*string
}

func (f *floorFindingCols) add(job, id, ext, local, state string, d reconcile.Decision) {
	var payload *string
	if d.Command != "" {
		b, _ := json.Marshal(reconcile.Command{Name: d.Command, Job: job, RecordID: id, Kind: d.Kind, ExpectedLocal: local, External: state})
		p := string(b)
		payload = &p
	}
	f.ids, f.kinds, f.locals, f.externals = append(f.ids, id), append(f.kinds, d.Kind), append(f.locals, local), append(f.externals, state)
	f.details, f.commands, f.externalIDs = append(f.details, d.Detail), append(f.commands, d.Command), append(f.externalIDs, ext)
	f.payloads = append(f.payloads, payload)
}
