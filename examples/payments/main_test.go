package main

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// The example owns the fixed schema reconcile_demo, so its database tests do not run in
// parallel.

// databaseURL returns the test database and drops the example's schema when the test ends.
func databaseURL(t *testing.T) string {
	t.Helper()
	dbURL := pgtest.URL(t)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS reconcile_demo CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return dbURL
}

func TestRunFindsExactlyThePlantedDrift(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: databaseURL(t), Rows: 500, BatchSize: 200, Seed: 1})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		"batch   3  scanned  100",
		"empty read: the cycle is complete",
		"Verdicts over the cycle",
		"Open findings by kind",
		"Repair commands queued in the outbox",
		"Monitoring (store.Status)",
		"Needs review:",
		"Everything found matches what was planted.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunWithPacedCallsFindsTheSameDrift(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: databaseURL(t), Rows: 100, BatchSize: 50, RPS: 2000, Seed: 2})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
}

func TestRunWithoutADatabaseSaysHowToProvideOne(t *testing.T) {
	// Port 1 on the loopback interface refuses connections at once.
	err := run(t.Context(), &bytes.Buffer{}, options{
		DatabaseURL: "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable", Rows: 100, BatchSize: 10,
	})
	if err == nil {
		t.Fatal("run succeeded without a database")
	}
	msg := err.Error()
	for _, want := range []string{"cannot connect to PostgreSQL", "DATABASE_URL=", "pg_ctlcluster --skip-systemctl-redirect"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error shows the password:\n%s", msg)
	}
}

func TestPlanDealsEveryStoryAndIsRepeatable(t *testing.T) {
	p, err := newPlan(500, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := newPlan(500, 7)
	total := 0
	for i, s := range stories {
		if p.counts[i] < 1 {
			t.Errorf("story %q has no rows", s.name)
		}
		total += p.counts[i]
	}
	if total != 500 || len(p.payments) != 500 {
		t.Errorf("counts add up to %d over %d payments, want 500", total, len(p.payments))
	}
	for i := range p.payments {
		if p.payments[i] != again.payments[i] {
			t.Fatalf("payment %d differs between two plans with one seed: %+v, %+v", i, p.payments[i], again.payments[i])
		}
	}
	if _, err := newPlan(len(stories)-1, 1); err == nil {
		t.Error("a plan with fewer rows than stories succeeded")
	}
}

func TestCompareReportsEveryCountThatDiffers(t *testing.T) {
	p, err := newPlan(500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := compare(p, perfect(p)); len(diffs) != 0 {
		t.Fatalf("a perfect cycle differs: %+v", diffs)
	}

	r := perfect(p)
	r.status.OpenFindings[stripeadapter.KindMissedSuccess]--
	r.status.OpenFindings["unexpected:paid->processing"] = 1
	r.callsInGrace = 2
	got := compare(p, r)
	want := []string{
		"open missed_success findings",
		"open unexpected:paid->processing findings",
		"Stripe calls about rows inside the grace period",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d differences, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].what != w {
			t.Errorf("difference %d is %q, want %q", i, got[i].what, w)
		}
	}
}

// perfect returns the results of a cycle that found exactly what p planted.
func perfect(p plan) results {
	e := p.expected()
	var r results
	r.verdicts = maps.Clone(e.verdicts)
	r.status.OpenFindings = maps.Clone(e.findings)
	r.status.CyclesCompleted = 1
	r.commands = maps.Clone(e.commands)
	r.cycle.commands = sum(e.commands)
	r.findings = sum(e.findings)
	r.calls, r.observed = e.asked, e.answered
	return r
}
