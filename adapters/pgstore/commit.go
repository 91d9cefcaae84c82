package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
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
		if err := st.spec.CheckPosition(c.Next); err != nil {
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
	q, err := s.table.QueueResults(ctx, batch, c.Job, c.Outcomes, readRange(st, c), &res, &changed)
	if err != nil {
		return res, err
	}
	var after func(ctx context.Context, tx pgx.Tx) error
	if s.lagMarksApply() {
		s.queueLagMark(batch, st, c)
		after = func(ctx context.Context, tx pgx.Tx) error { return s.fixLagMark(ctx, tx, st, c, changed) }
	}
	if c.Wrap {
		// The cycle is complete: close the findings of rows it showed gone.
		st.spec.QueueForgetDeleted(batch, c.Job)
	}

	if err := s.table.SendFenced(ctx, batch, "commit", q, after); err != nil {
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

// readRange is the keyset range c's rows were read from, as the read bounds it: after the
// cursor's position, up to Next, or for a wrap up to the cycle's high-water mark. Unknown (the
// zero KeyRange) for a wrap without one, whose range would reach the table's end, and for a
// position that is not a key of the job (a host committing what no read returned).
func readRange(st *statements, c reconcile.Commit) hosttable.KeyRange {
	r := hosttable.KeyRange{After: c.Cursor.Position, UpTo: c.Next}
	if c.Wrap {
		r.UpTo = c.Cursor.End
	}
	for _, p := range []string{r.After, r.UpTo} {
		if p != "" && st.spec.CheckPosition(p) != nil {
			return hosttable.KeyRange{}
		}
	}
	return r
}
