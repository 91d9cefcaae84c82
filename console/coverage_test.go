package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// coverageStore is a StatusReader and CoverageReader: each job's status is a healthy one, and
// its coverage is cov (or err), with the query's bucket count. It counts its reads and keeps
// the last query.
type coverageStore struct {
	cov reconcile.Coverage
	err error

	mu       sync.Mutex
	statuses map[string]int
	reads    map[string]int
	last     reconcile.CoverageQuery
}

func newCoverageStore(cov reconcile.Coverage) *coverageStore {
	return &coverageStore{cov: cov, statuses: map[string]int{}, reads: map[string]int{}}
}

func (s *coverageStore) Status(_ context.Context, job string) (reconcile.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[job]++
	now := time.Now()
	return reconcile.Status{Job: job, Now: now, LastCycleCompletedAt: now.Add(-time.Hour), CycleStartedAt: now.Add(-time.Hour), LastBatchAt: now.Add(-time.Minute), Lag: time.Hour}, nil
}

func (s *coverageStore) Coverage(_ context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads[job]++
	s.last = q
	if err := q.Validate(); err != nil {
		return reconcile.Coverage{}, err
	}
	if s.err != nil {
		return reconcile.Coverage{}, s.err
	}
	cov := s.cov
	cov.Job = job
	return cov, nil
}

// readsOf is how many times job's coverage was read.
func (s *coverageStore) readsOf(job string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[job]
}

// lastQuery is the query of the last Coverage.
func (s *coverageStore) lastQuery() reconcile.CoverageQuery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// statusOnly is a StatusReader that reads no coverage.
type statusOnly struct{ s *coverageStore }

func (s statusOnly) Status(ctx context.Context, job string) (reconcile.Status, error) {
	return s.s.Status(ctx, job)
}

// sixBuckets is the coverage of a job with a 24h SLO: ≤1h, 1h–6h, 6h–24h, 24h–3d, 3d–7d, >7d.
var sixBuckets = reconcile.Coverage{Rows: []int64{41210, 22984, 9120, 1480, 322, 41}, Open: fortnight(time.Now(), 3, 4, 4, 6, 9, 12, 11, 8, 8, 7, 5, 5, 4, 6)}

// fortnight is daily samples of open findings ending at now, oldest first.
func fortnight(now time.Time, open ...int) []reconcile.OpenSample {
	var out []reconcile.OpenSample
	for i, n := range open {
		out = append(out, reconcile.OpenSample{At: now.Add(-time.Duration(len(open)-1-i) * 24 * time.Hour), Open: n})
	}
	return out
}

// coverageConsole serves a console over findings (none unless given) whose Monitor reads the
// job "sweep" through status, with an SLO of 24 hours, its config changed by mod.
func coverageConsole(t *testing.T, status reconcile.StatusReader, mod func(*reconcile.MonitorConfig), findings ...reconcile.Finding) *httptest.Server {
	t.Helper()
	mc := reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{{Name: "sweep", Status: status, Policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour}}}}
	if mod != nil {
		mod(&mc)
	}
	monitor, err := reconcile.NewMonitor(mc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Config{
		Store:        &memReviewer{findings: findings},
		Monitor:      monitor,
		Authenticate: headerAuth,
		Logger:       discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv
}

// overviewOf gets the overview from srv as alice, and fails the test unless it is a 200.
func overviewOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return (&world{srv: srv}).get(t, "/", "alice")
}

func TestTheOverviewChartsHowLongEachJobsRowsHaveGoneUnverified(t *testing.T) {
	t.Parallel()
	store := newCoverageStore(sixBuckets)
	body := overviewOf(t, coverageConsole(t, store, nil))
	sweep := section(t, body, "sweep")

	// The query: buckets around the job's SLO, and two weeks of open findings.
	q := store.lastQuery()
	if want := []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour, 7 * 24 * time.Hour}; !slices.Equal(q.Ages, want) || q.Days != 14 {
		t.Errorf("the overview asked %+v, want Ages %v and Days 14", q, want)
	}
	for _, want := range []string{
		// Labelled for assistive technology, with a text summary.
		`<svg class="chart" role="img" aria-labelledby="cov-0-ages-title" aria-describedby="cov-0-ages-desc"`,
		`<title id="cov-0-ages-title">Rows of job sweep by time since their last verification</title>`,
		`<desc id="cov-0-ages-desc">75,157 rows: 73,314 (98%) last verified within the SLO of 24h, 1,843 (2.5%) longer ago.</desc>`,
		// The SLO is marked, and what is past it says so in text.
		`class="slo">SLO 24h</text>`,
		`>past the SLO →</text>`,
		// Every bar carries its count.
		`class="count">41,210</text>`, `class="count">41</text>`,
		// The open findings, each day's value, with axes.
		`<title id="cov-0-open-title">Open findings of job sweep, one a day</title>`,
		`class="value">12</text>`,
		`class="axis">open findings</text>`,
		// And all of it as a table.
		`<td>6h–24h</td><td>9,120</td><td>12%</td><td>no</td>`,
		`<td>24h–3d</td><td>1,480</td><td>2.0%</td><td>yes</td>`,
	} {
		if !strings.Contains(sweep, want) {
			t.Errorf("the sweep job's overview lacks %s:\n%s", want, sweep)
		}
	}
	if n := len(regexp.MustCompile(`<g class="bar past">`).FindAllString(sweep, -1)); n != 3 {
		t.Errorf("%d bars are drawn past the SLO, want 3 (24h–3d, 3d–7d, >7d)", n)
	}
	if strings.Contains(sweep, "Estimated") {
		t.Error("an exact coverage is said to be estimated")
	}
	if strings.Contains(body, " style=") {
		t.Error("the overview has a style attribute, which its Content-Security-Policy refuses")
	}
}

func TestTheChartSaysWhatTheStoreCannotTell(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cov       reconcile.Coverage
		err       error
		want      []string
		dontWant  []string
		wantReads int
	}{
		{
			name:     "unknown",
			cov:      reconcile.Coverage{Unknown: "Available once the job completes a cycle with lag marks."},
			want:     []string{`<p class="unknown">Available once the job completes a cycle with lag marks.</p>`},
			dontWant: []string{`id="cov-0-ages"`, "SLO 24h", "Estimated"},
		},
		{
			name:     "unknown, with a key in the store's sentence",
			cov:      reconcile.Coverage{Unknown: "cannot tell: sk_live_51Habcdefghijklmnopqrstuv"},
			want:     []string{"cannot tell: [redacted key]"},
			dontWant: []string{"sk_live_"},
		},
		{
			name: "estimated",
			cov:  reconcile.Coverage{Rows: sixBuckets.Rows, Estimated: true},
			want: []string{
				`<p class="muted estimated">Estimated from the sweep's batch records; a row may show older than it is.</p>`,
				`Estimated from the sweep's batch records: a row may show older than it is.</desc>`,
			},
			dontWant: []string{`id="cov-0-open"`}, // no samples, no line
		},
		{
			name:     "a failing store",
			err:      errors.New("pgstore: coverage: connection to db.internal:5432 refused"),
			want:     []string{"The job's coverage could not be read; the error was logged."},
			dontWant: []string{"db.internal", "<svg"},
		},
		{
			name:     "a store answering another query",
			cov:      reconcile.Coverage{Rows: []int64{1, 2, 3}},
			want:     []string{"The job's coverage could not be read; the error was logged."},
			dontWant: []string{"<svg"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newCoverageStore(tt.cov)
			store.err = tt.err
			sweep := section(t, overviewOf(t, coverageConsole(t, store, nil)), "sweep")
			if !strings.Contains(sweep, `<span class="ok">OK</span>`) {
				t.Errorf("the job's health depends on its coverage:\n%s", sweep)
			}
			for _, want := range tt.want {
				if !strings.Contains(sweep, want) {
					t.Errorf("the overview lacks %s:\n%s", want, sweep)
				}
			}
			for _, bad := range tt.dontWant {
				if strings.Contains(sweep, bad) {
					t.Errorf("the overview shows %s:\n%s", bad, sweep)
				}
			}
		})
	}
}

func TestAJobWhoseStoreReadsNoCoverageHasNoChart(t *testing.T) {
	t.Parallel()
	withCov, without := newCoverageStore(sixBuckets), statusOnly{newCoverageStore(sixBuckets)}
	body := overviewOf(t, coverageConsole(t, withCov, func(c *reconcile.MonitorConfig) {
		c.Jobs = append(c.Jobs, reconcile.MonitorJob{Name: "plain", Status: without})
	}))
	if sweep := section(t, body, "sweep"); !strings.Contains(sweep, `id="cov-0-ages"`) {
		t.Errorf("the job whose store reads coverage has no chart:\n%s", sweep)
	}
	plain := section(t, body, "plain")
	if strings.Contains(plain, "<svg") || strings.Contains(plain, "Coverage") || !strings.Contains(plain, `<span class="ok">OK</span>`) {
		t.Errorf("the job whose store reads no coverage shows a chart or an error:\n%s", plain)
	}

	// MonitorJob.Coverage gives the chart to a status reader that reads none.
	explicit := newCoverageStore(sixBuckets)
	body = overviewOf(t, coverageConsole(t, statusOnly{newCoverageStore(reconcile.Coverage{})}, func(c *reconcile.MonitorConfig) { c.Jobs[0].Coverage = explicit }))
	if sweep := section(t, body, "sweep"); !strings.Contains(sweep, `id="cov-0-ages"`) || explicit.readsOf("sweep") != 1 {
		t.Errorf("MonitorJob.Coverage was read %d times, want 1, and the chart:\n%s", explicit.readsOf("sweep"), sweep)
	}
}

func TestTheChartIsBoundedByTheJobsSLO(t *testing.T) {
	t.Parallel()
	// A job with the default SLO (3 days), another with 15 minutes: the bounds follow each.
	store := newCoverageStore(reconcile.Coverage{Rows: make([]int64, 6)})
	var mu sync.Mutex
	queries := map[string]reconcile.CoverageQuery{}
	reader := coverageFunc(func(ctx context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
		mu.Lock()
		queries[job] = q
		mu.Unlock()
		return store.Coverage(ctx, job, q)
	})
	body := overviewOf(t, coverageConsole(t, store, func(c *reconcile.MonitorConfig) {
		c.Jobs = []reconcile.MonitorJob{
			{Name: "slow", Status: store, Coverage: reader},
			{Name: "fast", Status: store, Coverage: reader, Policy: reconcile.HealthPolicy{LagSLO: 15 * time.Minute}},
		}
	}))
	for job, want := range map[string]string{"slow": "SLO 3d", "fast": "SLO 15m"} {
		if s := section(t, body, job); !strings.Contains(s, `class="slo">`+want+`</text>`) {
			t.Errorf("job %s's chart lacks %q:\n%s", job, want, s)
		}
	}
	if got, want := queries["fast"].Ages, []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour}; !slices.Equal(got, want) {
		t.Errorf("the 15-minute job's buckets are %v, want %v", got, want)
	}
}

// coverageFunc is a function as a reconcile.CoverageReader.
type coverageFunc func(context.Context, string, reconcile.CoverageQuery) (reconcile.Coverage, error)

func (f coverageFunc) Coverage(ctx context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	return f(ctx, job, q)
}

func TestTheCoverageIsReadOnceAViewAndKeptLikeTheStatus(t *testing.T) {
	t.Parallel()
	open := reconcile.Finding{ID: 7, Job: "sweep", RecordID: "1", Kind: "missed_success", DetectedAt: time.Now().Add(-time.Hour)}
	tests := []struct {
		name          string
		ttl           time.Duration
		views         int
		wantBeforeOne int // reads after the views
		wantAfter     int // reads after a resolution and one more view
	}{
		{"kept for the status's TTL", 0, 3, 1, 2},
		{"read on every view without a TTL", -1, 3, 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newCoverageStore(sixBuckets)
			srv := coverageConsole(t, store, func(c *reconcile.MonitorConfig) { c.TTL = tt.ttl }, open)
			w := &world{srv: srv}
			for range tt.views {
				w.get(t, "/", "alice")
			}
			if n := store.readsOf("sweep"); n != tt.wantBeforeOne {
				t.Fatalf("%d views read the coverage %d times, want %d", tt.views, n, tt.wantBeforeOne)
			}
			// A resolution clears what is kept: the open findings changed.
			r := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", open.ID), "alice",
				url.Values{"csrf_token": {w.token(t, open.ID, "alice")}, "resolution": {"fixed"}})
			if r.status != http.StatusSeeOther {
				t.Fatalf("resolve = %d:\n%s", r.status, r.body)
			}
			w.get(t, "/", "alice")
			if n := store.readsOf("sweep"); n != tt.wantAfter {
				t.Errorf("after a resolution and a view, %d reads, want %d", n, tt.wantAfter)
			}
		})
	}
}
