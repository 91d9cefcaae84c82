package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestRiverAppliesEveryRepairOnceAndResolvesItsFinding(t *testing.T) {
	// A schema of the test's own, dropped when it ends.
	dbURL, schema := pgtest.URL(t), pgtest.Schema(t)
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: dbURL, DatabaseSource: "the test database", Schema: schema, Rows: 1000})
	t.Logf("output:\n%s", out.String())
	// run fails if a repair was missed, applied twice or left its finding open, or a finding
	// for a person was closed.
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"planted 50 missed success webhooks (repairable), 20 payments paid here but canceled at Stripe (review)",
		"Sweep: 1000 rows in ",
		" batches, 70 findings, 50 repair commands",
		"River: 50 reconcile_repair jobs available",
		"River: 50 jobs completed",
		"Result: 0 payments still pending, 50 missed_success findings repaired (50 resolutions recorded), 50 commands done, 20 findings left for a person",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
