package reconcile_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

func TestEvaluateHealthJudgesEachLane(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	gapAt := now.Add(-3 * time.Hour)
	// A sweep that passes every check of its own, so that only lanes can fail.
	sweep := func(lanes ...reconcile.LaneStatus) reconcile.Status {
		return reconcile.Status{
			Job: "payments", Now: now, Lag: time.Hour, Rows: 1000,
			CycleStartedAt: now.Add(-time.Hour), LastCycleCompletedAt: now.Add(-time.Hour), CyclesCompleted: 9,
			LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 200,
			Lanes: lanes,
		}
	}
	events := func(change func(*reconcile.LaneStatus)) reconcile.LaneStatus {
		l := reconcile.LaneStatus{Lane: "events", CreatedAt: now.Add(-30 * 24 * time.Hour), LastRunAt: now.Add(-time.Minute),
			PassesCompleted: 4000, LastEndAt: now.Add(-time.Minute)}
		if change != nil {
			change(&l)
		}
		return l
	}
	quarterHour := reconcile.HealthPolicy{MaxLaneLag: 15 * time.Minute}
	tests := []struct {
		name       string
		status     reconcile.Status
		policy     reconcile.HealthPolicy
		wantFailed []string // names of the failing lane checks
		wantReason []string // substrings of the failing checks' reasons
	}{
		{name: "a lane that reached its end a minute ago passes", status: sweep(events(nil)), policy: quarterHour},
		{name: "a lane whose last end is older than MaxLaneLag fails",
			status: sweep(events(func(l *reconcile.LaneStatus) { l.LastEndAt = now.Add(-20 * time.Minute) })), policy: quarterHour,
			wantFailed: []string{"lane:events"}, wantReason: []string{"lane:events", "last reached the end of its feed 20m0s ago", "15m0s"}},
		{name: "a lane that never ended and started longer ago than MaxLaneLag fails",
			status: sweep(events(func(l *reconcile.LaneStatus) {
				l.CreatedAt, l.LastEndAt, l.PassesCompleted = now.Add(-time.Hour), time.Time{}, 0
			})), policy: quarterHour,
			wantFailed: []string{"lane:events"}, wantReason: []string{"lane:events", "has not reached the end", "1h0m0s"}},
		{name: "a lane that never ended but started recently passes",
			status: sweep(events(func(l *reconcile.LaneStatus) {
				l.CreatedAt, l.LastEndAt, l.PassesCompleted = now.Add(-5*time.Minute), time.Time{}, 0
			})), policy: quarterHour},
		{name: "an open gap fails with its reason however caught up the lane is",
			status: sweep(events(func(l *reconcile.LaneStatus) {
				l.GapAt, l.GapReason, l.GapOpen = gapAt, "checkpoint evt_1 is older than 25 days", true
			})), policy: quarterHour,
			wantFailed: []string{"lane:events"}, wantReason: []string{"lane:events", "checkpoint evt_1 is older than 25 days", gapAt.Format(time.RFC3339)}},
		{name: "a gap a sweep cycle has covered passes",
			status: sweep(events(func(l *reconcile.LaneStatus) {
				l.GapAt, l.GapReason, l.GapOpen = gapAt, "checkpoint lost", false
			})), policy: quarterHour},
		{name: "MaxLaneLag defaults to the 72h LagSLO: 71h passes",
			status: sweep(events(func(l *reconcile.LaneStatus) { l.LastEndAt = now.Add(-71 * time.Hour) }))},
		{name: "MaxLaneLag defaults to the 72h LagSLO: 73h fails",
			status:     sweep(events(func(l *reconcile.LaneStatus) { l.LastEndAt = now.Add(-73 * time.Hour) })),
			wantFailed: []string{"lane:events"}, wantReason: []string{"72h0m0s"}},
		{name: "MaxLaneLag defaults to a configured LagSLO",
			status: sweep(events(func(l *reconcile.LaneStatus) { l.LastEndAt = now.Add(-25 * time.Hour) })),
			policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour}, wantFailed: []string{"lane:events"}, wantReason: []string{"24h0m0s"}},
		{name: "each lane is its own check",
			status: sweep(events(nil), reconcile.LaneStatus{Lane: "reverse", CreatedAt: now.Add(-48 * time.Hour),
				LastEndAt: now.Add(-2 * time.Hour), PassesCompleted: 3}),
			policy: quarterHour, wantFailed: []string{"lane:reverse"}, wantReason: []string{"lane:reverse"}},
		{name: "a job without lanes has no lane checks", status: sweep(), policy: quarterHour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := reconcile.EvaluateHealth(tt.status, tt.policy)
			var failed, lanes []string
			for _, c := range h.Checks {
				if strings.HasPrefix(c.Name, "lane:") {
					lanes = append(lanes, c.Name)
				}
				if !c.OK {
					failed = append(failed, c.Name)
				}
				if c.OK && c.Reason != "" {
					t.Errorf("check %s passes with reason %q; want none", c.Name, c.Reason)
				}
				if !c.OK && c.Reason == "" {
					t.Errorf("check %s fails without a reason", c.Name)
				}
			}
			if !slices.Equal(failed, tt.wantFailed) {
				t.Fatalf("failing checks %q; want %q (checks %+v)", failed, tt.wantFailed, h.Checks)
			}
			var want []string
			for _, l := range tt.status.Lanes {
				want = append(want, "lane:"+l.Lane)
			}
			if !slices.Equal(lanes, want) {
				t.Errorf("lane checks %q; want one per lane %q", lanes, want)
			}
			if h.OK != (len(tt.wantFailed) == 0) {
				t.Errorf("OK = %v with failing checks %q", h.OK, failed)
			}
			reasons := strings.Join(h.Reasons(), "\n")
			for _, s := range tt.wantReason {
				if !strings.Contains(reasons, s) {
					t.Errorf("reasons %q do not mention %q", reasons, s)
				}
			}
			if len(tt.wantFailed) > 0 && !strings.Contains(h.String(), "FAILING") {
				t.Errorf("String() = %q; want it FAILING", h.String())
			}
		})
	}
}

func TestLaneStatusSinceEnd(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		lane reconcile.LaneStatus
		want time.Duration
	}{
		{"since the last end", reconcile.LaneStatus{CreatedAt: now.Add(-time.Hour), LastEndAt: now.Add(-time.Minute)}, time.Minute},
		{"since the first run when it never ended", reconcile.LaneStatus{CreatedAt: now.Add(-time.Hour)}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.lane.SinceEnd(now); got != tt.want {
				t.Fatalf("SinceEnd = %v; want %v", got, tt.want)
			}
		})
	}
}
