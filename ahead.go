package reconcile

import (
	"context"
	"errors"
	"time"
)

// A tick over a store that can read ahead (ReadAheadSource) overlaps its batches: while batch
// N commits, batch N+1 is read, after the cursor N's commit will leave, and judged. The
// database works on N's statements while the engine (and the database's second connection)
// read and judge N+1, so on a machine with two cores neither waits for the other.
//
// What a tick of turns guarantees holds: N+1 commits only after N has committed, and
// compare-and-sets on the cursor N left; if N's commit fails (a conflict, an error, a
// cancelled context) or the tick ends after it (the cycle wrapped, a rate limit, the budget,
// a stop), N+1 is thrown away unwritten, and the next batch reads from the store's cursor.
// Reports, the Observer's BatchDone, failure records and log lines come in batch order, one
// per batch committed or failed, as in turns; a batch thrown away has none. Its gateway calls
// were made, and the Observer was told of them as they were.

// stager is a BatchRunner whose batches split into a read and judging (stage) and a commit
// (commitStaged), so that runTick can overlap them. *Reconciler is one.
type stager interface {
	BatchRunner
	// readsAhead reports whether a batch may be staged while the previous one commits.
	readsAhead() bool
	// stage reads and judges a batch: after the job's cursor when prev is nil, else after the
	// cursor prev's commit leaves. It never fails: the error is in the stagedBatch.
	stage(ctx context.Context, prev *stagedBatch) *stagedBatch
	// commitStaged commits s, if it judged without error, and ends its step as RunBatch does
	// (Observer, failure record, log line).
	commitStaged(ctx context.Context, s *stagedBatch) (Report, error)
}

var _ stager = (*Reconciler[string, string])(nil)

func (r *Reconciler[L, E]) readsAhead() bool {
	src, ok := r.cfg.Source.(ReadAheadSource[L])
	return ok && src.CanReadAhead()
}

func (r *Reconciler[L, E]) commitStaged(ctx context.Context, s *stagedBatch) (Report, error) {
	rep, err := s.rep, s.err
	if err == nil {
		rep, err = r.finish(ctx, s)
	}
	return r.p.endStep(ctx, r.name, r.recorder(), s.start, rep, err)
}

// follows reports whether the batch after s may be staged before s commits: s judged its rows
// and, as far as it can tell before its commit, the cycle goes on after it (AfterBatch finds
// AfterProgress).
func (s *stagedBatch) follows(ctx context.Context) bool {
	return s.err == nil && s.write && !s.commit.Wrap && AfterBatch(ctx, s.rep, nil) == AfterProgress
}

// ahead is a batch being staged on a goroutine of its own.
type ahead struct {
	cancel context.CancelFunc
	done   chan *stagedBatch
}

// stageAhead starts staging the batch after prev under a context of its own, which drop
// cancels.
func stageAhead(ctx context.Context, s stager, prev *stagedBatch) *ahead {
	ctx, cancel := context.WithCancel(ctx)
	a := &ahead{cancel: cancel, done: make(chan *stagedBatch, 1)}
	go func() { a.done <- s.stage(ctx, prev) }()
	return a
}

// wait returns the staged batch once staging has ended.
func (a *ahead) wait() *stagedBatch {
	s := <-a.done
	a.cancel() // the commit runs under the tick's context, not this one
	return s
}

// drop throws the batch away: it stops its calls and waits for its goroutine to end.
func (a *ahead) drop() {
	if a != nil {
		a.cancel()
		<-a.done
	}
}

// runTickAhead is runTick for a stager that reads ahead: the same loop, the same checks before
// each batch and the same TickReport, with each batch staged while the previous one commits,
// when that batch lets the cycle go on and the budget and the deadline leave room for another.
func runTickAhead(batchCtx, stopCtx context.Context, s stager, budget TickBudget) (t TickReport, err error) {
	t = TickReport{Verdicts: map[Verdict]int{}}
	start := time.Now()
	defer func() { t.Duration = time.Since(start) }()
	var (
		last time.Duration
		cur  *stagedBatch // staged, to be committed next
		next *ahead       // the batch after cur, being staged
	)
	defer func() { next.drop() }()
	for {
		if cur == nil {
			if tickStopped(stopCtx, &t) {
				return t, nil
			}
			if d, ok := batchCtx.Deadline(); ok && last > 0 && time.Until(d) < last {
				return t, nil // the next batch would not finish in time
			}
			cur = s.stage(batchCtx, nil)
		}
		// Stage the next batch while cur commits, if cur, as judged, lets the cycle go on and
		// the budget, counting cur's rows, and the deadline, counting cur's commit, leave room.
		room := stopCtx.Err() == nil && cur.follows(batchCtx) &&
			(budget.MaxRows <= 0 || t.Scanned+cur.rep.Scanned < budget.MaxRows) &&
			(budget.MaxTime <= 0 || time.Since(start) < budget.MaxTime)
		if d, ok := batchCtx.Deadline(); ok && last > 0 && time.Until(d) < 2*last {
			room = false
		}
		if room {
			next = stageAhead(batchCtx, s, cur)
		}
		rep, err := s.commitStaged(batchCtx, cur)
		last, cur = time.Since(cur.start), nil
		t.name(rep)
		t.RetryAfter = max(t.RetryAfter, rep.RetryAfter) // a failed batch's rate limit holds too
		switch t.After = AfterBatch(batchCtx, rep, err); t.After {
		case AfterConflict:
			t.Conflict = true
			return t, nil
		case AfterFailure, AfterStop:
			return t, err
		}
		t.add(rep)
		switch {
		case t.After != AfterProgress:
			return t, nil // nothing was staged ahead: cur did not let the cycle go on
		case next == nil:
			if !budgetLeft(t, budget, start) {
				return t, nil
			}
			// The next batch reads from the store's cursor.
		case stopCtx.Err() != nil:
			// A stop throws the batch staged ahead away, as a tick in turns would not have
			// started it; the loop's check ends the tick.
			next.drop()
			next = nil
		default:
			// The batch staged ahead was admitted by the budget when it started.
			cur, next = next.wait(), nil
		}
	}
}

// budgetLeft reports whether t's budget allows another batch.
func budgetLeft(t TickReport, budget TickBudget, start time.Time) bool {
	return (budget.MaxRows <= 0 || t.Scanned < budget.MaxRows) && (budget.MaxTime <= 0 || time.Since(start) < budget.MaxTime)
}

// tickStopped reports whether stopCtx has ended the tick, setting t.After as runTick does.
func tickStopped(stopCtx context.Context, t *TickReport) bool {
	err := stopCtx.Err()
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// Out of time, with work left: t.After stays the last batch's.
	case errors.Is(context.Cause(stopCtx), ErrConcurrentRun):
		t.After, t.Conflict = AfterConflict, true // another took the work over (a lost lease)
	default:
		t.After = AfterStop
	}
	return true
}

