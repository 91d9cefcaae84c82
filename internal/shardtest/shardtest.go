// Package shardtest holds the helpers that the tests of pgshard and of pgstore (whose deleted-row
// and bad-time tests run sharded too) share.
package shardtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// PaymentsDDL is the host table of the tests: payments keyed by a bigint id.
const PaymentsDDL = `CREATE TABLE payments (
	id          bigint PRIMARY KEY,
	external_id text NOT NULL,
	status      text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now() - interval '1 day',
	updated_at  timestamptz NOT NULL DEFAULT now()
)`

// NewStore gives the test its own schema with a payments table (or the tables ddl makes), the
// reconciler's tables migrated, and a store over them.
func NewStore(t testing.TB, cfg pgstore.Config, ddl ...string) (*pgxpool.Pool, *pgstore.Store[string]) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if len(ddl) == 0 {
		ddl = []string{PaymentsDDL}
	}
	for _, d := range ddl {
		if _, err := pool.Exec(ctx, d); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
	}
	if cfg.Table == "" {
		cfg.Table = "payments"
	}
	s, err := pgstore.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, s.Tables()); err != nil {
		t.Fatal(err)
	}
	return pool, s
}

// NewJob returns a sharded job over s, of job "sweep" unless cfg names one.
func NewJob[L any](t testing.TB, s *pgstore.Store[L], cfg pgshard.Config) *pgshard.Job[L] {
	t.Helper()
	if cfg.Job == "" {
		cfg.Job = "sweep"
	}
	j, err := pgshard.NewJob(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// EngineConfig is the engine config of the tests' sharded jobs: gw judged by
// reconciletest.Classifier, batch rows a batch.
func EngineConfig(gw reconcile.Gateway[string], batch int) reconcile.Config[string, string] {
	return reconcile.Config[string, string]{Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: batch}
}

// RunCycle runs workers (each its own pgshard.Job, as separate processes would have) until the
// job's cycle count reaches cycles, and returns the ticks that leased a shard. It fails the test
// after maxTicks ticks in all.
func RunCycle[L, E any](t testing.TB, s *pgstore.Store[L], jobs []*pgshard.Job[L], cfg reconcile.Config[L, E], cycles int64, maxTicks int) []pgshard.Tick {
	t.Helper()
	ctx := context.Background()
	var (
		mu    sync.Mutex
		ticks []pgshard.Tick
		n     int
		wg    sync.WaitGroup
	)
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st, err := s.Status(ctx, j.Job())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				n++
				stop := st.CyclesCompleted >= cycles || n > maxTicks
				mu.Unlock()
				if stop {
					return
				}
				tick, err := pgshard.RunShard(ctx, j, cfg, reconcile.TickBudget{})
				if err != nil {
					t.Error(err)
					return
				}
				if !tick.Leased {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				mu.Lock()
				ticks = append(ticks, tick)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if st, err := s.Status(ctx, jobs[0].Job()); err != nil || st.CyclesCompleted < cycles {
		t.Fatalf("after %d ticks: %d cycles completed (%v), want %d", n, st.CyclesCompleted, err, cycles)
	}
	return ticks
}
