package pgshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// Defaults of Config.
const (
	DefaultShards  = 8
	DefaultLease   = 30 * time.Second
	DefaultMaxHold = 10 * time.Minute
)

// ErrNoShardFree means every shard of the job is leased by a worker, or has wrapped in the
// current cycle and waits for the others, or the next cycle is not due yet
// (Config.MinCycleInterval; the error is then a *CycleNotDueError saying when it is). Try
// again later. Acquire returns it; Sweep and RunShard report it as a worker with nothing to
// do now (reconcile.AfterIdle), not as a lost race.
var ErrNoShardFree = errors.New("pgshard: no shard of the job is free")

// CycleNotDueError is the ErrNoShardFree of a job whose last cycle completed less than
// Config.MinCycleInterval ago: no shard is leased until the next cycle starts, StartsIn from
// when the error was made.
type CycleNotDueError struct {
	Job      string
	StartsIn time.Duration
}

func (e *CycleNotDueError) Error() string {
	return fmt.Sprintf("pgshard: job %s: no shard is free: the next cycle starts in %v", e.Job, e.StartsIn.Round(time.Millisecond))
}

// Unwrap makes the error an ErrNoShardFree.
func (e *CycleNotDueError) Unwrap() error { return ErrNoShardFree }

// ErrLeaseLost means the shard's lease expired and another worker took it over (or the
// shard set was remade for a new cycle): nothing this worker did since its last commit is kept.
// It is a reconcile.ErrConcurrentRun, so reconcile.AfterBatch finds a conflict rather than a
// failure.
var ErrLeaseLost = fmt.Errorf("pgshard: shard lease lost: %w", reconcile.ErrConcurrentRun)

// errShardWrapped is Read's answer on a shard that already wrapped in the current cycle.
var errShardWrapped = fmt.Errorf("pgshard: the shard has wrapped in the current cycle: %w", reconcile.ErrConcurrentRun)

// Config configures a Job. Only Job is required.
type Config struct {
	// Job names the job. Its findings, observations, failures and completed cycles are kept
	// under this name, as for an unsharded job, so Store.Status and every tool built on it see
	// the sharded job as one. A job is either sharded or not: do not also run an unsharded
	// reconciler under the same name. Required.
	Job string
	// Shards is the number of key ranges the job is split into, and so the number of workers
	// that can work on it at once. Zero means DefaultShards. The shard set is made when the job
	// first runs and made again, from the keys then present, at the start of every cycle, so a
	// change takes effect at the next cycle. A table with fewer distinct first-key values than
	// shards gets fewer shards.
	Shards int
	// Owner names this worker in leases. Empty means host name, process id and a random
	// suffix.
	Owner string
	// Lease is how long a shard stays leased to a worker that stops renewing it (a crashed or
	// partitioned one); a holder renews it every third of that. Zero means DefaultLease; at
	// least a second.
	Lease time.Duration
	// MaxHold bounds how long one lease is held: past it, the work under the lease is cancelled
	// and the lease no longer renewed, so that a worker hung in a call cannot keep its shard
	// forever. Zero means DefaultMaxHold; it must exceed Lease.
	MaxHold time.Duration
	// MinCycleInterval is the least time from the completion of one cycle to the start of the
	// next: the commit that completes a cycle makes the next one's shard set at once, but no
	// shard of it is leased before MinCycleInterval has passed, by the database clock. Acquire
	// then fails with a *CycleNotDueError saying how long is left, and Sweep and RunShard
	// report an idle batch or tick (reconcile.AfterIdle) with that RetryAfter, which a
	// reconcile.Runner (and a scheduler honouring RetryAfter, such as River snoozing) waits
	// out. It is how a rarely run tier sweeps once per interval however many workers run it:
	// a Runner's IdleAfterWrap only idles the worker whose batch completed the cycle. Zero
	// means no wait: the next cycle starts as soon as the last one completes.
	MinCycleInterval time.Duration
	// Logger receives a line per lease renewal that failed or was lost, and per failed tick it
	// could not record. Nil means no logging.
	Logger *slog.Logger
}

// Job is a job split into shards, key ranges over the first key column of the store's
// table, each with its own cursor, worked on by any number of workers in any number of
// processes. A worker leases a free shard (Acquire), runs batches on it with the lease as the
// engine's Source and Sink, and releases it; RunShard and Sweep do all that.
//
// # Shards
//
// The shard set splits the rows the store's Filter selects at the quantiles of the first key
// column: K shards, the first open downward and the last open upward, so that rows inserted
// anywhere, also beyond every key seen, belong to exactly one shard. It is made from the keys
// present when the job first runs, and again at the start of every cycle, so that shards stay
// even as the table grows at one end.
//
// # Leases and fencing
//
// A worker claims a shard with FOR UPDATE SKIP LOCKED: one not wrapped in the current cycle, not
// leased, or leased by a worker whose lease expired. Every claim takes a new token from a
// sequence. Every read and commit of the shard is guarded by that token, and every commit is
// also a compare-and-set on the shard's cursor version, so a worker that lost its lease (it
// stalled past the lease, another took the shard over) commits nothing: its batch fails with
// ErrLeaseLost, a reconcile.ErrConcurrentRun, and the new holder redoes it. A crashed
// worker's shard is taken over once its lease expires.
//
// # Cycles
//
// A shard that wraps waits for the others. The commit of the last shard to wrap completes the
// job's cycle (in the job's row of the cursors table: cycles completed, completion time, the
// new cycle's start, so Store.Status reports it), makes the new shard set and starts every
// shard again, in one transaction. Each row is thus read exactly once per cycle, whatever the
// number of workers. ShardStatus and Health report every shard and name the slowest. Give
// monitoring the Job, a reconcile.StatusReader, rather than the Store: the store alone
// does not see the shards' batches.
//
// Shard bounds hold for a whole cycle, and a batch read before the shard set is remade (by a
// worker that lost its lease) cannot commit after it, since every shard's cursor version moves.
type Job[L any] struct {
	store *pgstore.Store[L]
	h     *hosttable.Table[L] // the store's host table, read and committed through

	rmu   sync.Mutex
	reads *rangeSQL // built on first use

	cfg     Config
	sql     shardSQL
	ensured atomic.Bool
}

// NewJob checks cfg and returns a sharded job over the store's table, whose rows it reads as
// the store does (L is the store's). It does not touch the database; the shard set is made on
// first use (or by Ensure).
func NewJob[L any](s *pgstore.Store[L], cfg Config) (*Job[L], error) {
	switch {
	case s == nil:
		return nil, errors.New("pgshard: nil store")
	case cfg.Job == "":
		return nil, errors.New("pgshard: Job is empty")
	case cfg.Shards < 0, cfg.Lease < 0, cfg.MaxHold < 0, cfg.MinCycleInterval < 0:
		return nil, fmt.Errorf("pgshard: job %s: negative Shards, Lease, MaxHold or MinCycleInterval", cfg.Job)
	}
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.MaxHold == 0 {
		cfg.MaxHold = max(DefaultMaxHold, 2*cfg.Lease)
	}
	switch {
	case cfg.Shards > 10000:
		return nil, fmt.Errorf("pgshard: job %s: %d shards is more than 10000", cfg.Job, cfg.Shards)
	case cfg.Lease < time.Second:
		return nil, fmt.Errorf("pgshard: job %s: Lease %v is shorter than a second", cfg.Job, cfg.Lease)
	case cfg.MaxHold <= cfg.Lease:
		return nil, fmt.Errorf("pgshard: job %s: MaxHold %v must exceed Lease %v", cfg.Job, cfg.MaxHold, cfg.Lease)
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		cfg.Owner = host + ":" + strconv.Itoa(os.Getpid()) + ":" + strconv.FormatUint(rand.Uint64()%1e6, 10)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Job[L]{store: s, h: s.HostTable(hosttable.Key{}), cfg: cfg, sql: newShardSQL(s.Config().Tables)}, nil
}

// Job returns the job's name.
func (j *Job[L]) Job() string { return j.cfg.Job }

// Config returns the job's configuration with defaults filled in.
func (j *Job[L]) Config() Config { return j.cfg }

// Ensure makes the job's shard set if it has none, from the keys present now. Acquire calls it
// on first use; processes starting together make one shard set between them. Running it again
// is a no-op.
func (j *Job[L]) Ensure(ctx context.Context) error {
	if j.ensured.Load() {
		return nil
	}
	st, err := j.statements(ctx)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, j.h.DB(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, j.sql.ensureCursor, j.cfg.Job); err != nil {
			return err
		}
		var cycles int64
		var unsharded bool
		if err := tx.QueryRow(ctx, j.sql.lockJob, j.cfg.Job).Scan(&cycles, &unsharded); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, j.sql.shardCount, j.cfg.Job).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if unsharded {
			j.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "pgshard: the job has an unsharded cursor; sharding starts a new cycle and ignores it",
				slog.String("job", j.cfg.Job))
		}
		_, err := j.makeShards(ctx, tx, st, cycles, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgshard: job %s: make shards: %w", j.cfg.Job, err)
	}
	j.ensured.Store(true)
	return nil
}

// makeShards makes (or remakes) the shard set for cycle, starting after start, from the keys
// present now, in tx, with the job's cursor row locked. It returns the number of shards.
func (j *Job[L]) makeShards(ctx context.Context, tx pgx.Tx, st *rangeSQL, cycle int64, start time.Duration) (int, error) {
	fractions := make([]float64, j.cfg.Shards-1)
	for i := range fractions {
		fractions[i] = float64(i+1) / float64(j.cfg.Shards)
	}
	rows, err := tx.Query(ctx, st.bounds.SQL, st.bounds.Args(fractions)...)
	if err != nil {
		return 0, fmt.Errorf("boundaries: %w", err)
	}
	bounds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("boundaries: %w", err)
	}
	// Shard i covers [bounds[i-1], bounds[i]); the first is open downward, the last upward.
	lows, highs := make([]*string, len(bounds)+1), make([]*string, len(bounds)+1)
	for i := range bounds {
		lows[i+1], highs[i] = &bounds[i], &bounds[i]
	}
	if _, err := tx.Exec(ctx, j.sql.roll, j.cfg.Job, cycle, lows, highs, start); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, j.sql.prune, j.cfg.Job, len(lows)); err != nil {
		return 0, err
	}
	return len(lows), nil
}

// completeCycleIfDone completes the job's cycle in tx if every shard has wrapped in it: the
// job's cursor row counts the cycle and a new shard set starts the next, MinCycleInterval from
// now. The job's cursor row must be locked. It reports whether it completed the cycle.
func (j *Job[L]) completeCycleIfDone(ctx context.Context, tx pgx.Tx, st *rangeSQL) (bool, error) {
	var cycles int64
	var done, exists bool
	if err := tx.QueryRow(ctx, j.sql.readyToRoll, j.cfg.Job).Scan(&cycles, &done, &exists); err != nil {
		return false, fmt.Errorf("read shards: %w", err)
	}
	if !exists {
		// The shard set is gone (removed by hand): make it again, in the same cycle.
		_, err := j.makeShards(ctx, tx, st, cycles, 0)
		return false, err
	}
	if !done {
		return false, nil
	}
	if _, err := j.makeShards(ctx, tx, st, cycles+1, j.cfg.MinCycleInterval); err != nil {
		return false, fmt.Errorf("new shard set: %w", err)
	}
	if _, err := tx.Exec(ctx, j.sql.completeCycle, j.cfg.Job, cycles, j.cfg.MinCycleInterval); err != nil {
		return false, fmt.Errorf("complete cycle: %w", err)
	}
	if _, err := tx.Exec(ctx, st.ForgetDeleted, j.cfg.Job, reconcile.ResolvedByReconciler, hosttable.ForgetNote); err != nil {
		return false, fmt.Errorf("close findings of deleted rows: %w", err)
	}
	return true, nil
}

// Acquire leases a free shard of the job: one not wrapped in the current cycle whose lease is
// free or expired. It returns ErrNoShardFree if there is none, as a *CycleNotDueError if the
// next cycle is not due yet (Config.MinCycleInterval). The lease is renewed in the
// background until Release, which must be called. The lease is the engine's Source and Sink for
// batches of that shard.
func (j *Job[L]) Acquire(ctx context.Context) (*Lease[L], error) {
	if err := j.Ensure(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		l := &Lease[L]{job: j, lost: make(chan struct{}), stop: make(chan struct{}), renewed: make(chan struct{})}
		err := j.h.DB().QueryRow(ctx, j.sql.claim, j.cfg.Job, j.cfg.Owner, j.cfg.Lease).Scan(&l.shard, &l.token, &l.takeover, &l.previousOwner)
		switch {
		case err == nil:
			l.acquired = time.Now()
			go l.renew()
			return l, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, fmt.Errorf("pgshard: job %s: claim a shard: %w", j.cfg.Job, err)
		}
		if err := j.cycleDue(ctx); err != nil {
			return nil, err
		}
		if attempt > 0 {
			return nil, ErrNoShardFree
		}
		// Nothing free. Normally every shard is leased or waits for the others to wrap; but if
		// the shard set was changed under us (rows removed by hand), no commit will complete
		// the cycle or make the set again. Do it here, then look once more.
		if err := j.rollIfDone(ctx); err != nil {
			return nil, err
		}
	}
}

// cycleDue returns a *CycleNotDueError if the job's next cycle may not start yet.
func (j *Job[L]) cycleDue(ctx context.Context) error {
	var secs float64
	err := j.h.DB().QueryRow(ctx, j.sql.nextCycle, j.cfg.Job).Scan(&secs)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("pgshard: job %s: read the next cycle's start: %w", j.cfg.Job, err)
	}
	// Round up, so that a caller that waits StartsIn finds the cycle due.
	return &CycleNotDueError{Job: j.cfg.Job, StartsIn: seconds(secs).Truncate(time.Millisecond) + time.Millisecond}
}

// rollIfDone completes the job's cycle if every shard has wrapped, and makes the shard set
// again if it is gone.
func (j *Job[L]) rollIfDone(ctx context.Context) error {
	st, err := j.statements(ctx)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, j.h.DB(), func(tx pgx.Tx) error {
		var cycles int64
		var unsharded bool
		if err := tx.QueryRow(ctx, j.sql.lockJob, j.cfg.Job).Scan(&cycles, &unsharded); err != nil {
			return err
		}
		_, err := j.completeCycleIfDone(ctx, tx, st)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgshard: job %s: complete cycle: %w", j.cfg.Job, err)
	}
	return nil
}

// seconds converts a database's float seconds to a time.Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// statements returns the job's statements over the host table, built on first use from the
// store's (which checks the catalog then).
func (j *Job[L]) statements(ctx context.Context) (*rangeSQL, error) {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	if j.reads != nil {
		return j.reads, nil
	}
	st, err := j.h.Spec(ctx)
	if err != nil {
		return nil, err
	}
	j.reads = newRangeSQL(st, j.store.Config().Tables)
	return j.reads, nil
}

// nullIfEmpty is s, or NULL for an empty s.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}
