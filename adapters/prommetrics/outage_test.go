package prommetrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A gateway outage over several cycles, against real PostgreSQL: lag grows, health fails with
// the reason "unverifiable", the metrics show both; after recovery one cycle brings lag back.
func TestAnOutageShowsAsGrowingLagAndFailingHealthUntilOneCycleAfterRecovery(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day',
		updated_at timestamptz NOT NULL DEFAULT now() - interval '1 day');
		INSERT INTO payments (id, external_id, status) SELECT i, 'pi_' || i, 'paid' FROM generate_series(1, 50) AS i`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	policy := reconcile.HealthPolicy{LagSLO: time.Hour}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(store, policy, "sweep"), TTL: -1})})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	var down, revoked atomic.Bool
	gw := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		switch {
		case revoked.Load():
			return "", fmt.Errorf("the API key was revoked: %w", reconcile.ErrAbortBatch)
		case down.Load():
			return "", reconcile.ErrUnavailable
		}
		return "succeeded", nil
	})
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: store, Sink: store, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 20, Observer: m}
	cycle := func() {
		t.Helper()
		for range 100 {
			rep, err := reconcile.RunBatch(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Wrapped {
				return
			}
		}
		t.Fatal("no wrap")
	}
	health := func() reconcile.Health {
		t.Helper()
		st, err := store.Status(ctx, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		return reconcile.EvaluateHealth(st, policy)
	}
	gauge := func(name string, labels ...string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		metrics:
			for _, mm := range mf.GetMetric() {
				for i := 0; i+1 < len(labels); i += 2 {
					found := false
					for _, lp := range mm.GetLabel() {
						found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
					}
					if !found {
						continue metrics
					}
				}
				switch {
				case mm.Gauge != nil:
					return mm.Gauge.GetValue()
				case mm.Counter != nil:
					return mm.Counter.GetValue()
				}
			}
		}
		t.Fatalf("no metric %s%v", name, labels)
		return 0
	}

	cycle()
	before := health()
	if !before.OK {
		t.Fatalf("healthy system reported %s", before)
	}

	down.Store(true)
	var lags []time.Duration
	for range 3 {
		time.Sleep(50 * time.Millisecond)
		cycle()
		h := health()
		lags = append(lags, h.Status.Lag)
		if h.OK || !failed(h, "unverifiable") {
			t.Fatalf("during the outage: %s; want failing with the reason unverifiable", h)
		}
	}
	if !(lags[0] < lags[1] && lags[1] < lags[2] && before.Status.Lag < lags[0]) {
		t.Fatalf("lag during the outage %v after %v before it; want it growing", lags, before.Status.Lag)
	}
	if g := gauge("reconcile_healthy", "job", "sweep"); g != 0 {
		t.Fatalf("reconcile_healthy = %v during the outage", g)
	}
	if g := gauge("reconcile_health_check_ok", "job", "sweep", "check", "unverifiable"); g != 0 {
		t.Fatalf("health_check_ok{check=unverifiable} = %v during the outage", g)
	}
	if g := gauge("reconcile_last_batch_unverifiable_ratio", "job", "sweep"); g != 1 {
		t.Fatalf("last_batch_unverifiable_ratio = %v, want 1", g)
	}
	if g := gauge("reconcile_lag_seconds", "job", "sweep"); g < lags[2].Seconds() {
		t.Fatalf("lag_seconds = %v, want at least %v", g, lags[2].Seconds())
	}
	if g := gauge("reconcile_gateway_calls_total", "job", "sweep", "class", reconcile.ClassUnavailable); g != 150 {
		t.Fatalf("gateway_calls_total{class=unavailable} = %v, want 150 (50 rows, 3 cycles)", g)
	}

	down.Store(false)
	cycle()
	after := health()
	if !after.OK || after.Status.Lag > 10*time.Second {
		t.Fatalf("one cycle after recovery: %s, lag %v; want healthy with lag back under 10s", after, after.Status.Lag)
	}
	if g := gauge("reconcile_healthy", "job", "sweep"); g != 1 {
		t.Fatalf("reconcile_healthy = %v after recovery", g)
	}

	// Batches that fail outright commit nothing; health must not go on reporting the last
	// good batch.
	revoked.Store(true)
	if _, err := reconcile.RunBatch(ctx, cfg); !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("RunBatch with a revoked key = %v", err)
	}
	if h := health(); h.OK || !failed(h, "last_attempt") || !strings.Contains(h.String(), "revoked") {
		t.Fatalf("after a failed batch: %s; want failing on last_attempt with the cause", h)
	}
	if g := gauge("reconcile_healthy", "job", "sweep"); g != 0 {
		t.Fatalf("reconcile_healthy = %v after a failed batch", g)
	}
}

func failed(h reconcile.Health, check string) bool {
	for _, c := range h.Checks {
		if c.Name == check {
			return !c.OK
		}
	}
	return false
}
