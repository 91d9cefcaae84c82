package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

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
		return reconcile.CommitResult{}, err
	}
	return res, nil
}

// setTimeZone sets the transaction's TimeZone to $1, until it ends.
const setTimeZone = "SELECT set_config('TimeZone', $1, true)"

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
	var obsIDs, obsStates, obsVersions []string
	var obsTimes []pgtype.Timestamptz // when each answer was obtained; NULL: the commit's time
	var f findingCols
	// withFindings are the rows whose outcomes open findings; judged, those whose outcomes
	// write anything.
	var withFindings, judged []string
	for _, o := range outcomes {
		d := o.Decision
		finding := d.Kind != "" && (d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview)
		if o.Verified {
			obsIDs, obsStates, obsVersions = append(obsIDs, o.RecordID), append(obsStates, o.External), append(obsVersions, o.Version)
			obsTimes = append(obsTimes, verifiedAt(&o))
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
	// In the reconciler's own table the observations are written first: a commit that
	// observes a row waits there for another one that observed it (ON CONFLICT waits for it),
	// so that the findings statement, which leaves alone a row verified since on a newer
	// answer, sees that one's verification. With ObserveInHostColumns, lockObserved serializes
	// them, and the observations come last: the findings statement must not take the commit's
	// own write for a newer verification.
	if st.observeTakesJob && len(obsIDs) > 0 {
		batch.Queue(st.observe, job, obsIDs, obsStates, obsVersions, obsTimes)
	}
	var dl *delivery
	if len(f.ids) > 0 {
		dl = s.newDelivery()
		batch.Queue(st.findings, job, s.cfg.AggregateType, f.ids, f.kinds, f.locals, f.externals, f.details, f.commands,
			f.once, f.notARow, f.payloads, f.externalIDs, f.diffs, f.versions, f.decides, f.verified, f.answeredAt).
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
	if !st.observeTakesJob && len(obsIDs) > 0 {
		batch.Queue(st.observe, obsIDs, obsStates, obsVersions, obsTimes)
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
	// answeredAt are the Verified outcomes' answer times (NULL: the commit's).
	answeredAt []pgtype.Timestamptz
	// payloads are the repair commands as JSON without their finding id; nil where none.
	payloads []*string
	// diffs are the decisions' Diffs as JSON; nil where none.
	diffs []*string
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
	f.answeredAt = append(f.answeredAt, verifiedAt(&o))
	f.locals = append(f.locals, o.Local)
	f.externals = append(f.externals, o.External)
	f.details = append(f.details, o.Decision.Detail)
	f.commands = append(f.commands, o.Decision.Command)
}

// sendFenced runs batch in a transaction whose first statement is a compare-and-set: if it
// affects no row, nothing is written and the result is reconcile.ErrConcurrentRun. Then
// deliver (queueResults' delivery.run) hands over the commands the batch queued, in the same
// transaction.
func (s *Store[L]) sendFenced(ctx context.Context, batch *pgx.Batch, what string, deliver func(context.Context, pgx.Tx) error) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: %s: begin: %w", what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	br := tx.SendBatch(ctx, batch)
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
