package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTheRunFindsAndRepairsWhatItPlanted(t *testing.T) {
	t.Parallel()
	// A schema of the test's own, dropped when it ends.
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: pgtest.URL(t), Schema: pgtest.Schema(t), Rows: 500})
	t.Logf("output:\n%s", out.String())
	// run fails on any difference from the plan.
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Sweep (job subscriptions-sweep): 500 rows",
		"subscription_canceled_externally   6",
		"Health: subscriptions-sweep: OK",
		"Repairs: 19 commands applied",
		"Every planted drift was found once",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestTooFewRowsForThePlanIsAnError(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), &bytes.Buffer{}, options{DatabaseURL: "postgres://unused", Rows: 10})
	if err == nil || !strings.Contains(err.Error(), "-rows 10") {
		t.Fatalf("run with 10 rows: %v, want an error naming -rows", err)
	}
}
