package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
)

// Commit writes observations, findings and repair commands and advances the cursor in one
// transaction, pipelined in one round trip. If the cursor moved since the read it rolls back
// and returns reconcile.ErrConcurrentRun.
func (s *Store[L]) Commit(ctx context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	var res reconcile.CommitResult
	st, err := s.statements(ctx)
	if err != nil {
		return res, err
	}
	if !c.Wrap {
		if err := s.checkPosition(c.Next); err != nil {
			return res, fmt.Errorf("pgstore: commit: %w", err)
		}
	}
	batch := &pgx.Batch{}
	if c.Wrap {
		batch.Queue(st.wrap, c.Job, c.Cursor.Version, len(c.Outcomes), c.Unverifiable())
	} else {
		batch.Queue(st.advance, c.Job, c.Cursor.Version, c.Next, len(c.Outcomes), c.Unverifiable(), nullIfEmpty(c.Cursor.End))
	}
	var changed []string
	dl := s.queueResults(batch, st, c.Job, c.Outcomes, &res, &changed)
	after := dl.run
	if s.lagMarksApply() {
		s.queueLagMark(batch, st, c)
		after = func(ctx context.Context, tx pgx.Tx) error {
			if err := s.fixLagMark(ctx, tx, st, c, changed); err != nil {
				return err
			}
			return dl.run(ctx, tx)
		}
	}
	if c.Wrap {
		// The cycle is complete: close the findings of rows it showed gone.
		batch.Queue(st.forgetDeleted, c.Job, reconcile.ResolvedByReconciler, forgetNote)
	}

	if err := s.sendFenced(ctx, batch, "commit", after); err != nil {
		s.setHint(c.Job, nil)
		return reconcile.CommitResult{}, err
	}
	// Where the cursor now is, as the next read will find it unless another process moves it.
	if c.Wrap {
		s.setHint(c.Job, nil)
	} else {
		s.setHint(c.Job, &reconcile.Cursor{Position: c.Next, Version: c.Cursor.Version + 1, End: c.Cursor.End})
	}
	return res, nil
}

// setTimeZone sets the transaction's TimeZone to $1, until it ends, and turns explicit sorts
// (and JIT compilation) off for the planning of the statements that follow, until
// restoreSorts: their lookups of a record's open findings (lockFindings, the findings
// statement's open_now), which must return them in the order they are locked, are then planned
// on the findings_open index, which gives that order, rather than on whichever partial index of
// the findings table is smallest: until the table is first vacuumed or analyzed (it is created
// empty) the planner believes every one of them empty, and a plan made then scanned every open
// finding of the job for each record, a cost that grew with the findings (a batch of 1,000
// rows took 0.2 s where it takes 10 ms). A sort that cannot be avoided is still made: it then
// costs the planner enough to compile the statement, hence JIT off.
const setTimeZone = `SELECT set_config('TimeZone', $1, true),
	set_config('reconcile.enable_sort', current_setting('enable_sort'), true), set_config('enable_sort', 'off', true),
	set_config('reconcile.jit', current_setting('jit'), true), set_config('jit', 'off', true)`

// restoreSorts gives enable_sort and jit back the values setTimeZone found.
const restoreSorts = `SELECT set_config('enable_sort', current_setting('reconcile.enable_sort'), true),
	set_config('jit', current_setting('reconcile.jit'), true)`

// forgetNote is the note on findings closed because their row was deleted.
const forgetNote = "the row no longer exists; closed when the cycle completed"

// queueResults queues the observations, findings and repair commands of outcomes and the
// closing of the findings verified judgments no longer describe, each for the rows as they
// were read (see reconcile.Sink); res receives what the findings statement added, and changed
// (if not nil) the ids of the rows changed since their read. The delivery it returns (nil
// without Config.Deliver) is to be run in the same transaction once the batch is read.
func (s *Store[L]) queueResults(batch *pgx.Batch, st *statements, job string, outcomes []reconcile.Outcome, res *reconcile.CommitResult,
	changed *[]string) *delivery {
	// In record order, whoever commits: a sweep and a lane writing the same rows at once then
	// lock them in the same order and cannot deadlock.
	outcomes = slices.SortedStableFunc(slices.Values(outcomes), func(a, b reconcile.Outcome) int { return strings.Compare(a.RecordID, b.RecordID) })
	// The commit runs in the configured zone, so that an updated_at trigger on the host table
	// writing now() into a timestamp without time zone column writes it in that zone, not in
	// the session's.
	batch.Queue(setTimeZone, s.cfg.TimeZone)
	// Observations in host columns are written by a statement of their own.
	var obsIDs, obsStates, obsVersions []string
	f := newFindingCols(len(outcomes))
	// withFindings are the rows whose outcomes open findings; judged, those whose outcomes
	// write anything.
	var withFindings, judged []string
	for _, o := range outcomes {
		d := o.Decision
		finding := d.Kind != "" && (d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview)
		if o.Verified && !st.findingsObserve {
			obsIDs, obsStates, obsVersions = append(obsIDs, o.RecordID), append(obsStates, o.External), append(obsVersions, o.Version)
		}
		switch {
		case finding:
			f.add(job, o, d.Kind)
		case o.Verified:
			// No finding, but a verification that may close others (Decides), of a row
			// that may have changed since its read (counted).
			f.add(job, o, "")
		}
		if !o.NotARow && finding {
			withFindings = append(withFindings, o.RecordID)
		}
		if !o.NotARow && (finding || o.Verified) {
			judged = append(judged, o.RecordID)
		}
	}
	// Locks, each set in one order and the sets in the canonical writer's order, so that no
	// one waits on another in a circle: the records that may get findings, the host rows (with
	// observations in host columns), the open findings of the records that may get findings.
	// (The findings statement takes the other findings it closes only if no one holds them.)
	if len(withFindings) > 0 {
		batch.Queue(st.lockRecords, job, s.cfg.Tables.table("findings"), withFindings)
	}
	if st.lockObserved != "" && len(judged) > 0 {
		batch.Queue(st.lockObserved, judged)
	}
	if len(withFindings) > 0 {
		batch.Queue(st.lockFindings, job, withFindings)
	}
	var dl *delivery
	if len(f.ids) > 0 {
		dl = s.newDelivery()
		batch.Queue(st.findings, job, s.cfg.AggregateType, f.ids, f.kinds, f.locals, f.externals, f.details, f.commands,
			f.once, f.notARow, f.payloads, f.externalIDs, f.diffs, f.versions, f.decides, f.verified, f.verifiedAt).
			QueryRow(func(row pgx.Row) error {
				var ids []string
				dest := []any{&res.Findings, &res.Commands, &ids}
				if dl != nil {
					dest = append(dest, &dl.raw)
				}
				err := row.Scan(dest...)
				if res.Changed = len(ids); changed != nil {
					*changed = ids
				}
				return err
			})
	}
	// Before the observations in host columns, whose update may fire the host's triggers.
	batch.Queue(restoreSorts)
	if len(obsIDs) > 0 {
		batch.Queue(st.observe, obsIDs, obsStates, obsVersions)
	}
	return dl
}

// verifiedAt is o's VerifiedAt, NULL if zero (the commit's time).
func verifiedAt(o *reconcile.Outcome) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: o.VerifiedAt, Valid: !o.VerifiedAt.IsZero()}
}

type findingCols struct {
	ids, kinds, locals, externals, details, commands []string
	externalIDs, versions                            []string
	once, notARow, decides, verified                 []bool
	// verifiedAt are when the verified outcomes' answers were obtained; NULL: the commit's time.
	verifiedAt []pgtype.Timestamptz
	// payloads are the repair commands as JSON without their finding id; nil where none.
	payloads []*string
	// diffs are the decisions' Diffs as JSON; nil where none.
	diffs []*string
}

// newFindingCols returns columns with room for n outcomes.
func newFindingCols(n int) findingCols {
	return findingCols{
		ids: make([]string, 0, n), kinds: make([]string, 0, n), locals: make([]string, 0, n), externals: make([]string, 0, n),
		details: make([]string, 0, n), commands: make([]string, 0, n), externalIDs: make([]string, 0, n), versions: make([]string, 0, n),
		once: make([]bool, 0, n), notARow: make([]bool, 0, n), decides: make([]bool, 0, n), verified: make([]bool, 0, n),
		verifiedAt: make([]pgtype.Timestamptz, 0, n), payloads: make([]*string, 0, n), diffs: make([]*string, 0, n),
	}
}

// add adds outcome o, whose finding is of kind (none if empty).
func (f *findingCols) add(job string, o reconcile.Outcome, kind string) {
	var payload *string
	if cmd := o.RepairCommand(job); cmd != nil {
		b, _ := json.Marshal(cmd) // strings and an integer: it cannot fail
		p := string(b)
		payload = &p
	}
	f.payloads = append(f.payloads, payload)
	var diffs *string
	if len(o.Decision.Diffs) > 0 {
		b, _ := json.Marshal(o.Decision.Diffs) // strings only: it cannot fail
		d := string(b)
		diffs = &d
	}
	f.diffs = append(f.diffs, diffs)
	f.once = append(f.once, o.Once)
	f.notARow = append(f.notARow, o.NotARow)
	f.ids = append(f.ids, o.RecordID)
	f.externalIDs = append(f.externalIDs, o.ExternalID)
	f.kinds = append(f.kinds, kind)
	f.versions = append(f.versions, o.Version)
	f.decides = append(f.decides, o.Decides())
	f.verified = append(f.verified, o.Verified)
	f.verifiedAt = append(f.verifiedAt, verifiedAt(&o))
	f.locals = append(f.locals, o.Local)
	f.externals = append(f.externals, o.External)
	f.details = append(f.details, o.Decision.Detail)
	f.commands = append(f.commands, o.Decision.Command)
}

// sendFenced runs batch in a transaction whose first statement is a compare-and-set: if it
// affects no row, nothing is written and the result is reconcile.ErrConcurrentRun. Then
// deliver (queueResults' delivery.run) hands over the commands the batch queued, in the same
// transaction. Where it can, the transaction begins in the batch's own round trip
// (pipelinedBegin): a commit is then two round trips, the batch and COMMIT.
func (s *Store[L]) sendFenced(ctx context.Context, batch *pgx.Batch, what string, deliver func(context.Context, pgx.Tx) error) error {
	var tx pgx.Tx
	var br pgx.BatchResults
	if pipelinedBegin(s.db) {
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.QueuedQueries = append(b.QueuedQueries, batch.QueuedQueries...)
		br = s.db.SendBatch(ctx, b)
		tx = br.Tx()
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("pgstore: %s: begin: %w", what, err)
		}
	} else {
		var err error
		if tx, err = s.db.Begin(ctx); err != nil {
			return fmt.Errorf("pgstore: %s: begin: %w", what, err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
		br = tx.SendBatch(ctx, batch)
	}
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		return s.cfg.Tables.wrap(what+": advance", err)
	}
	if tag.RowsAffected() != 1 {
		br.Close()
		return reconcile.ErrConcurrentRun
	}
	if err := br.Close(); err != nil {
		return s.cfg.Tables.wrap(what+": write results", err)
	}
	if err := deliver(ctx, tx); err != nil {
		return fmt.Errorf("pgstore: %s: %w", what, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: %s: commit transaction: %w", what, err)
	}
	noteWrite()
	return nil
}

// pipelinedBegin reports whether db begins a transaction in a batch's round trip
// (pgx.Batch.BeginTx): a pool or a connection. A transaction given as the DB (its batches
// cannot begin one) and other implementations begin with a round trip of their own.
func pipelinedBegin(db DB) bool {
	switch db.(type) {
	case *pgxpool.Pool, *pgx.Conn:
		return true
	}
	return false
}
