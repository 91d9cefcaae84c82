package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// TestMeasuredCycleTimeIsThePlans runs the engine on a schedule over a memstore with a fake
// clock while rows arrive (B×R > G) and checks that every cycle takes PlanSchedule's CycleTime
// for the N rows present at its first read: (⌊N/B⌋+1)/R. A cycle is measured from the end of
// the one before (for the first, from one period before its first batch, as a scheduler that
// starts with the job would run it) to the batch that wraps.
func TestMeasuredCycleTimeIsThePlans(t *testing.T) {
	t.Parallel()
	const (
		rows       = 500
		batch      = 200
		perHour    = 1.0  // R
		growth     = 20.0 // G, rows an hour
		wantCycles = 6
	)
	step := time.Duration(float64(time.Hour) / perHour)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	store := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return now }})
	var next int64
	insert := func(n int) {
		for range n {
			next++
			store.Put(memstore.Row[int64, string]{Key: next, ExternalID: fmt.Sprintf("pi_%d", next), Local: "paid"})
		}
	}
	insert(rows)
	rec, err := reconcile.New(reconcile.Config[string, string]{
		Job: "plan", Source: store, Sink: store, BatchSize: batch,
		Gateway: reconcile.GatewayFunc[string](func(context.Context, string) (string, error) { return "paid", nil }),
		Classifier: reconcile.ClassifierFunc[string, string](func(l, e string) reconcile.Decision {
			return reconcile.Decision{Verdict: reconcile.InSync}
		}),
	})
	if err != nil {
		t.Fatal(err)
	}

	cycleStart := start // the previous cycle's end
	n := int64(-1)      // rows present at the cycle's first read
	var arrived float64
	var got []time.Duration
	for len(got) < wantCycles {
		if now.Sub(start) > 100*step {
			t.Fatalf("no end after 100 batches; cycles so far %v", got)
		}
		now = now.Add(step)
		if n < 0 {
			n = int64(store.Len())
		}
		rep, err := rec.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Wrapped {
			plan, err := reconcile.PlanSchedule(reconcile.PlanInput{Rows: n, BatchSize: batch, BatchesPerHour: perHour, NewRowsPerHour: growth})
			if err != nil {
				t.Fatal(err)
			}
			if !plan.KeepsUp {
				t.Fatalf("plan %+v does not keep up; the test wants B×R > G", plan)
			}
			measured := now.Sub(cycleStart)
			want := time.Duration(n/batch+1) * step
			if measured != plan.CycleTime || measured != want {
				t.Errorf("cycle %d over %d rows took %s; PlanSchedule says %s, (⌊N/B⌋+1)/R is %s",
					len(got)+1, n, measured, plan.CycleTime, want)
			}
			if c := store.Cursor("plan"); !c.LastCycleCompletedAt.Equal(now) {
				t.Errorf("cycle %d: the store recorded its completion at %s, the wrapping batch ran at %s", len(got)+1, c.LastCycleCompletedAt, now)
			}
			got = append(got, measured)
			cycleStart, n = now, -1
		}
		// G rows an hour arrive between batches.
		arrived += growth * step.Hours()
		insert(int(arrived))
		arrived -= float64(int(arrived))
	}
	// 500 rows: 3 batches; 560: 3; 620: 4; 700: 4; 780: 4; 860: 5.
	want := []time.Duration{3 * time.Hour, 3 * time.Hour, 4 * time.Hour, 4 * time.Hour, 4 * time.Hour, 5 * time.Hour}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cycle times %v, want %v", got, want)
	}
}
