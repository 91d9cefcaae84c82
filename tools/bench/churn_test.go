package main

import (
	"context"
	"encoding/json"
	"flag"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// TestChurnBenchVerifiesEveryRowWithinThePlannedCycle runs the churn subcommand small, with the
// default faults (5% Unavailable answers, 429 bursts), and checks its JSON line. Time is
// simulated and the gateway answers one call at a time from a seeded generator, so the run is
// the same every time: the ratio is not noisy. It is above 1 by the batches the 429 bursts
// cost (a burst stops one batch and defers the next), which PlanSchedule does not count.
func TestChurnBenchVerifiesEveryRowWithinThePlannedCycle(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	opts := churnFlags(fs)
	if err := fs.Parse([]string{"-rows", "2000", "-batch", "40", "-growth", "40", "-deletes", "4", "-updates", "20", "-cycles", "3"}); err != nil {
		t.Fatal(err)
	}
	res, err := runChurn(context.Background(), pool, schema, *opts)
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"predicted_cycle_s", "max_time_to_verify_s", "ratio", "unverified_rows", "false_healthy",
		"skipped_unasked", "calls_per_row", "cycles_completed", "batches", "deferred_batches", "calls_429", "unavailable_answers", "cycles"} {
		if _, ok := got[k]; !ok {
			t.Errorf("the JSON line has no %q: %s", k, line)
		}
	}
	t.Logf("%s", line)
	switch {
	case res.SkippedUnasked != 0 || res.AskedBeyondEnd != 0:
		t.Errorf("%d rows skipped unasked, %d asked beyond their cycle's end; want none", res.SkippedUnasked, res.AskedBeyondEnd)
	case res.FalseHealthy != 0:
		t.Errorf("%d health checks said OK while a row was past the SLO", res.FalseHealthy)
	case res.Ratio > 1.1 || res.Ratio < 0.9:
		t.Errorf("ratio %.4f (cycle %d: %.0fs to verify, %.0fs planned); want within 10%% of the plan", res.Ratio, res.WorstCycle, res.MaxTimeToVerifyS, res.PredictedCycleS)
	case res.CyclesCompleted != 3 || len(res.Cycles) != 3:
		t.Errorf("%d cycles completed, want 3", res.CyclesCompleted)
	case res.LagMismatches != 0 || res.ObservationMismatches != 0:
		t.Errorf("the store and the gateway's log disagree: %d lags, %d observations", res.LagMismatches, res.ObservationMismatches)
	}
	// The run must exercise what it checks: faults, rows past the SLO, and healthy checks.
	if res.Calls429 == 0 || res.DeferredBatches == 0 || res.UnavailableAnswers == 0 || res.UnverifiedRows == 0 ||
		res.LagPastSLO == 0 || res.HealthFailing == res.HealthChecks || res.Inserted == 0 || res.Deleted == 0 || res.Updated == 0 {
		t.Errorf("the run did not exercise its faults and checks: %s", line)
	}
}
