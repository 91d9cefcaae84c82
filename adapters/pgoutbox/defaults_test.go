package pgoutbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// poolOf returns a pool of maxConns connections to the schema of pool.
func poolOf(t *testing.T, schema string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// The README's snippet, NewDispatcher(pool, pgoutbox.Config{}), on a default pgxpool of a
// two-core machine (4 connections) failed with "4 workers need 6": zero Workers now takes what
// the pool allows.
func TestZeroWorkersFitThePoolTheyAreGiven(t *testing.T) {
	_, schema := pgtest.PoolSchema(t)
	tests := []struct {
		maxConns    int32
		wantWorkers int
		wantErr     string
	}{
		{maxConns: 4, wantWorkers: 2}, // pgxpool's default on two cores
		{maxConns: 3, wantWorkers: 1},
		{maxConns: 6, wantWorkers: pgoutbox.DefaultWorkers},
		{maxConns: 20, wantWorkers: pgoutbox.DefaultWorkers}, // a large pool is not taken whole
		{maxConns: 2, wantErr: "the pool allows 2 connections; the dispatcher needs at least 3"},
	}
	for _, tt := range tests {
		d, err := pgoutbox.NewDispatcher(poolOf(t, schema, tt.maxConns), pgoutbox.Config{})
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("a pool of %d: NewDispatcher = %v; want an error saying %q", tt.maxConns, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("a pool of %d: %v", tt.maxConns, err)
		case d.Config().Workers != tt.wantWorkers:
			t.Errorf("a pool of %d: %d workers, want %d", tt.maxConns, d.Config().Workers, tt.wantWorkers)
		}
	}
	// An explicit value the pool cannot serve keeps its clear error.
	_, err := pgoutbox.NewDispatcher(poolOf(t, schema, 4), pgoutbox.Config{Workers: 4})
	if err == nil || !strings.Contains(err.Error(), "the pool allows 4 connections; 4 workers need 6 (Workers + 2)") {
		t.Errorf("4 workers on a pool of 4: %v; want the pool error", err)
	}
}

// A dispatcher on a default-sized pool applies commands.
func TestADispatcherWithDefaultsOnAFourConnectionPoolAppliesCommands(t *testing.T) {
	verifyNoLeaks(t)
	pool := outboxWorld(t)
	var schema string
	if err := pool.QueryRow(context.Background(), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	small := poolOf(t, schema, 4)
	ids := enqueue(t, pool, "Apply", 20, 5, `{}`)
	d := newDispatcher(t, small, pgoutbox.Config{}, map[string]pgoutbox.Handler{"Apply": recordEffect})
	drain(t, pool, d)
	for _, id := range ids {
		if c := command(t, pool, id); c.Status != "done" {
			t.Fatalf("command %d: %+v, want done", id, c)
		}
	}
}

// A deferred Stop runs whatever happened before it: on a dispatcher that never started it
// returned "pgoutbox: not started".
func TestStopBeforeStartAndAfterStopDoesNothing(t *testing.T) {
	verifyNoLeaks(t)
	pool := outboxWorld(t)
	ctx := context.Background()
	attempts := make(chan reconcile.CommandAttempt, 10)
	d := newDispatcher(t, pool, pgoutbox.Config{Observer: chanObserver(attempts)}, map[string]pgoutbox.Handler{"Apply": recordEffect})
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("Stop before Start = %v, want nil", err)
	}
	// It did not spoil the dispatcher: it still starts, applies and stops.
	ids := enqueue(t, pool, "Apply", 3, 3, `{}`)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range ids {
		if a := <-attempts; a.Outcome != reconcile.AttemptDone {
			t.Fatalf("attempt %+v, want done", a)
		}
	}
	for _, id := range ids {
		if c := command(t, pool, id); c.Status != "done" {
			t.Fatalf("command %d: %+v, want done", id, c)
		}
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("a second Stop = %v, want nil", err)
	}
}

// chanObserver sends every attempt to its channel.
type chanObserver chan reconcile.CommandAttempt

func (c chanObserver) CommandAttempted(a reconcile.CommandAttempt) { c <- a }

// A dispatcher given other tables than the store's (the schema forgotten in Config.Tables)
// refuses to start instead of logging a failed claim every second.
func TestStartRefusesTablesWithoutAnOutbox(t *testing.T) {
	pool := outboxWorld(t)
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: pgstore.Tables{Prefix: "other_"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("Apply", recordEffect); err != nil {
		t.Fatal(err)
	}
	err = d.Start(context.Background())
	if !errors.Is(err, pgstore.ErrNotMigrated) || !strings.Contains(err.Error(), `outbox table "other_outbox" does not exist`) {
		t.Fatalf("Start = %v; want ErrNotMigrated naming the table", err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after a failed Start = %v", err)
	}
}
