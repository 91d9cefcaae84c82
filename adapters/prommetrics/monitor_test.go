package prommetrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
)

// The metrics judge each job by its own policy, as the health endpoint does from the same
// Monitor: a hot tier with an SLO of an hour and a cold one with the default, both lagging two
// hours, are one failing and one healthy on both surfaces. (Options.Policy judged every job by
// one policy, so reconcile_healthy could say 1 while the health endpoint answered 503.)
func TestTheMetricsAndTheHealthEndpointJudgeEachJobByItsOwnPolicy(t *testing.T) {
	st := reconcile.Status{Now: t0, Lag: 2 * time.Hour, Rows: 10, CycleStartedAt: t0.Add(-time.Minute),
		LastBatchAt: t0.Add(-time.Minute), LastBatchScanned: 10}
	hot, cold := st, st
	hot.Job, cold.Job = "hot", "cold"
	reader := &fakeStatus{status: map[string]reconcile.Status{"hot": hot, "cold": cold}}
	monitor := newMonitor(t, reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "hot", Status: reader, Policy: reconcile.HealthPolicy{LagSLO: time.Hour}},
		{Name: "cold", Status: reader},
	}})
	m, err := prommetrics.New(prommetrics.Options{Monitor: monitor})
	if err != nil {
		t.Fatal(err)
	}
	err = testutil.GatherAndCompare(newRegistry(t, m), strings.NewReader(`
# HELP reconcile_healthy 1 if every health check passes, else 0; absent when the status could not be read.
# TYPE reconcile_healthy gauge
reconcile_healthy{job="cold"} 1
reconcile_healthy{job="hot"} 0
# HELP reconcile_lag_slo_seconds The lag the job's health is judged against (HealthPolicy.LagSLO), for alerts and dashboards to compare lag_seconds with.
# TYPE reconcile_lag_slo_seconds gauge
reconcile_lag_slo_seconds{job="cold"} 259200
reconcile_lag_slo_seconds{job="hot"} 3600
`), "reconcile_healthy", "reconcile_lag_slo_seconds")
	if err != nil {
		t.Error(err)
	}
	health, err := reconcile.NewHealthHandler(monitor)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	health.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz?format=text", nil))
	if body := w.Body.String(); !strings.Contains(body, "hot: FAILING") || !strings.Contains(body, "cold: OK") {
		t.Errorf("the health endpoint says:\n%s", body)
	}
	if n := reader.readsOf("hot") + reader.readsOf("cold"); n != 2 {
		t.Errorf("%d status reads for a scrape and a probe, want one per job (2)", n)
	}
}

// A batch the metrics observe drops what the Monitor keeps for every surface: the health
// endpoint's next answer reads the store again too.
func TestAnObservedBatchDropsTheStatusTheHealthEndpointWouldShow(t *testing.T) {
	reader := &fakeStatus{status: map[string]reconcile.Status{"payments": {Job: "payments", Now: t0, CycleStartedAt: t0}}}
	monitor := newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "payments"), Now: func() time.Time { return t0 }})
	m, err := prommetrics.New(prommetrics.Options{Monitor: monitor})
	if err != nil {
		t.Fatal(err)
	}
	health, err := reconcile.NewHealthHandler(monitor)
	if err != nil {
		t.Fatal(err)
	}
	probe := func() {
		health.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	}
	probe()
	probe()
	if n := reader.readsOf("payments"); n != 1 {
		t.Fatalf("%d reads after two probes, want 1", n)
	}
	m.BatchDone("payments", reconcile.Report{Job: "payments"}, nil)
	probe()
	if n := reader.readsOf("payments"); n != 2 {
		t.Fatalf("%d reads after a batch and a probe, want 2", n)
	}
}
