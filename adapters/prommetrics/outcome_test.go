package prommetrics_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
)

// A batch's outcome label is what reconcile.AfterBatch decides, named as the label's values
// say: a batch that committed rows is ok (a rate limit or an outage after them included), one
// that wrote nothing is deferred, a lost race is a conflict and a failure an error.
func TestBatchesAreCountedByWhatAfterBatchDecides(t *testing.T) {
	tests := []struct {
		name string
		rep  reconcile.Report
		err  error
		want string
	}{
		{"progress", reconcile.Report{Scanned: 200}, nil, prommetrics.OutcomeOK},
		{"a wrap", reconcile.Report{Scanned: 3, Wrapped: true}, nil, prommetrics.OutcomeWrapped},
		{"a wrap whose last answer was a 429", reconcile.Report{Scanned: 3, Wrapped: true, RateLimited: true, RetryAfter: time.Minute}, nil, prommetrics.OutcomeWrapped},
		{"a 429 after some rows", reconcile.Report{Scanned: 6, RateLimited: true, RetryAfter: time.Second}, nil, prommetrics.OutcomeOK},
		{"an outage after some rows", reconcile.Report{Scanned: 2, Unavailable: true}, nil, prommetrics.OutcomeOK},
		{"a 429 on the first row", reconcile.Report{Deferred: true, RateLimited: true}, nil, prommetrics.OutcomeDeferred},
		{"an outage with nothing written", reconcile.Report{Deferred: true, Unavailable: true}, nil, prommetrics.OutcomeDeferred},
		{"nothing to do now", reconcile.Report{Deferred: true}, nil, prommetrics.OutcomeDeferred},
		{"a lost race", reconcile.Report{}, fmt.Errorf("reconcile: job j: %w", reconcile.ErrConcurrentRun), prommetrics.OutcomeConflict},
		{"a failure", reconcile.Report{}, errors.New("reconcile: job j: pgstore: commit: boom"), prommetrics.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := prommetrics.New(prommetrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			reg := newRegistry(t, m)
			m.BatchDone("j", tt.rep, tt.err)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			counted, total := map[string]float64{}, 0.0
			for _, mf := range mfs {
				if mf.GetName() != "reconcile_batches_total" {
					continue
				}
				for _, mm := range mf.GetMetric() {
					counted[label(mm, "outcome")] += mm.GetCounter().GetValue()
					total += mm.GetCounter().GetValue()
				}
			}
			if counted[tt.want] != 1 || total != 1 || testutil.CollectAndCount(m, "reconcile_batches_total") != 5 {
				t.Fatalf("batches by outcome %v; want one %s", counted, tt.want)
			}
		})
	}
}
