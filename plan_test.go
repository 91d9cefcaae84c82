package reconcile_test

import (
	"math"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

func TestPlanSchedule(t *testing.T) {
	tests := []struct {
		name       string
		in         reconcile.PlanInput
		wantCycle  time.Duration
		wantMaxLag time.Duration
		wantKeeps  bool
		wantMeets  bool
		wantBound  string
	}{
		{"the seed's schedule, 120,000 rows at 200 a batch 12 times an hour, takes 601 batches: 50 hours 5 minutes",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12}, 50*time.Hour + 5*time.Minute, 50*time.Hour + 5*time.Minute, true, true, "schedule"},
		{"5 requests a second for 120,000 rows one call each takes about 6.7 hours",
			reconcile.PlanInput{Rows: 120000, RequestsPerSecond: 5}, 6*time.Hour + 40*time.Minute, 6*time.Hour + 40*time.Minute, true, true, "rate budget"},
		{"the same budget with a bulk gateway at 0.011 calls a row takes under 5 minutes",
			reconcile.PlanInput{Rows: 120000, RequestsPerSecond: 5, CallsPerRow: 0.011}, 4*time.Minute + 24*time.Second, 4*time.Minute + 24*time.Second, true, true, "rate budget"},
		{"the lower of schedule and budget bounds the cycle",
			reconcile.PlanInput{Rows: 120000, BatchSize: 1000, BatchesPerHour: 60, RequestsPerSecond: 5}, 6*time.Hour + 40*time.Minute, 6*time.Hour + 40*time.Minute, true, true, "rate budget"},
		{"new rows do not lengthen the cycle under way, but a new row waits for the rest of it and the whole next one: 50h05m × (2 + 400/2400)",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, NewRowsPerHour: 400}, 50*time.Hour + 5*time.Minute, 108*time.Hour + 30*time.Minute + 50*time.Second, true, false, "schedule"},
		{"the checks fall behind when new rows arrive as fast as rows are checked (B×R = G): every cycle ends, each longer than the last",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, NewRowsPerHour: 2400}, 50*time.Hour + 5*time.Minute, time.Duration(math.MaxInt64), false, false, "schedule"},
		{"a cycle longer than the SLO misses it",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, LagSLO: 24 * time.Hour}, 50*time.Hour + 5*time.Minute, 50*time.Hour + 5*time.Minute, true, false, "schedule"},
		{"an empty table takes one (empty) batch",
			reconcile.PlanInput{Rows: 0, BatchSize: 200, BatchesPerHour: 12}, 5 * time.Minute, 5 * time.Minute, true, true, "schedule"},
		{"500 rows at 200 a batch once an hour take 3 batches, the last one short",
			reconcile.PlanInput{Rows: 500, BatchSize: 200, BatchesPerHour: 1}, 3 * time.Hour, 3 * time.Hour, true, true, "schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := reconcile.PlanSchedule(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if p.CycleTime != tt.wantCycle || p.MaxLag != tt.wantMaxLag || p.KeepsUp != tt.wantKeeps || p.MeetsSLO != tt.wantMeets || p.BoundBy != tt.wantBound {
				t.Fatalf("plan %+v; want cycle %v, max lag %v, keeps up %v, meets SLO %v, bound by %s", p, tt.wantCycle, tt.wantMaxLag, tt.wantKeeps, tt.wantMeets, tt.wantBound)
			}
			if p.Verdict == "" {
				t.Fatal("no verdict sentence")
			}
		})
	}
}

func TestPlanScheduleRejectsInputsThatBoundNothing(t *testing.T) {
	for _, in := range []reconcile.PlanInput{
		{Rows: 10},
		{Rows: 10, BatchesPerHour: 12},
		{Rows: -1, RequestsPerSecond: 5},
		{Rows: 10, RequestsPerSecond: math.NaN()},
		{Rows: 10, RequestsPerSecond: math.Inf(1)},
	} {
		if _, err := reconcile.PlanSchedule(in); err == nil {
			t.Errorf("PlanSchedule(%+v) succeeded", in)
		}
	}
}

func TestPlanScheduleOfAnEndlessCycleDoesNotOverflowIntoHealth(t *testing.T) {
	// 10 million rows gaining on arrivals by 0.01 rows an hour: a billion hours.
	p, err := reconcile.PlanSchedule(reconcile.PlanInput{Rows: 10_000_000, BatchSize: 100, BatchesPerHour: 1, NewRowsPerHour: 99.99})
	if err != nil {
		t.Fatal(err)
	}
	if p.MeetsSLO || p.CycleTime <= 0 {
		t.Fatalf("plan %+v; want a huge positive cycle time that misses the SLO", p)
	}
}
