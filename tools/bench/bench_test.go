package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestSeedMixMatchesTheReferenceShares(t *testing.T) {
	t.Parallel()
	got := map[string]int{}
	for i := 1; i <= 100; i++ {
		local, ext, ok := seedMix(i)
		if !ok {
			ext = "unavailable"
		}
		got[local+"/"+string(ext)]++
	}
	want := map[string]int{"paid/succeeded": 90, "pending/succeeded": 4, "paid/canceled": 3,
		"pending/processing": 2, "paid/unavailable": 1}
	if len(got) != len(want) {
		t.Fatalf("mix = %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("mix[%s] = %d, want %d", k, got[k], n)
		}
	}
	if f, c := expected(100000); f != 7000 || c != 4000 {
		t.Errorf("expected(100000) = %d findings, %d commands; want 7000, 4000", f, c)
	}
}

func TestEngineFindsTheMixDriftInOneCycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		batch int
	}{
		{"with batches that divide the rows", 200},
		{"with a last partial batch", 333},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, schema := pgtest.PoolSchema(t)
			var progress bytes.Buffer
			res, err := runEngine(context.Background(), pool, schema, engineOptions{Rows: 2000, Batch: tc.batch, Progress: &progress, Typed: true, Rounds: 2, Floor: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Findings != 140 || res.Commands != 80 || res.GatewayCalls != 2000 {
				t.Errorf("findings=%d commands=%d gateway_calls=%d, want 140, 80, 2000", res.Findings, res.Commands, res.GatewayCalls)
			}
			if wantBatches := 2000/tc.batch + 1; res.Batches != wantBatches {
				t.Errorf("batches = %d, want %d (the last one, short, wraps)", res.Batches, wantBatches)
			}
			if res.Verdicts["unverifiable"] != 20 || res.Verdicts["in_flight"] != 40 {
				t.Errorf("verdicts = %v, want 20 unverifiable and 40 in flight", res.Verdicts)
			}
			// Two rounds of the one-column and the typed row, which agree (runEngine checks).
			if n := strings.Count(progress.String(), "%"); n != 40 {
				t.Errorf("progress has %d percentage lines, want 40:\n%s", n, progress.String())
			}
			// The SQL floor wrote what the engine did (runEngine checks) and was timed.
			if res.SQLFloorRowsPerS <= 0 || res.FloorRatio != round(res.RowsPerS/res.SQLFloorRowsPerS, 3) {
				t.Errorf("floor %v rows/s, ratio %v; want the floor's rate and the engine's ratio to it", res.SQLFloorRowsPerS, res.FloorRatio)
			}
			if n := strings.Count(progress.String(), "floor: "); n != 2 {
				t.Errorf("progress has %d floor lines, want 2:\n%s", n, progress.String())
			}
			if res.TypedRowsPerS <= 0 || res.TypedRatio != round(res.TypedRowsPerS/res.RowsPerS, 3) {
				t.Errorf("typed %v rows/s, ratio %v to %v; want the typed row's rate and its ratio to the one-column row's", res.TypedRowsPerS, res.TypedRatio, res.RowsPerS)
			}
			if res.SecondCycleRowsPerS != 0 || res.SQLFloorSecondCycleRowsPerS != 0 {
				t.Errorf("second cycles %v and %v rows/s without -cycles 2; want none", res.SecondCycleRowsPerS, res.SQLFloorSecondCycleRowsPerS)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEngineTimesASecondCycleOverTheSameTables(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	var progress bytes.Buffer
	res, err := runEngine(context.Background(), pool, schema, engineOptions{Rows: 2000, Batch: 500, Progress: &progress, Rounds: 1, Floor: true, Cycles: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The second cycles found what the first did (runEngine checks) and were timed.
	if res.SecondCycleRowsPerS <= 0 || res.SQLFloorSecondCycleRowsPerS <= 0 {
		t.Errorf("second cycles %v and %v rows/s; want both timed", res.SecondCycleRowsPerS, res.SQLFloorSecondCycleRowsPerS)
	}
	// Each ran over the first's tables: one cursor, two cycles, one observation per verified row.
	for _, prefix := range []string{"reconcile_", "floor_0_"} {
		var cycles, observed int64
		err := pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT (SELECT sum(cycles_completed) FROM %s), (SELECT count(*) FROM %s)`,
			pgx.Identifier{schema, prefix + "cursors"}.Sanitize(), pgx.Identifier{schema, prefix + "observations"}.Sanitize())).Scan(&cycles, &observed)
		if err != nil {
			t.Fatal(err)
		}
		if cycles != 2 || observed != 1980 {
			t.Errorf("%s: %d cycles completed, %d observations; want 2 and 1980 (the rows the first cycle observed)", prefix, cycles, observed)
		}
	}
}

func TestStripeBenchBulkAgreesWithPerObjectAtAHundredthOfTheCalls(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"rows 10 s apart", "a burst", "rows a minute apart around an import"} {
		t.Run(layout, func(t *testing.T) {
			results := map[string]stripeResult{}
			for _, mode := range []string{"bulk", "per-object"} {
				pool, schema := pgtest.PoolSchema(t)
				res, err := runStripe(context.Background(), pool, schema, stripeOptions{Rows: 3000, Batch: 1000, Concurrency: 4, Hint: "aligned",
					PerObject: mode == "per-object", Burst: layout == "a burst", Mix: layout == "rows a minute apart around an import"})
				if err != nil {
					t.Fatal(err)
				}
				results[mode] = res
			}
			bulk, one := results["bulk"], results["per-object"]
			if one.APICalls != 3000 || bulk.CallsPerRow > 0.011 {
				t.Fatalf("per-object %d calls, bulk %.4f calls per row; want 3000 and at most 0.011", one.APICalls, bulk.CallsPerRow)
			}
			if bulk.Findings != one.Findings || bulk.Commands != one.Commands || len(bulk.Verdicts) != len(one.Verdicts) {
				t.Fatalf("bulk %+v and per-object %+v disagree", bulk, one)
			}
			for v, n := range one.Verdicts {
				if bulk.Verdicts[v] != n {
					t.Fatalf("verdict %s: bulk %d, per-object %d", v, bulk.Verdicts[v], n)
				}
			}
		})
	}
}

func TestStripeBenchOverSubscriptionsAndInvoicesListsEveryObjectAtAHundredthOfTheCalls(t *testing.T) {
	t.Parallel()
	for _, object := range []string{"subscription", "invoice"} {
		t.Run(object, func(t *testing.T) {
			t.Parallel()
			results := map[string]stripeResult{}
			for _, mode := range []string{"bulk", "per-object"} {
				pool, schema := pgtest.PoolSchema(t)
				opts := stripeOptions{Rows: 3000, Batch: 1000, Concurrency: 4, Hint: "aligned", PerObject: mode == "per-object"}
				var res stripeResult
				var err error
				if object == "subscription" {
					res, err = runObject(context.Background(), pool, schema, opts, subscriptionObject)
				} else {
					res, err = runObject(context.Background(), pool, schema, opts, invoiceObject)
				}
				if err != nil {
					t.Fatal(err) // including findings or commands other than the mix's
				}
				results[mode] = res
			}
			bulk, one := results["bulk"], results["per-object"]
			// No retrieve in bulk: every object, the canceled subscriptions (1 in 100) among
			// them, came from a list.
			if one.APICalls != 3000 || bulk.CallsPerRow > 0.011 || bulk.Retrieves != 0 || bulk.Object != object {
				t.Fatalf("per-object %d calls; bulk %.4f calls per row, %d retrieves, object %q; want 3000, at most 0.011, none, %s",
					one.APICalls, bulk.CallsPerRow, bulk.Retrieves, bulk.Object, object)
			}
			for v, n := range one.Verdicts {
				if bulk.Verdicts[v] != n {
					t.Fatalf("verdict %s: bulk %d, per-object %d", v, bulk.Verdicts[v], n)
				}
			}
		})
	}
}

func TestStripeMoneyBenchAgreesInBothModesAndFindsEveryKind(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	res, err := runStripeMoney(context.Background(), pool, schema, stripeOptions{Rows: 10000, Batch: 1000, Concurrency: 4, Hint: "aligned"})
	if err != nil {
		t.Fatal(err) // including bulk and per-object disagreeing
	}
	if !res.SameVerdicts || !res.SameFindings || res.CallsPerRow > 0.011 || res.DisputeCalls != 5 {
		t.Fatalf("same verdicts %t, findings %t; %.4f calls per row, %d disputes calls; want both, at most 0.011, 5",
			res.SameVerdicts, res.SameFindings, res.CallsPerRow, res.DisputeCalls)
	}
	// The first 10,000 rows hold five disputes: two needing a response and one won, which the
	// rows do not record, and two (one lost, one under review) which they do.
	for kind, want := range map[string]int{"amount_mismatch": 5, "currency_mismatch": 5, "partial_capture": 8, "refund_failed": 9,
		"missed_refund": 46, "missed_partial_refund": 45, "dispute_needs_response": 2, "dispute_won": 1,
		"dispute_lost": 0, "dispute_updated": 0} {
		if res.Kinds[kind] != want {
			t.Errorf("%d %s findings, want %d (all: %v)", res.Kinds[kind], kind, want, res.Kinds)
		}
	}
}

func TestDispatchBenchAppliesEveryCommandOnce(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	res, err := runDispatch(context.Background(), pool, schema, dispatchOptions{Commands: 2000, Aggregates: 300, Workers: 3, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicates != 0 || res.Lost != 0 || res.OutOfOrder != 0 || res.CommandsPerS <= 0 {
		t.Fatalf("result %+v; want no duplicates, none lost, none out of order", res)
	}
}

// The floor's ranges variant writes an observation for each verified row that is not in sync,
// one range row a batch covering every key read, and names there the rows read but not
// verified: what a design recording in-sync verifications by range would write.
func TestFloorRangesRecordsInSyncRowsByRange(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	var progress bytes.Buffer
	res, err := runEngine(context.Background(), pool, schema, engineOptions{Rows: 2000, Batch: 300, Progress: &progress, Rounds: 1, Floor: false, FloorRanges: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.SQLFloorRangesRowsPerS <= 0 {
		t.Errorf("ranges floor %v rows/s; want it timed", res.SQLFloorRangesRowsPerS)
	}
	var observed, ranges, covered, unverified int64
	var contiguous bool
	err = pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s),
		count(*), sum(upto - after), sum(cardinality(unverified)), bool_and(after = prev)
		FROM (SELECT *, coalesce(lag(upto) OVER (ORDER BY upto), 0) AS prev FROM %[2]s) AS r`,
		pgx.Identifier{schema, "floor_ranges_0_observations"}.Sanitize(), pgx.Identifier{schema, "floor_ranges_0_ranges"}.Sanitize())).Scan(&observed, &ranges, &covered, &unverified, &contiguous)
	if err != nil {
		t.Fatal(err)
	}
	// 2,000 rows (seedMix): 90% in sync; 7% with a finding and 2% in flight, each observed;
	// 1% unavailable, not verified.
	if observed != 180 || ranges != 7 || covered != 2000 || unverified != 20 || !contiguous {
		t.Errorf("%d observations, %d ranges covering %d keys (contiguous %v), %d unverified; want 180, 7, 2000 (true), 20",
			observed, ranges, covered, contiguous, unverified)
	}
}
