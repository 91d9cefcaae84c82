package prommetrics_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// paymentsWorld makes a payments table with the given id → status rows, last changed a day
// ago, and the reconciler's tables, and returns the store over it.
func paymentsWorld(t *testing.T, rows map[int]string) (*pgxpool.Pool, *pgstore.Store[string]) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day',
		updated_at timestamptz NOT NULL DEFAULT now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	for id, status := range rows {
		if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) VALUES ($1, $2, $3)`, id, "pi_"+strconv.Itoa(id), status); err != nil {
			t.Fatal(err)
		}
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		t.Fatal(err)
	}
	return pool, store
}

// series returns the value of name{labels} in a scrape, and whether it is there.
func series(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if label(m, k) != v {
					continue metrics
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// The report: after every finding was resolved, /metrics still showed
// open_findings{kind="missed_cancel"} 11 for up to 30 s, from the status cache.
func TestAResolutionThroughThisProcessShowsInTheNextScrape(t *testing.T) {
	ctx := context.Background()
	rows := map[int]string{}
	states := map[string]string{}
	for i := 1; i <= 11; i++ {
		rows[i] = "pending"
		states["pi_"+strconv.Itoa(i)] = "canceled"
	}
	_, store := paymentsWorld(t, rows)
	classifier, err := reconcile.NewRuleTable(func(s string) string { return s }, func(s string) string { return s },
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"canceled"},
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "missed_cancel"}})
	if err != nil {
		t.Fatal(err)
	}
	now := t0 // the cache's clock stands still: only a write can make it read again
	m, err := prommetrics.New(prommetrics.Options{Kinds: policyKinds,
		Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(store, reconcile.HealthPolicy{}, "payments"), Now: func() time.Time { return now }})})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "payments", Source: store, Sink: store,
		Gateway: reconciletest.NewGateway(states), Classifier: classifier, Observer: m}, 5)

	kind := map[string]string{"job": "payments", "kind": "missed_cancel"}
	if v, _ := series(t, reg, "reconcile_open_findings", kind); v != 11 {
		t.Fatalf("open_findings = %v, want 11", v)
	}
	open, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payments", Limit: 100})
	if err != nil || len(open) != 11 {
		t.Fatalf("ListFindings = %d, %v", len(open), err)
	}
	for _, f := range open[:10] { // as a reviewer does in the console
		if err := store.ResolveFinding(ctx, f.ID, reconcile.Resolution{As: "fixed", By: "ada", Note: "canceled by hand"}); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := series(t, reg, "reconcile_open_findings", kind); v != 1 {
		t.Fatalf("after resolving 10 of 11: open_findings = %v, want 1", v)
	}
	if err := store.ResolveFinding(ctx, open[10].ID, reconcile.Resolution{As: "fixed", By: "ada"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := series(t, reg, "reconcile_open_findings", kind); ok {
		t.Fatalf("after resolving all: open_findings = %v, want no series", v)
	}
}

// documented is the metric list of the package doc or the README: name → "type labels", and
// "name{label}" → its values.
type documented struct {
	metrics map[string]string
	values  map[string][]string
}

var (
	docRow   = regexp.MustCompile(`^(reconcile_\S+)\s+(counter|gauge|histogram)\s+(-|[a-z_]+(?:, [a-z_]+)*)\s{2,}\S`)
	docValue = regexp.MustCompile(`^(reconcile_[a-z_]+\{[a-z_]+\})\s{2,}(\S.*)$`)
)

// parseDocumented reads the list from lines, each stripped of prefix.
func parseDocumented(t *testing.T, text, prefix string) documented {
	t.Helper()
	d := documented{metrics: map[string]string{}, values: map[string][]string{}}
	for _, line := range strings.Split(text, "\n") {
		line, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		if m := docRow.FindStringSubmatch(line); m != nil {
			labels := strings.ReplaceAll(m[3], " ", "")
			if labels == "-" {
				labels = ""
			}
			d.metrics[m[1]] = m[2] + " " + labels
		}
		if m := docValue.FindStringSubmatch(line); m != nil {
			d.values[m[1]] = strings.Split(m[2], ", ")
		}
	}
	if len(d.metrics) == 0 || len(d.values) == 0 {
		t.Fatalf("no metric list found (%d metrics, %d label lists)", len(d.metrics), len(d.values))
	}
	return d
}

// aRealRun is a run that makes every metric appear: a payments store of four rows, a sweep
// cycle that queues two repairs and opens a finding for review, a lane step that reaches the
// end of its feed, and a dispatcher that applies one repair and buries the other, all seen by
// one Metrics with every option set. It returns the registry to scrape.
func aRealRun(t *testing.T) *prometheus.Registry {
	t.Helper()
	ctx := context.Background()
	pool, store := paymentsWorld(t, map[int]string{1: "pending", 2: "pending", 3: "paid", 4: "paid"})
	limiter, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 25})
	if err != nil {
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "canceled", "pi_4": "succeeded"})
	m, err := prommetrics.New(prommetrics.Options{Kinds: policyKinds, Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(store,
		reconcile.HealthPolicy{LagSLO: 24 * time.Hour, Schedule: &reconcile.PlanInput{BatchSize: 2, BatchesPerHour: 60}}, "payments")}),
		Outbox: pgoutbox.Outbox{DB: pool, Tables: store.Tables()}, Limiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)

	// A sweep cycle: two repairs queued, one finding for review.
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "payments", Source: store, Sink: store, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 2, Observer: m}, 10)
	// A lane step that reaches the end of its feed.
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "payments", Lane: "events",
		Feed: endFeed{}, Matcher: store, Sink: store, Classifier: reconciletest.Classifier(), Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lane.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	// The dispatcher applies one repair and buries the other.
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: store.Tables(), Observer: m, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("ApplyPaymentSucceeded", func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
		if del.AggregateID == "2" {
			return pgoutbox.Permanent(errNoSuchPayment)
		}
		return store.ResolveFindingIn(ctx, tx, del.FindingID, reconcile.Resolution{As: "fixed", By: reconcile.ResolvedByReconciler})
	}); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := d.Work(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	return reg
}

// The list in the package doc and the README is what a scrape of a real run emits: every
// name, type and label, and every value of the labels with a fixed set. (The docs listed 5
// health checks while the scrape emitted 7.)
func TestTheDocumentedMetricsAreWhatAScrapeOfARealRunEmits(t *testing.T) {
	reg := aRealRun(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	emitted := documented{metrics: map[string]string{}, values: map[string][]string{}}
	for _, mf := range mfs {
		var labels []string
		for _, met := range mf.GetMetric() {
			for _, l := range met.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
				key := mf.GetName() + "{" + l.GetName() + "}"
				v := l.GetValue()
				if strings.HasPrefix(v, "lane:") {
					v = "lane:<lane>"
				}
				if !slices.Contains(emitted.values[key], v) {
					emitted.values[key] = append(emitted.values[key], v)
				}
			}
		}
		emitted.metrics[mf.GetName()] = strings.ToLower(mf.GetType().String()) + " " + strings.Join(labels, ",")
	}
	// Label order in the docs is the order of the declaration; a scrape sorts them.
	sortLabels := func(d documented) documented {
		for name, tl := range d.metrics {
			typ, labels, _ := strings.Cut(tl, " ")
			ls := strings.Split(labels, ",")
			slices.Sort(ls)
			d.metrics[name] = typ + " " + strings.Join(ls, ",")
		}
		return d
	}
	emitted = sortLabels(emitted)

	docSrc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []struct {
		name string
		doc  documented
	}{
		{"the package doc", sortLabels(parseDocumented(t, string(docSrc), "//\t"))},
		{"the README", sortLabels(parseDocumented(t, string(readme), ""))},
	} {
		for name, tl := range emitted.metrics {
			if src.doc.metrics[name] != tl {
				t.Errorf("%s: %s is emitted as %q, documented as %q", src.name, name, tl, src.doc.metrics[name])
			}
		}
		for name := range src.doc.metrics {
			if _, ok := emitted.metrics[name]; !ok {
				t.Errorf("%s: %s is documented but the scrape has none", src.name, name)
			}
		}
		for key, want := range src.doc.values {
			got := slices.Sorted(slices.Values(emitted.values[key]))
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s documented as %v, emitted %v", src.name, key, want, got)
			}
		}
	}

	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// The run itself, as the gauges tell it.
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"reconcile_dead_commands", map[string]string{"command": "ApplyPaymentSucceeded"}, 1},
		{"reconcile_outbox_queued", nil, 0},
		{"reconcile_lag_slo_seconds", map[string]string{"job": "payments"}, 24 * 3600},
		{"reconcile_rate_budget_calls_per_second", nil, 25},
		{"reconcile_dispatcher_attempts_total", map[string]string{"command": "ApplyPaymentSucceeded", "outcome": "done"}, 1},
		{"reconcile_dispatcher_attempts_total", map[string]string{"command": "ApplyPaymentSucceeded", "outcome": "dead"}, 1},
		{"reconcile_open_findings", map[string]string{"kind": "missed_success"}, 1},
		{"reconcile_open_findings", map[string]string{"kind": "paid_locally_not_externally"}, 1},
	} {
		if v, ok := series(t, reg, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (present: %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if v, ok := series(t, reg, "reconcile_lane_lag_seconds", map[string]string{"lane": "events"}); !ok || v > 60 {
		t.Errorf("lane_lag_seconds{lane=events} = %v (present: %v); want a lane that just reached its end", v, ok)
	}
}

type endFeed struct{}

func (endFeed) Next(context.Context, string, func(context.Context) error) (reconcile.FeedPage[string], error) {
	return reconcile.FeedPage[string]{End: true}, nil
}

var errNoSuchPayment = errors.New("no such payment")
