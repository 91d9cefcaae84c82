package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// A Runner tells the host when a job's cycle completes, and a HealthHandler serves the job's
// health as a Monitor judges it, here over a store in memory: 200 while it is healthy, 503 with the reasons once a row
// has gone unverified past the lag SLO.
func ExampleHealthHandler() {
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return clock }})
	store.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: clock.Add(-time.Hour)})
	sweep, err := reconcile.New(reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store,
		Gateway:    reconcile.GatewayFunc[string](func(context.Context, string) (string, error) { return "succeeded", nil }),
		Classifier: reconcile.ClassifierFunc[string, string](func(string, string) reconcile.Decision { return reconcile.Decision{Verdict: reconcile.InSync} }),
	})
	if err != nil {
		panic(err)
	}

	// Run the job until its first cycle completes: OnCycle says when, no polling.
	cycled := make(chan struct{}, 1)
	runner, err := reconcile.NewRunner(reconcile.RunnerConfig{
		Jobs: []reconcile.RunnerJob{{Name: "payments", Batches: sweep, Interval: time.Millisecond}},
		OnCycle: func(e reconcile.TickEnd) {
			select {
			case cycled <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		panic(err)
	}
	if err := runner.Start(context.Background()); err != nil {
		panic(err)
	}
	<-cycled
	if err := runner.Stop(context.Background()); err != nil {
		panic(err)
	}

	// One Monitor per process: the health endpoint, the review console and the metrics share
	// its reads and its policies. Its clock here is the example's, which jumps a day.
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "payments", Status: store, Policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour}},
	}, Now: func() time.Time { return clock }})
	if err != nil {
		panic(err)
	}
	health, err := reconcile.NewHealthHandler(monitor)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", health)

	ask := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/healthz?format=text", nil))
		return w
	}
	clock = clock.Add(time.Hour) // the store's clock; nothing runs meanwhile
	w := ask()
	first, _, _ := strings.Cut(w.Body.String(), "\n")
	fmt.Println(w.Code, first)
	clock = clock.Add(25 * time.Hour)
	w = ask()
	fmt.Print(w.Code, " ", w.Body)
	// Output:
	// 200 OK: 1 of 1 jobs healthy
	// 503 FAILING: 1 of 1 jobs not healthy
	//
	// payments: FAILING (4 of 7 checks)
	//   FAIL  lag               26h0m0s      limit 24h0m0s
	//   FAIL  since_last_cycle  26h0m0s      limit 24h0m0s
	//   FAIL  cycle_age         26h0m0s      limit 24h0m0s
	//   ok    last_attempt      succeeded    limit succeeded
	//   FAIL  since_last_batch  26h0m0s      limit 12h0m0s
	//   ok    unverifiable      0% (0 of 1)  limit 25%
	//   ok    stale_findings    0            limit 0
	//   - lag: a row has gone 26h0m0s without being verified, over the SLO of 24h0m0s
	//   - since_last_cycle: the last cycle completed 26h0m0s ago, more than 24h0m0s
	//   - cycle_age: the current cycle has run 26h0m0s, more than 24h0m0s
	//   - since_last_batch: no batch has committed rows for 26h0m0s (the scheduler stopped, or every batch fails)
}
