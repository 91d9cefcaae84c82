package reconcile_test

import (
	"math"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

func TestPlanCoverage(t *testing.T) {
	tests := []struct {
		name          string
		in            reconcile.PlanInput
		wantCycle     time.Duration
		wantCompletes bool
		wantMeets     bool
		wantBound     string
	}{
		{"the seed's schedule, 120,000 rows at 200 a batch 12 times an hour, takes 50 hours",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12}, 50 * time.Hour, true, true, "schedule"},
		{"5 requests a second for 120,000 rows one call each takes about 6.7 hours",
			reconcile.PlanInput{Rows: 120000, RequestsPerSecond: 5}, 6*time.Hour + 40*time.Minute, true, true, "rate budget"},
		{"the same budget with a bulk gateway at 0.011 calls a row takes under 5 minutes",
			reconcile.PlanInput{Rows: 120000, RequestsPerSecond: 5, CallsPerRow: 0.011}, 4*time.Minute + 24*time.Second, true, true, "rate budget"},
		{"the lower of schedule and budget bounds the cycle",
			reconcile.PlanInput{Rows: 120000, BatchSize: 1000, BatchesPerHour: 60, RequestsPerSecond: 5}, 6*time.Hour + 40*time.Minute, true, true, "rate budget"},
		{"new rows slow the cycle: 2,400 checked and 400 new an hour",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, NewRowsPerHour: 400}, 60 * time.Hour, true, true, "schedule"},
		{"a cycle never completes when new rows arrive as fast as rows are checked (B×R = G)",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, NewRowsPerHour: 2400}, 0, false, false, "schedule"},
		{"a cycle longer than the SLO misses it",
			reconcile.PlanInput{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, LagSLO: 24 * time.Hour}, 50 * time.Hour, true, false, "schedule"},
		{"an empty table completes at once",
			reconcile.PlanInput{Rows: 0, BatchSize: 200, BatchesPerHour: 12}, 0, true, true, "schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := reconcile.PlanCoverage(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if p.CycleTime != tt.wantCycle || p.Completes != tt.wantCompletes || p.MeetsSLO != tt.wantMeets || p.BoundBy != tt.wantBound {
				t.Fatalf("plan %+v; want cycle %v, completes %v, meets SLO %v, bound by %s", p, tt.wantCycle, tt.wantCompletes, tt.wantMeets, tt.wantBound)
			}
			if p.Verdict == "" {
				t.Fatal("no verdict sentence")
			}
		})
	}
}

func TestPlanCoverageRejectsInputsThatBoundNothing(t *testing.T) {
	for _, in := range []reconcile.PlanInput{
		{Rows: 10},
		{Rows: 10, BatchesPerHour: 12},
		{Rows: -1, RequestsPerSecond: 5},
		{Rows: 10, RequestsPerSecond: math.NaN()},
		{Rows: 10, RequestsPerSecond: math.Inf(1)},
	} {
		if _, err := reconcile.PlanCoverage(in); err == nil {
			t.Errorf("PlanCoverage(%+v) succeeded", in)
		}
	}
}

func TestPlanCoverageOfAnEndlessCycleDoesNotOverflowIntoHealth(t *testing.T) {
	// 10 million rows gaining on arrivals by 0.01 rows an hour: a billion hours.
	p, err := reconcile.PlanCoverage(reconcile.PlanInput{Rows: 10_000_000, BatchSize: 100, BatchesPerHour: 1, NewRowsPerHour: 99.99})
	if err != nil {
		t.Fatal(err)
	}
	if p.MeetsSLO || p.CycleTime <= 0 {
		t.Fatalf("plan %+v; want a huge positive cycle time that misses the SLO", p)
	}
}
