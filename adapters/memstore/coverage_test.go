package memstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

func TestCoverageBucketsRowsAndSamplesOpenFindings(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := &testClock{now: start}
	s := memstore.New[int64, string](memstore.Options{Now: clock.Now})
	// Ages at the bounds: a row exactly an hour old is in the first bucket, a nanosecond
	// older in the second; a row created in the future (within reconcile.MaxClockSkew, so
	// judged) has not waited yet.
	for i, age := range []time.Duration{time.Hour, time.Hour + 1, 6 * time.Hour, 72*time.Hour + time.Second, -time.Minute} {
		created := start.Add(-age)
		s.Put(memstore.Row[int64, string]{Key: int64(i + 1), ExternalID: fmt.Sprint("pi_", i+1), Local: "paid", CreatedAt: created, UpdatedAt: created})
	}
	q := reconcile.CoverageQuery{Ages: []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour}, Days: 4}
	cov, err := s.Coverage(ctx, "sweep", q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{2, 2, 0, 0, 1}; !slices.Equal(cov.Rows, want) || cov.Estimated || cov.Unknown != "" || !cov.Now.Equal(start) {
		t.Fatalf("never verified: %+v; want Rows %v by creation, exact", cov, want)
	}

	// A cycle verifies every row and finds pi_2 canceled; the finding is resolved 30 hours later.
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled", "pi_3": "succeeded", "pi_4": "succeeded", "pi_5": "succeeded"})
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 10}
	if _, err := reconcile.RunBatch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	clock.now = start.Add(30 * time.Hour)
	fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep"})
	if err != nil || len(fs) != 1 {
		t.Fatalf("findings %v, %v; want one", fs, err)
	}
	if err := s.ResolveFinding(ctx, fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "test"}); err != nil {
		t.Fatal(err)
	}
	clock.now = start.Add(50 * time.Hour)
	cov, err = s.Coverage(ctx, "sweep", q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 0, 0, 5, 0}; !slices.Equal(cov.Rows, want) {
		t.Fatalf("50 hours after the cycle: Rows %v; want %v", cov.Rows, want)
	}
	// Samples at -22h (before the finding), +2h and +26h (open), +50h (resolved at +30h).
	var open []int
	for i, o := range cov.Open {
		open = append(open, o.Open)
		if want := clock.now.Add(-time.Duration(3-i) * 24 * time.Hour); !o.At.Equal(want) {
			t.Errorf("sample %d at %v; want %v", i, o.At, want)
		}
	}
	if want := []int{0, 1, 1, 0}; !slices.Equal(open, want) {
		t.Fatalf("Open %v; want %v", open, want)
	}
	if cov, _ := s.Coverage(ctx, "other", q); !slices.Equal(cov.Rows, []int64{0, 0, 0, 4, 1}) || cov.Open[1].Open != 0 {
		t.Fatalf("another job: %+v; want its rows by creation (49 to 122 hours), and none of sweep's findings", cov)
	}
}

func TestCoverageRejectsABadQuery(t *testing.T) {
	s := memstore.New[int64, string](memstore.Options{})
	_, err := s.Coverage(context.Background(), "sweep", reconcile.CoverageQuery{Ages: []time.Duration{time.Hour, time.Minute}})
	if err == nil || !strings.HasPrefix(err.Error(), "memstore: coverage of job sweep: reconcile: coverage query: Ages[1]") {
		t.Fatalf("Coverage = %v; want the query's error", err)
	}
}
