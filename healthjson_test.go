package reconcile_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what was written; got:\n%s", path, got)
	}
}

// judgedHealth is a failing health report with every part set: a lane, a plan, a failure.
func judgedHealth() reconcile.Health {
	// A zone other than UTC, to show that the JSON form writes UTC.
	now := time.Date(2026, 3, 1, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	st := reconcile.Status{
		Job: "payments", Now: now, Lag: 80*time.Hour + 1500*time.Millisecond, Rows: 120000, NewRowsPerHour: 40,
		CycleStartedAt: now.Add(-30 * time.Hour), LastCycleCompletedAt: now.Add(-30 * time.Hour), CyclesCompleted: 7,
		LastBatchAt: now.Add(-2 * time.Minute), LastBatchScanned: 200, LastBatchUnverifiable: 3,
		OpenFindings:      map[string]int{"missed_cancel": 11, "amount_mismatch": 2},
		OldestOpenFinding: now.Add(-50 * time.Hour), StaleFindings: 2, StaleAfter: 24 * time.Hour,
		LastFailureAt: now.Add(-3 * time.Hour), LastFailure: "stripeadapter: list payment intents: unavailable",
		Lanes: []reconcile.LaneStatus{{
			Lane: "events", CreatedAt: now.Add(-100 * time.Hour), LastRunAt: now.Add(-time.Minute), PassesCompleted: 90,
			LastEndAt: now.Add(-time.Minute),
		}, {
			Lane: "reverse", CreatedAt: now.Add(-100 * time.Hour), LastRunAt: now.Add(-time.Hour),
			GapAt: now.Add(-40 * time.Hour), GapReason: "the events were older than 30 days", GapOpen: true,
		}},
	}
	return reconcile.EvaluateHealth(st, reconcile.HealthPolicy{
		LaneLag:  map[string]time.Duration{"events": 15 * time.Minute},
		Schedule: &reconcile.PlanInput{BatchSize: 200, BatchesPerHour: 12},
	})
}

func TestTheJSONFormOfHealth(t *testing.T) {
	h := judgedHealth()
	got, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "health.json", append(got, '\n'))

	// It reads back to the same report, times in UTC.
	var back reconcile.Health
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	want := h
	st := &want.Status
	for _, tm := range []*time.Time{&st.Now, &st.CycleStartedAt, &st.LastCycleCompletedAt, &st.LastBatchAt, &st.OldestOpenFinding, &st.LastFailureAt} {
		*tm = tm.UTC()
	}
	st.Lanes = append([]reconcile.LaneStatus(nil), st.Lanes...)
	for i := range st.Lanes {
		l := &st.Lanes[i]
		for _, tm := range []*time.Time{&l.CreatedAt, &l.LastRunAt, &l.LastEndAt, &l.GapAt, &l.LastFailureAt} {
			if !tm.IsZero() {
				*tm = tm.UTC()
			}
		}
	}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", back, want)
	}
}

func TestTheJSONFormOfAJobThatNeverRan(t *testing.T) {
	// Times not set are left out, and findings and lanes are empty, never null.
	h := reconcile.EvaluateHealth(reconcile.Status{Job: "new", Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), NewRowsPerHour: -1},
		reconcile.HealthPolicy{})
	got, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "health_never_ran.json", append(got, '\n'))
}
