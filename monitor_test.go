package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// countedReader answers a fixed status and coverage, and counts the reads of each.
type countedReader struct {
	st                  reconcile.Status
	statuses, coverages atomic.Int64
	lastQuery           atomic.Value // reconcile.CoverageQuery
}

func (r *countedReader) Status(_ context.Context, job string) (reconcile.Status, error) {
	r.statuses.Add(1)
	st := r.st
	st.Job = job
	return st, nil
}

func (r *countedReader) Coverage(_ context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	r.coverages.Add(1)
	r.lastQuery.Store(q)
	return reconcile.Coverage{Job: job, Rows: make([]int64, len(q.Ages)+1)}, nil
}

func newMonitor(t *testing.T, cfg reconcile.MonitorConfig) *reconcile.Monitor {
	t.Helper()
	m, err := reconcile.NewMonitor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Each job is judged by its own policy, whoever asks: the health endpoint, the console and
// the metrics all read the Monitor's JobHealth.
func TestAMonitorJudgesEachJobByItsOwnPolicy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := &countedReader{st: reconcile.Status{Now: now, Lag: 2 * time.Hour, Rows: 10, CycleStartedAt: now.Add(-time.Minute),
		LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 10}}
	m := newMonitor(t, reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "hot", Status: r, Policy: reconcile.HealthPolicy{LagSLO: time.Hour}},
		{Name: "cold", Status: r},
	}})
	if got := m.Jobs(); strings.Join(got, ",") != "hot,cold" {
		t.Fatalf("Jobs() = %q", got)
	}
	hs := m.Health(context.Background())
	if len(hs) != 2 || hs[0].Job != "hot" || hs[1].Job != "cold" || hs[0].Err != nil || hs[1].Err != nil {
		t.Fatalf("Health() = %+v", hs)
	}
	if hs[0].Health.OK || !hs[1].Health.OK {
		t.Errorf("hot (SLO 1h) OK=%v, cold (SLO 72h) OK=%v; want hot failing on its lag of 2h and cold healthy", hs[0].Health.OK, hs[1].Health.OK)
	}
	if hs[0].Policy.LagSLO != time.Hour || !reflect.DeepEqual(hs[1].Policy, reconcile.HealthPolicy{}.WithDefaults()) {
		t.Errorf("policies %+v and %+v; want each job's own, with its defaults", hs[0].Policy, hs[1].Policy)
	}
}

func TestAMonitorReadsCoverageThroughTheJobsStoreAndKeepsIt(t *testing.T) {
	t.Parallel()
	r := &countedReader{}
	m := newMonitor(t, reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "covered", Status: r},
		{Name: "judged", Judge: func(context.Context, reconcile.HealthPolicy) reconcile.Health { return reconcile.Health{OK: true} }},
		{Name: "statusOnly", Status: statusReader(reconcile.Status{})},
	}})
	ctx := context.Background()
	q := reconcile.CoverageQuery{Ages: []time.Duration{time.Hour, 24 * time.Hour}, Days: 14}
	for range 3 {
		cov, err := m.Coverage(ctx, "covered", q)
		if err != nil || cov.Job != "covered" || len(cov.Rows) != 3 {
			t.Fatalf("Coverage(covered) = %+v, %v", cov, err)
		}
	}
	if n := r.coverages.Load(); n != 1 {
		t.Errorf("%d coverage reads for three asks within the TTL, want 1", n)
	}
	if _, err := m.Coverage(ctx, "covered", reconcile.CoverageQuery{Ages: []time.Duration{time.Minute}}); err != nil || r.coverages.Load() != 2 {
		t.Errorf("another query: %v, %d reads; want a read of its own", err, r.coverages.Load())
	}
	m.Forget()
	if _, err := m.Coverage(ctx, "covered", q); err != nil || r.coverages.Load() != 3 {
		t.Errorf("after Forget: %v, %d reads; want a new read", err, r.coverages.Load())
	}
	for _, job := range []string{"judged", "statusOnly"} {
		if _, err := m.Coverage(ctx, job, q); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Coverage(%s) = %v; want errors.ErrUnsupported", job, err)
		}
	}
	if _, err := m.Coverage(ctx, "unknown", q); err == nil || errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Coverage(unknown) = %v; want an error of its own", err)
	}
}

// The surfaces share one read per job: health probes, the console's overview and scrapes at
// once cost one read while it is kept.
func TestEverySurfaceSharesTheMonitorsReads(t *testing.T) {
	t.Parallel()
	r := &countedReader{}
	m := newMonitor(t, reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{{Name: "a", Status: r}, {Name: "b", Status: r}}})
	h, err := reconcile.NewHealthHandler(m)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { get(h, "GET", "/healthz") })
		wg.Go(func() { m.Health(context.Background()) })
	}
	wg.Wait()
	if n := r.statuses.Load(); n != 2 {
		t.Errorf("%d status reads, want one per job (2)", n)
	}
}

func TestAWaitThatRunsOutIsAnErrorAndLogged(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	stuck := stuckReader{release: make(chan struct{})}
	defer close(stuck.release)
	m := newMonitor(t, reconcile.MonitorConfig{Timeout: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		Jobs: []reconcile.MonitorJob{{Name: "stuck", Status: stuck}}})
	hs := m.Health(context.Background())
	if hs[0].Err == nil || hs[0].Health.Job != "stuck" || hs[0].Health.OK {
		t.Fatalf("Health() = %+v; want stuck unknown", hs)
	}
	if !strings.Contains(logged.String(), "job=stuck") || !strings.Contains(logged.String(), "not read within 10ms") {
		t.Errorf("log %q; want the wait that ran out logged with the job", logged.String())
	}
}
