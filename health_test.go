package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

func TestEvaluateHealth(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	healthy := reconcile.Status{
		Job: "sweep", Now: now, Lag: 30 * time.Hour, Rows: 1000,
		CycleStartedAt: now.Add(-2 * time.Hour), LastCycleCompletedAt: now.Add(-2 * time.Hour), CyclesCompleted: 4,
		LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 200, LastBatchUnverifiable: 2,
	}
	tests := []struct {
		name       string
		change     func(*reconcile.Status)
		policy     reconcile.HealthPolicy
		wantFailed []string // names of failing checks
	}{
		{"a job within every limit is healthy", func(*reconcile.Status) {}, reconcile.HealthPolicy{}, nil},
		{"lag over the 72h default fails", func(s *reconcile.Status) { s.Lag = 73 * time.Hour }, reconcile.HealthPolicy{}, []string{"lag"}},
		{"lag over a configured SLO fails", func(*reconcile.Status) {}, reconcile.HealthPolicy{LagSLO: 24 * time.Hour}, []string{"lag"}},
		{"a last batch that verified nothing fails as unverifiable even with lag in bounds",
			func(s *reconcile.Status) { s.LastBatchUnverifiable = 200 }, reconcile.HealthPolicy{}, []string{"unverifiable"}},
		{"a job that never ran fails", func(s *reconcile.Status) {
			s.CycleStartedAt, s.LastCycleCompletedAt, s.LastBatchScanned, s.LastBatchUnverifiable = time.Time{}, time.Time{}, 0, 0
		}, reconcile.HealthPolicy{}, []string{"cycle_age"}},
		{"a cycle running past the limit fails", func(s *reconcile.Status) {
			s.CycleStartedAt, s.LastCycleCompletedAt = now.Add(-80*time.Hour), now.Add(-80*time.Hour)
		}, reconcile.HealthPolicy{}, []string{"since_last_cycle", "cycle_age"}},
		{"stale findings fail", func(s *reconcile.Status) { s.StaleFindings = 3 }, reconcile.HealthPolicy{}, []string{"stale_findings"}},
		{"a failure after the last good batch fails, however fresh the lag", func(s *reconcile.Status) {
			s.LastFailureAt, s.LastFailure = now.Add(-time.Second), "invalid API key"
		}, reconcile.HealthPolicy{}, []string{"last_attempt"}},
		{"a failure before the last good batch is history", func(s *reconcile.Status) {
			s.LastFailureAt, s.LastFailure = now.Add(-time.Hour), "invalid API key"
		}, reconcile.HealthPolicy{}, nil},
		{"no batch committed for longer than half the SLO fails", func(s *reconcile.Status) {
			s.LastBatchAt = now.Add(-40 * time.Hour)
		}, reconcile.HealthPolicy{}, []string{"since_last_batch"}},
		{"the unverifiable check can be turned off", func(s *reconcile.Status) { s.LastBatchUnverifiable = 200 },
			reconcile.HealthPolicy{MaxUnverifiableRatio: -1}, nil},
		{"stale findings can be tolerated", func(s *reconcile.Status) { s.StaleFindings = 3 }, reconcile.HealthPolicy{MaxStaleFindings: -1}, nil},
		{"a schedule that keeps up passes the plan", func(s *reconcile.Status) { s.Rows = 120000 },
			reconcile.HealthPolicy{Schedule: &reconcile.PlanInput{BatchSize: 200, BatchesPerHour: 12}}, nil},
		{"a schedule slower than new rows arrive fails the plan", func(s *reconcile.Status) { s.Rows, s.NewRowsPerHour = 120000, 2400 },
			reconcile.HealthPolicy{Schedule: &reconcile.PlanInput{BatchSize: 200, BatchesPerHour: 12}}, []string{"plan"}},
		{"a schedule whose cycle outlasts the SLO fails the plan", func(s *reconcile.Status) { s.Rows = 120000 },
			reconcile.HealthPolicy{LagSLO: 48 * time.Hour, Schedule: &reconcile.PlanInput{BatchSize: 200, BatchesPerHour: 12}}, []string{"plan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := healthy
			tt.change(&st)
			h := reconcile.EvaluateHealth(st, tt.policy)
			var failed []string
			for _, c := range h.Checks {
				if !c.OK {
					failed = append(failed, c.Name)
					if !strings.HasPrefix(c.Reason, c.Name+":") {
						t.Errorf("check %s fails with reason %q; want it to name the check", c.Name, c.Reason)
					}
				} else if c.Reason != "" {
					t.Errorf("passing check %s has reason %q", c.Name, c.Reason)
				}
			}
			if strings.Join(failed, ",") != strings.Join(tt.wantFailed, ",") || h.OK != (len(tt.wantFailed) == 0) {
				t.Fatalf("failed checks %v (OK %v), want %v; %s", failed, h.OK, tt.wantFailed, h)
			}
			if !h.OK && !strings.Contains(h.String(), "FAILING") {
				t.Fatalf("String() = %q", h.String())
			}
		})
	}
}

// recordingObserver records what the engine reports.
type recordingObserver struct {
	calls   map[string]int
	batches []reconcile.Report
	errs    []error
}

func (o *recordingObserver) GatewayCalls(_ string, calls int, _ time.Duration, class string) {
	o.calls[class] += calls
}
func (o *recordingObserver) BatchDone(_ string, rep reconcile.Report, err error) {
	o.batches = append(o.batches, rep)
	o.errs = append(o.errs, err)
}

func TestTheObserverSeesEveryCallAndBatch(t *testing.T) {
	s := newStore(newClock(), 6, always("paid"))
	gw := newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) {
		switch call {
		case 2:
			return "", reconcile.ErrUnavailable
		case 3:
			return "", reconcile.ErrNotFound
		}
		return "succeeded", nil
	})
	obs := &recordingObserver{calls: map[string]int{}}
	cfg := config(s, gw)
	cfg.Observer = obs
	if _, err := reconcile.RunBatch(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if obs.calls[reconcile.ClassOK] != 4 || obs.calls[reconcile.ClassUnavailable] != 1 || obs.calls[reconcile.ClassNotFound] != 1 {
		t.Fatalf("calls by class %v; want 4 ok, 1 unavailable, 1 not_found", obs.calls)
	}
	if len(obs.batches) != 1 || obs.batches[0].Scanned != 6 || obs.errs[0] != nil {
		t.Fatalf("batches %+v, errors %v", obs.batches, obs.errs)
	}
}

func TestErrorClass(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                              reconcile.ClassOK,
		reconcile.ErrNotFound:                            reconcile.ClassNotFound,
		&reconcile.RateLimitError{}:                      reconcile.ClassRateLimited,
		reconcile.ErrUnavailable:                         reconcile.ClassUnavailable,
		reconcile.ErrAbortBatch:                          reconcile.ClassAbort,
		&reconcile.ReviewError{Kind: "x"}:                reconcile.ClassReview,
		context.DeadlineExceeded:                         reconcile.ClassCanceled,
		errors.New("something else"):                     reconcile.ClassOther,
		fmt.Errorf("wrapped: %w", reconcile.ErrNotFound): reconcile.ClassNotFound,
	} {
		if got := reconcile.ErrorClass(err); got != want {
			t.Errorf("ErrorClass(%v) = %s, want %s", err, got, want)
		}
	}
}
