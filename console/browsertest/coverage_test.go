package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// busyJob is a payments job of a busy table as its store reports it, a StatusReader and a
// CoverageReader: 79,547 rows, most verified within the day, a few thousand past the 24h SLO
// (an outage of the gateway last week left 41 rows unverified for more than 7 days), and a
// fortnight of open findings. It stands in for pgstore's coverage, which reads the lag marks
// of a real sweep, so that the browser sees a chart of every kind of bar.
type busyJob struct{ now time.Time }

// busyRows are the rows of busyJob by time since their last verification, for a 24h SLO:
// ≤1h, 1h–6h, 6h–24h, 24h–3d, 3d–7d, >7d.
var busyRows = []int64{41210, 22984, 9120, 4870, 1322, 41}

// busyOpen are busyJob's open findings a day, the last today: a spike of amount mismatches
// a week ago, mostly resolved since.
var busyOpen = []int{3, 4, 4, 6, 9, 12, 11, 8, 8, 7, 5, 5, 4, 6}

func (j busyJob) Status(_ context.Context, job string) (reconcile.Status, error) {
	return reconcile.Status{
		Job: job, Now: j.now, Lag: 9*24*time.Hour + 2*time.Hour, Rows: 79547, NewRowsPerHour: 410,
		CycleStartedAt: j.now.Add(-19 * time.Hour), LastCycleCompletedAt: j.now.Add(-19 * time.Hour), CyclesCompleted: 31,
		LastBatchAt: j.now.Add(-90 * time.Second), LastBatchScanned: 500, LastBatchUnverifiable: 4,
		OpenFindings:      map[string]int{"missed_success": 1, "paid_locally_not_externally": 2, "amount_mismatch": 3},
		OldestOpenFinding: j.now.Add(-6 * 24 * time.Hour), StaleFindings: 3,
	}, nil
}

func (j busyJob) Coverage(_ context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	if len(q.Ages) != len(busyRows)-1 || q.Days != len(busyOpen) {
		return reconcile.Coverage{}, fmt.Errorf("busyJob: coverage: asked %d bounds and %d days, have %d buckets and %d days", len(q.Ages), q.Days, len(busyRows), len(busyOpen))
	}
	cov := reconcile.Coverage{Job: job, Now: j.now, Rows: slices.Clone(busyRows), Estimated: true}
	for i, n := range busyOpen {
		cov.Open = append(cov.Open, reconcile.OpenSample{At: j.now.Add(-time.Duration(len(busyOpen)-1-i) * 24 * time.Hour), Open: n})
	}
	return cov, nil
}

// violations collects the browser's reports of Content-Security-Policy violations, each as
// the page's URL and the report.
type violations struct {
	mu   sync.Mutex
	seen [][2]string
}

func (v *violations) listen(ev any) {
	if e, ok := ev.(*log.EventEntryAdded); ok && strings.Contains(e.Entry.Text, "Content Security Policy") {
		v.mu.Lock()
		v.seen = append(v.seen, [2]string{e.Entry.URL, e.Entry.Text})
		v.mu.Unlock()
	}
}

// on returns the reports of the pages whose URL starts with prefix.
func (v *violations) on(prefix string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, s := range v.seen {
		if strings.HasPrefix(s[0], prefix) {
			out = append(out, s[1])
		}
	}
	return out
}

// waitFor is an action that waits until the page at url was reported.
func (v *violations) waitFor(url string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		for len(v.on(url)) == 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("no violation of %s was reported: %w", url, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		return nil
	})
}

// TestTheOverviewChartsCoverageInABrowser opens the overview in headless Chromium with a busy
// job beside the sweep world's: its coverage chart is drawn (an image named after its job,
// the SLO marked, the bars past it hatched, every count written), it breaks no rule of the
// Content-Security-Policy, and its table holds the same figures. The overview's screenshot,
// at 1000 pixels wide, is among the artifacts.
func TestTheOverviewChartsCoverageInABrowser(t *testing.T) {
	b := newSession(t, "alice")
	w := newWorld(t, func(c *console.Config) {
		monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{TTL: -1, Jobs: []reconcile.MonitorJob{
			{Name: "payments", Status: busyJob{now: time.Now()}, Policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour}},
			{Name: "sweep", Status: c.Store.(reconcile.StatusReader)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		c.Monitor = monitor
		c.Kinds = slices.Concat(kinds, []reconcile.KindInfo{{Kind: "amount_mismatch", Meaning: "The row's amount differs from what Stripe charged.", Money: true}})
	})
	mux := http.NewServeMux()
	mux.Handle("/review/", http.StripPrefix("/review", w.console))
	// The canary breaks the console's own policy on purpose (a style attribute): it shows that
	// the browser reports violations where the test listens for them.
	policy := httptest.NewRecorder()
	w.console.ServeHTTP(policy, httptest.NewRequest(http.MethodGet, "/", nil))
	csp := policy.Header().Get("Content-Security-Policy")
	mux.HandleFunc("/canary", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Security-Policy", csp)
		fmt.Fprint(rw, `<!doctype html><title>canary</title><p style="color:red">canary</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	v := &violations{}
	if err := chromedp.Listen(b.ctx, v.listen); err != nil {
		t.Fatal(err)
	}
	b.do("open the canary", chromedp.Navigate(srv.URL+"/canary?first"), v.waitFor(srv.URL+"/canary?first"))

	b.do("open the overview at 1000 pixels wide",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1000, Height: 900, DeviceScaleFactor: 1})
			return err
		}),
		chromedp.Navigate(srv.URL+"/review/"),
		chromedp.WaitVisible(chromedp.CSS(`#cov-0-ages`)),
		b.screenshot("overview"))

	// An image, named after its job, for assistive technology.
	nodes, err := chromedp.Run(b.ctx, chromedp.Nodes(chromedp.CSS(`#cov-0-ages`)))
	if err != nil {
		t.Fatal(err)
	}
	relatives := false
	ax, err := chromedp.Call(b.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: nodes[0].BackendNodeID, FetchRelatives: &relatives})
	if err != nil {
		t.Fatal(err)
	}
	if len(ax.Nodes) == 0 || ax.Nodes[0].Role == nil || ax.Nodes[0].Name == nil {
		t.Fatalf("the chart has no accessibility node with a role and a name: %+v", ax.Nodes)
	}
	role, name := string(ax.Nodes[0].Role.Value), string(ax.Nodes[0].Name.Value)
	if role != `"image"` || !strings.Contains(name, "Rows of job payments by time since their last verification") {
		t.Errorf("the chart's role is %s and its accessible name %s; want an image named after the payments job", role, name)
	}
	if d := ax.Nodes[0].Description; d == nil || !strings.Contains(string(d.Value), "6,233 (7.8%) longer ago") {
		t.Errorf("the chart's accessible description is %+v", d)
	}

	for _, check := range []struct{ what, expr string }{
		{"the chart is drawn at a size", `(() => { const r = document.querySelector("#cov-0-ages").getBoundingClientRect(); return r.width > 300 && r.height > 100 })()`},
		{"the style block's rules for the chart apply (its hash is the policy's)", `getComputedStyle(document.querySelector("#cov-0-ages")).borderTopWidth === "1px"`},
		{"the SLO is marked", `document.querySelector("#cov-0-ages text.slo").textContent === "SLO 24h" && document.querySelector("#cov-0-ages line.slo").getAttribute("stroke-dasharray") !== null`},
		{"the bars past the SLO are labelled", `document.querySelector("#cov-0-ages text.past-label").textContent.startsWith("past the SLO")`},
		{"six bars, three hatched past the SLO", `document.querySelectorAll("#cov-0-ages g.bar").length === 6 && [...document.querySelectorAll("#cov-0-ages g.past rect")].filter(r => getComputedStyle(r).fill.startsWith("url(")).length === 3`},
		{"the largest bar has a height", `document.querySelector("#cov-0-ages g.bar rect").getBBox().height > 100`},
		{"every bar's count is written", `[...document.querySelectorAll("#cov-0-ages text.count")].map(t => t.textContent).join(" ") === "41,210 22,984 9,120 4,870 1,322 41"`},
		{"each day's open findings are written", `[...document.querySelectorAll("#cov-0-open text.value")].map(t => t.textContent).join(" ") === "3 4 4 6 9 12 11 8 8 7 5 5 4 6"`},
		{"the estimate is said", `document.querySelector("#cov-0 .estimated").textContent.includes("a row may show older than it is")`},
		{"the table has a row a bucket", `document.querySelectorAll("#cov-0 table.ages tbody tr").length === 6`},
	} {
		if !b.eval(check.expr) {
			t.Errorf("%s: %s is false", check.what, check.expr)
		}
	}

	// The canary again: the browser reports in order, so once its violation is in, any of
	// the overview's is too.
	b.do("open the canary again", chromedp.Navigate(srv.URL+"/canary?again"), v.waitFor(srv.URL+"/canary?again"))
	if got := v.on(srv.URL + "/review/"); len(got) > 0 {
		t.Errorf("the overview broke the Content-Security-Policy:\n%s", strings.Join(got, "\n"))
	}
}
