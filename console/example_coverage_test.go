package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// coverageOf is a reconcile.CoverageReader of the host's own, for a store that reads none
// (pgstore and memstore do; the console finds theirs without Config.Coverage).
type coverageOf map[string][]int64

func (c coverageOf) Coverage(_ context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	rows, ok := c[job]
	if !ok || len(rows) != len(q.Ages)+1 {
		return reconcile.Coverage{Job: job, Unknown: "This job's rows are not counted."}, nil
	}
	return reconcile.Coverage{Job: job, Now: time.Now(), Rows: rows}, nil
}

func ExampleConfig_coverage() {
	store := &memStore{}
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{{
		Name: "payments", Status: store,
		// The chart's buckets are drawn around the SLO: ≤1h, 1h–6h, 6h–24h, 24h–3d, 3d–7d, >7d.
		Policy:   reconcile.HealthPolicy{LagSLO: 24 * time.Hour},
		Coverage: coverageOf{"payments": {900, 50, 30, 15, 4, 1}}, // a pgstore.Store reads its own
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := console.New(console.Config{
		Store:        store,
		Monitor:      monitor,
		Authenticate: func(*http.Request) (string, error) { return "alice", nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	page := rec.Body.String()

	fmt.Println("chart:", strings.Contains(page, `<svg class="chart" role="img"`))
	fmt.Println("SLO marked:", strings.Contains(page, `class="slo">SLO 24h</text>`))
	// The same figures as a table, for people without the picture.
	for _, m := range regexp.MustCompile(`<tr><td>([^<]+)</td><td>([^<]+)</td><td>[^<]+</td><td>(yes|no)</td></tr>`).FindAllStringSubmatch(page, -1) {
		fmt.Printf("%s: %s rows, past the SLO: %s\n", html.UnescapeString(m[1]), m[2], m[3])
	}
	// Output:
	// chart: true
	// SLO marked: true
	// ≤1h: 900 rows, past the SLO: no
	// 1h–6h: 50 rows, past the SLO: no
	// 6h–24h: 30 rows, past the SLO: no
	// 24h–3d: 15 rows, past the SLO: yes
	// 3d–7d: 4 rows, past the SLO: yes
	// >7d: 1 rows, past the SLO: yes
}
