package pgshard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// lockCursorRow holds the job's cursor row locked, as another session might, until the test
// ends.
func lockCursorRow(t testing.TB, pool *pgxpool.Pool, s *pgstore.Store[string], job string) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{s.Tables().Prefix + "cursors"}.Sanitize()+` (job) VALUES ($1)
		ON CONFLICT (job) DO NOTHING`, job); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{s.Tables().Prefix + "cursors"}.Sanitize()+` WHERE job = $1 FOR UPDATE`, job); err != nil {
		t.Fatal(err)
	}
}

// A sharded worker held up until its deadline before it could lease a shard (a worker that
// starts while another session holds the job's cursor row, as in a rolling deploy) has failed,
// as an unsharded batch held up by that lock has: health's last_attempt says so. A worker
// stopped by its host records nothing.
func TestAWorkerThatMissesItsDeadlineBeforeLeasingAShardIsRecordedAsFailed(t *testing.T) {
	t.Parallel()
	for _, entry := range []struct {
		name string
		run  func(ctx context.Context, j *pgshard.Job[string]) error
	}{
		{"Sweep.RunBatch", func(ctx context.Context, j *pgshard.Job[string]) error {
			sweep, err := pgshard.NewSweep(j, shardtest.EngineConfig(succeededFor(seq(1, 20)), 10))
			if err != nil {
				return err
			}
			_, err = sweep.RunBatch(ctx)
			return err
		}},
		{"RunShard", func(ctx context.Context, j *pgshard.Job[string]) error {
			_, err := pgshard.RunShard(ctx, j, shardtest.EngineConfig(succeededFor(seq(1, 20)), 10), reconcile.TickBudget{})
			return err
		}},
	} {
		t.Run(entry.name, func(t *testing.T) {
			t.Parallel()
			pool, s := shardtest.NewStore(t, pgstore.Config{})
			insertPayments(t, pool, seq(1, 20)...)
			lockCursorRow(t, pool, s, "sweep")
			j := shardtest.NewJob(t, s, pgshard.Config{Shards: 2})

			// Stopped by the host: not a failure.
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			if err := entry.run(ctx, j); !errors.Is(err, context.Canceled) {
				t.Fatalf("a worker stopped while held up: %v; want it cancelled", err)
			}
			if st, err := j.Status(context.Background(), "sweep"); err != nil || !st.LastFailureAt.IsZero() {
				t.Fatalf("status after a stop: %+v, %v; want no failure recorded", st, err)
			}

			ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := entry.run(ctx, j)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a worker held up past its deadline: %v; want the deadline", err)
			}
			st, err := j.Status(context.Background(), "sweep")
			if err != nil {
				t.Fatal(err)
			}
			if st.LastFailureAt.IsZero() {
				t.Fatalf("status %+v: the missed deadline is not recorded", st)
			}
			h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{})
			for _, c := range h.Checks {
				if c.Name == "last_attempt" && c.OK {
					t.Errorf("health %+v: last_attempt is OK after a missed deadline", h)
				}
			}
		})
	}
}
