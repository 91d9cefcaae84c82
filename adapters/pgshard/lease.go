package pgshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// Lease is one worker's lease on one shard of a Job. It is the engine's Source and
// Sink for that shard's batches: Read reads the shard's next rows, Commit commits a batch fenced
// by the lease token and the shard's cursor version. It is renewed in the background until
// Release. Findings, observations and failures are recorded under the job's name, so that they
// are deduplicated and reported across shards.
type Lease[L any] struct {
	job           *Job[L]
	shard         int
	token         int64
	takeover      bool
	previousOwner string
	acquired      time.Time

	lost     chan struct{} // closed when the lease is lost or held past MaxHold
	lostOnce sync.Once
	lostWhy  atomic.Pointer[error]
	stop     chan struct{} // closed by Release: the renewer ends
	stopOnce sync.Once
	renewed  chan struct{} // closed when the renewer has ended

	completed atomic.Bool // a commit of this lease completed the job's cycle
	released  atomic.Bool
}

var (
	_ reconcile.Store[string]   = (*Lease[string])(nil)
	_ reconcile.FailureRecorder = (*Lease[string])(nil)
)

// Shard returns the shard's number, from 0.
func (l *Lease[L]) Shard() int { return l.shard }

// Token returns the lease's fencing token: every write under the lease is guarded by it.
func (l *Lease[L]) Token() int64 { return l.token }

// TookOver reports that the shard was claimed from a worker whose lease had expired without
// being released (it crashed or stalled), and names that worker.
func (l *Lease[L]) TookOver() (bool, string) { return l.takeover, l.previousOwner }

// CycleCompleted reports that a commit under this lease wrapped the last shard of the job's
// cycle, completing the cycle.
func (l *Lease[L]) CycleCompleted() bool { return l.completed.Load() }

// Lost is closed when the lease is lost (another worker holds the shard) or has been held past
// Config.MaxHold; work under the lease should stop, as nothing more can commit.
func (l *Lease[L]) Lost() <-chan struct{} { return l.lost }

// LostErr returns why the lease was lost, or nil while it holds.
func (l *Lease[L]) LostErr() error {
	if p := l.lostWhy.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Lease[L]) lose(err error) {
	l.lostOnce.Do(func() {
		l.lostWhy.Store(&err)
		close(l.lost)
	})
}

// Context returns a context derived from ctx that is cancelled, with the lease's error as its
// cause, when the lease is lost. Call the returned cancel function when done.
func (l *Lease[L]) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-l.lost:
			cancel(l.LostErr())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// renew renews the lease every third of its length until Release; it gives up, and reports
// the lease lost, when a renewal finds the token gone or the lease has been held past MaxHold.
func (l *Lease[L]) renew() {
	defer close(l.renewed)
	t := time.NewTicker(l.job.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if !l.renewOnce() {
			return
		}
	}
}

// renewOnce renews the lease once, or gives it up past MaxHold. It reports whether the lease
// is still worth renewing.
func (l *Lease[L]) renewOnce() bool {
	j := l.job
	if time.Since(l.acquired) > j.cfg.MaxHold {
		// Stop renewing: the lease runs out and another worker takes the shard, even if
		// the work under it hangs in a call that ignores its context.
		l.lose(fmt.Errorf("pgshard: shard %d of job %s held past MaxHold (%v): %w", l.shard, j.cfg.Job, j.cfg.MaxHold, ErrLeaseLost))
		j.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "pgshard: shard lease held past MaxHold; no longer renewed",
			slog.String("job", j.cfg.Job), slog.Int("shard", l.shard), slog.Int64("token", l.token))
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.cfg.Lease/3)
	tag, err := j.h.DB().Exec(ctx, j.sql.renew, j.cfg.Job, l.shard, l.token, j.cfg.Lease)
	cancel()
	switch {
	case err != nil:
		// Unknown: try again next tick rather than abandon work that may be fine.
		j.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "pgshard: renewing a shard lease failed",
			slog.String("job", j.cfg.Job), slog.Int("shard", l.shard), slog.String("error", err.Error()))
	case tag.RowsAffected() == 0:
		l.lose(ErrLeaseLost)
		j.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "pgshard: shard lease lost",
			slog.String("job", j.cfg.Job), slog.Int("shard", l.shard), slog.Int64("token", l.token))
		return false
	}
	return true
}

// releaseTimeout bounds Release's statement, which runs even when its caller's ctx is done.
const releaseTimeout = 10 * time.Second

// Release stops renewing the lease and frees the shard for other workers. It runs even if ctx
// is done, within a few seconds. Releasing twice, or a lease already lost, is harmless.
func (l *Lease[L]) Release(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.renewed
	if l.released.Swap(true) {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := l.job.h.DB().Exec(rctx, l.job.sql.release, l.job.cfg.Job, l.shard, l.token); err != nil {
		return fmt.Errorf("pgshard: job %s: release shard %d: %w", l.job.cfg.Job, l.shard, err)
	}
	return nil
}

// Read returns the next rows of the shard after its cursor, in key order: the rows the store's
// Filter selects within the shard's range. It fails with ErrLeaseLost if the lease no
// longer holds.
func (l *Lease[L]) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[L], error) {
	var b reconcile.Batch[L]
	j := l.job
	switch {
	case req.Job != j.cfg.Job:
		return b, fmt.Errorf("pgshard: shard lease of job %s asked to read job %s", j.cfg.Job, req.Job)
	case req.Limit <= 0:
		return b, fmt.Errorf("pgshard: limit %d must be positive", req.Limit)
	}
	st, err := j.statements(ctx)
	if err != nil {
		return b, err
	}
	var lower, upper string
	var open bool
	err = j.h.DB().QueryRow(ctx, j.sql.readShard, j.cfg.Job, l.shard, l.token).Scan(&b.Cursor.Position, &b.Cursor.Version, &lower, &upper, &open, &b.Cursor.End)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return b, ErrLeaseLost
	case err != nil:
		return b, fmt.Errorf("pgshard: read shard %d: %w", l.shard, err)
	case !open:
		return b, errShardWrapped
	}
	for _, p := range []string{b.Cursor.Position, b.Cursor.End} {
		if p == "" {
			continue
		}
		if err := st.CheckPosition(p); err != nil {
			return b, fmt.Errorf("pgshard: read shard %d: cursor: %w", l.shard, err)
		}
	}
	b.Records, err = j.h.ReadRange(ctx, req, &b.Cursor, lower, upper)
	if err != nil {
		return b, fmt.Errorf("pgshard: read shard %d: %w", l.shard, err)
	}
	return b, nil
}

// Commit writes observations, findings and repair commands and advances the shard's cursor in
// one transaction, fenced by the lease token and compare-and-set on the cursor version: if the
// lease was lost or the cursor moved, nothing is written and the result is ErrLeaseLost (a
// reconcile.ErrConcurrentRun). A wrap that leaves no shard of the cycle unwrapped completes the
// job's cycle and starts the next in the same transaction.
func (l *Lease[L]) Commit(ctx context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	var res reconcile.CommitResult
	j := l.job
	if c.Job != j.cfg.Job {
		return res, fmt.Errorf("pgshard: shard lease of job %s asked to commit job %s", j.cfg.Job, c.Job)
	}
	st, err := j.statements(ctx)
	if err != nil {
		return res, err
	}
	what := fmt.Sprintf("commit shard %d", l.shard)
	if !c.Wrap {
		if err := st.CheckPosition(c.Next); err != nil {
			return res, fmt.Errorf("pgshard: %s: %w", what, err)
		}
		batch := &pgx.Batch{}
		batch.Queue(j.sql.advance, j.cfg.Job, l.shard, l.token, c.Cursor.Version, c.Next, len(c.Outcomes), c.Unverifiable(), nullIfEmpty(c.Cursor.End))
		q, err := j.h.QueueResults(ctx, batch, j.cfg.Job, c.Outcomes, hosttable.KeyRange{}, &res, nil)
		if err != nil {
			return reconcile.CommitResult{}, err
		}
		if err := j.h.SendFenced(ctx, batch, what, q, nil); err != nil {
			if errors.Is(err, reconcile.ErrConcurrentRun) {
				return reconcile.CommitResult{}, ErrLeaseLost
			}
			return reconcile.CommitResult{}, err
		}
		return res, nil
	}
	// A wrap locks the job's cursor row first, so that wraps commit one at a time and the last
	// of them sees every other: exactly one completes the cycle.
	var completed bool
	err = pgx.BeginFunc(ctx, j.h.DB(), func(tx pgx.Tx) error {
		var cycles int64
		var unsharded bool
		if err := tx.QueryRow(ctx, j.sql.lockJob, j.cfg.Job).Scan(&cycles, &unsharded); err != nil {
			return fmt.Errorf("lock job: %w", err)
		}
		batch := &pgx.Batch{}
		batch.Queue(j.sql.wrap, j.cfg.Job, l.shard, l.token, c.Cursor.Version, len(c.Outcomes), c.Unverifiable())
		q, err := j.h.QueueResults(ctx, batch, j.cfg.Job, c.Outcomes, hosttable.KeyRange{}, &res, nil)
		if err != nil {
			return err
		}
		if err := j.h.SendFencedIn(ctx, tx, batch, q); err != nil {
			if errors.Is(err, reconcile.ErrConcurrentRun) {
				return ErrLeaseLost
			}
			return err
		}
		completed, err = j.completeCycleIfDone(ctx, tx, st)
		return err
	})
	switch {
	case errors.Is(err, ErrLeaseLost):
		return reconcile.CommitResult{}, ErrLeaseLost
	case err != nil:
		return reconcile.CommitResult{}, fmt.Errorf("pgshard: %s: %w", what, err)
	}
	j.h.NoteWrite()
	if completed {
		l.completed.Store(true)
	}
	return res, nil
}

// RecordFailure records a failed batch under the job's name, for Status and health.
func (l *Lease[L]) RecordFailure(ctx context.Context, job string, cause error) error {
	return l.job.store.RecordFailure(ctx, job, fmt.Errorf("shard %d: %w", l.shard, cause))
}
