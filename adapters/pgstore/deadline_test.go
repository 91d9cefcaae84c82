package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A batch that misses its own deadline is a failure, for health too, even when what held it up
// is the job's cursor row, locked by another session: the failure is recorded all the same,
// and health's last_attempt fails. The host's shutdown (its context cancelled) is not a
// failure.
func TestABatchThatMissesItsDeadlineOnALockedCursorFailsHealth(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2, 3)
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s,
		Gateway:    reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"}),
		Classifier: reconciletest.Classifier(), BatchSize: 2}
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := reconcile.RunTick(ctx, r, reconcile.TickBudget{}); err != nil {
		t.Fatal(err)
	}
	health := func() reconcile.Health {
		t.Helper()
		st, err := s.Status(ctx, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		return reconcile.EvaluateHealth(st, reconcile.HealthPolicy{})
	}
	if h := health(); !h.OK {
		t.Fatalf("after a cycle: %s", h)
	}

	// Another session holds the cursor row: every commit waits for it.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM reconcile_cursors WHERE job = 'sweep' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	// The host shuts down while a batch waits: a cancellation, not a failure.
	cctx, cancel := context.WithCancel(ctx)
	cfg.Gateway = reconcile.GatewayFunc[string](func(context.Context, string) (string, error) {
		cancel() // once asked, the host stops; the batch ends at its commit
		return "succeeded", nil
	})
	stopped, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.RunBatch(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("batch cancelled by the host: %v; want context.Canceled", err)
	}
	if h := health(); !h.OK {
		t.Fatalf("after a batch cancelled by the host's shutdown: %s; want healthy", h)
	}

	// The host gives each tick half a second: the batch misses its deadline at its commit.
	dctx, cancelTick := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelTick()
	if _, err := reconcile.RunTick(dctx, r, reconcile.TickBudget{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("tick over a locked cursor row: %v; want context.DeadlineExceeded", err)
	}
	h := health()
	if h.OK || !strings.Contains(strings.Join(h.Reasons(), "; "), "last_attempt") {
		t.Fatalf("after a batch that missed its deadline: %s; want last_attempt failing", h)
	}
}
