package prommetrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/reconcilekit/reconcile/internal/leaktest"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// policyKinds are the kinds of the tests' policies, as a host lists stripepolicy.Kinds().
var policyKinds = []string{"missed_success", "missed_cancel", "paid_locally_not_externally"}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// answer is what the fake gateway says about one external id.
type answer struct {
	state string
	err   error
}

func classifier(t *testing.T) reconcile.Classifier[string, string] {
	t.Helper()
	c, err := reconcile.NewRuleTable(
		func(l string) string { return l }, func(e string) string { return e },
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refuse is a Limiter that never grants a call, as one paused by a rate limit does.
type refuse struct{}

func (refuse) Wait(context.Context) error {
	return &reconcile.RateLimitError{RetryAfter: time.Minute}
}

// newMonitor returns the Monitor of cfg.
func newMonitor(t *testing.T, cfg reconcile.MonitorConfig) *reconcile.Monitor {
	t.Helper()
	m, err := reconcile.NewMonitor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jobsOf are the jobs names, each read through r and judged by p.
func jobsOf(r reconcile.StatusReader, p reconcile.HealthPolicy, names ...string) []reconcile.MonitorJob {
	jobs := make([]reconcile.MonitorJob, len(names))
	for i, n := range names {
		jobs[i] = reconcile.MonitorJob{Name: n, Status: r, Policy: p}
	}
	return jobs
}

func newRegistry(t *testing.T, m *prommetrics.Metrics) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// histogramCount returns the sample count of the histogram name{job}.
func histogramCount(t *testing.T, g prometheus.Gatherer, name, job string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "job") == job {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	t.Fatalf("no histogram %s{job=%q}", name, job)
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestEventMetricsCountWhatTheBatchesDid(t *testing.T) {
	ctx := context.Background()
	m, err := prommetrics.New(prommetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)

	store := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return t0 }})
	old := t0.Add(-time.Hour)
	for _, r := range []memstore.Row[int64, string]{
		{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: old},    // in sync
		{Key: 2, ExternalID: "pi_2", Local: "paid", UpdatedAt: old},    // in sync
		{Key: 3, ExternalID: "pi_3", Local: "pending", UpdatedAt: old}, // repairable, one command
		{Key: 4, ExternalID: "pi_4", Local: "paid", UpdatedAt: old},    // unavailable: unverifiable
		{Key: 5, ExternalID: "pi_5", Local: "paid", UpdatedAt: old},    // not found: needs review
		{Key: 6, ExternalID: "pi_6", Local: "paid", UpdatedAt: t0},     // in flight, not asked
		{Key: 7, ExternalID: "pi_7", Local: "paid", UpdatedAt: old},    // 429: calls stop, asked again next batch
		{Key: 8, ExternalID: "pi_8", Local: "paid", UpdatedAt: old},    // not asked until the next batch
	} {
		store.Put(r)
	}
	answers := map[string]answer{
		"pi_1": {state: "succeeded"},
		"pi_2": {state: "succeeded"},
		"pi_3": {state: "succeeded"},
		"pi_4": {err: fmt.Errorf("stripe: 503: %w", reconcile.ErrUnavailable)},
		"pi_5": {err: reconcile.ErrNotFound},
		"pi_7": {err: &reconcile.RateLimitError{RetryAfter: 2 * time.Second}},
		"pi_8": {state: "succeeded"},
	}
	gateway := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		a, ok := answers[id]
		if !ok {
			t.Errorf("asked about %s", id)
		}
		if id == "pi_7" {
			answers[id] = answer{state: "succeeded"} // the 429 passes
		}
		return a.state, a.err
	})
	cfg := reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, Gateway: gateway, Classifier: classifier(t),
		Observer: m, Concurrency: 1, // in key order, so the 429 stops the calls before pi_8
	}

	// 1: stopped by a 429 at pi_7: the six rows before it are committed.
	rep, err := reconcile.RunBatch(ctx, cfg)
	if err != nil || !rep.RateLimited || rep.Scanned != 6 {
		t.Fatalf("first batch: %+v, %v", rep, err)
	}
	// 2: pi_7 and pi_8, asked now, in a short read: the cycle wraps.
	if rep, err := reconcile.RunBatch(ctx, cfg); err != nil || !rep.Wrapped || rep.Scanned != 2 {
		t.Fatalf("second batch: %+v, %v", rep, err)
	}
	// 3: the limiter grants no call: deferred, nothing written.
	cfg.Limiter = refuse{}
	if rep, err := reconcile.RunBatch(ctx, cfg); err != nil || !rep.Deferred {
		t.Fatalf("third batch: %+v, %v", rep, err)
	}
	// 4: the gateway rejects our key: the batch fails.
	cfg.Limiter = nil
	cfg.Gateway = reconcile.GatewayFunc[string](func(context.Context, string) (string, error) {
		return "", fmt.Errorf("stripe: 401: %w", reconcile.ErrAbortBatch)
	})
	if _, err := reconcile.RunBatch(ctx, cfg); !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("fourth batch: %v, want ErrAbortBatch", err)
	}

	const want = `
# HELP reconcile_batches_total Batches run, by outcome: ok, wrapped (the batch completed the cycle), deferred (the first row could not be asked, nothing written), conflict (another reconciler moved the cursor, nothing written) or error.
# TYPE reconcile_batches_total counter
reconcile_batches_total{job="payments",outcome="conflict"} 0
reconcile_batches_total{job="payments",outcome="deferred"} 1
reconcile_batches_total{job="payments",outcome="error"} 1
reconcile_batches_total{job="payments",outcome="ok"} 1
reconcile_batches_total{job="payments",outcome="wrapped"} 1
# HELP reconcile_commands_queued_total Repair commands queued by committed batches.
# TYPE reconcile_commands_queued_total counter
reconcile_commands_queued_total{job="payments"} 1
# HELP reconcile_findings_opened_total Findings opened by committed batches.
# TYPE reconcile_findings_opened_total counter
reconcile_findings_opened_total{job="payments"} 2
# HELP reconcile_gateway_calls_total Calls to the external system, by outcome class.
# TYPE reconcile_gateway_calls_total counter
reconcile_gateway_calls_total{class="abort",job="payments"} 1
reconcile_gateway_calls_total{class="canceled",job="payments"} 0
reconcile_gateway_calls_total{class="not_found",job="payments"} 1
reconcile_gateway_calls_total{class="ok",job="payments"} 5
reconcile_gateway_calls_total{class="other",job="payments"} 0
reconcile_gateway_calls_total{class="rate_limited",job="payments"} 1
reconcile_gateway_calls_total{class="review",job="payments"} 0
reconcile_gateway_calls_total{class="unavailable",job="payments"} 1
# HELP reconcile_rate_limited_batches_total Batches whose calls were stopped by a rate limit or by the limiter.
# TYPE reconcile_rate_limited_batches_total counter
reconcile_rate_limited_batches_total{job="payments"} 2
# HELP reconcile_rows_total Rows judged by successful batches, by verdict.
# TYPE reconcile_rows_total counter
reconcile_rows_total{job="payments",verdict="in_flight"} 1
reconcile_rows_total{job="payments",verdict="in_sync"} 4
reconcile_rows_total{job="payments",verdict="needs_review"} 1
reconcile_rows_total{job="payments",verdict="repairable"} 1
reconcile_rows_total{job="payments",verdict="unverifiable"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"reconcile_batches_total", "reconcile_commands_queued_total", "reconcile_findings_opened_total",
		"reconcile_gateway_calls_total", "reconcile_rate_limited_batches_total", "reconcile_rows_total",
	); err != nil {
		t.Error(err)
	}
	if n := histogramCount(t, reg, "reconcile_batch_duration_seconds", "payments"); n != 4 {
		t.Errorf("batch_duration_seconds count = %d, want 4 (every batch, the failed one too)", n)
	}
	if n := histogramCount(t, reg, "reconcile_gateway_call_duration_seconds", "payments"); n != 9 {
		t.Errorf("gateway_call_duration_seconds count = %d, want 9 (one per Fetch)", n)
	}
	// Without Options.Status there are no health gauges and no status errors to count.
	if n, err := testutil.GatherAndCount(reg, "reconcile_healthy", "reconcile_status_errors_total"); err != nil || n != 0 {
		t.Errorf("health series = %d, %v; want none", n, err)
	}
}

func TestGatewayCallsObservesTheMeanOfABatchFetch(t *testing.T) {
	m, err := prommetrics.New(prommetrics.Options{Namespace: "app_reconcile"})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	m.GatewayCalls("refunds", 4, 2*time.Second, reconcile.ClassOK) // a FetchBatch of four calls
	m.GatewayCalls("refunds", 0, time.Second, reconcile.ClassOK)   // no call: nothing to count

	if got := testutil.ToFloat64(mustCounter(t, reg, "app_reconcile_gateway_calls_total", "refunds", "ok")); got != 4 {
		t.Errorf("gateway_calls_total{class=ok} = %v, want 4", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "app_reconcile_gateway_call_duration_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 || h.GetSampleSum() != 0.5 {
				t.Errorf("call duration: count %d sum %v, want one observation of 0.5", h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Error("no app_reconcile_gateway_call_duration_seconds")
}

// mustCounter returns a collector holding only the counter name{job, class}, for ToFloat64.
func mustCounter(t *testing.T, g prometheus.Gatherer, name, job, class string) prometheus.Collector {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "job") == job && label(m, "class") == class {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: "copy"})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	t.Fatalf("no %s{job=%q,class=%q}", name, job, class)
	return nil
}

// fakeStatus is a StatusReader over fixed answers that counts its reads.
type fakeStatus struct {
	status map[string]reconcile.Status
	errs   map[string]error
	block  chan struct{} // if set, reads of job "slow" wait for it, ignoring ctx

	mu    sync.Mutex
	reads map[string]int
}

func (f *fakeStatus) Status(ctx context.Context, job string) (reconcile.Status, error) {
	f.mu.Lock()
	if f.reads == nil {
		f.reads = make(map[string]int)
	}
	f.reads[job]++
	f.mu.Unlock()
	if job == "slow" && f.block != nil {
		<-f.block
		return reconcile.Status{Job: job}, nil
	}
	if job == "hung" {
		<-ctx.Done()
		return reconcile.Status{}, ctx.Err()
	}
	if err := f.errs[job]; err != nil {
		return reconcile.Status{}, err
	}
	st, ok := f.status[job]
	if !ok {
		return reconcile.Status{}, fmt.Errorf("fake: no job %s", job)
	}
	return st, nil
}

func (f *fakeStatus) readsOf(job string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[job]
}

var healthNames = []string{
	"reconcile_lag_seconds", "reconcile_lag_slo_seconds", "reconcile_covered_rows", "reconcile_cycle_age_seconds", "reconcile_since_last_cycle_seconds",
	"reconcile_cycles_completed_total", "reconcile_last_batch_unverifiable_ratio", "reconcile_open_findings",
	"reconcile_stale_findings", "reconcile_healthy", "reconcile_health_check_ok", "reconcile_status_errors_total",
}

func TestHealthGaugesJudgeEachJobAtScrapeTime(t *testing.T) {
	reader := &fakeStatus{
		status: map[string]reconcile.Status{
			// An outage: nothing verified for 100 hours, the last batch all unverifiable.
			"stuck": {Job: "stuck", Now: t0, Lag: 100 * time.Hour, Rows: 1000,
				CycleStartedAt: t0.Add(-2 * time.Hour), LastCycleCompletedAt: t0.Add(-3 * time.Hour), CyclesCompleted: 7,
				LastBatchAt: t0.Add(-time.Minute), LastBatchScanned: 200, LastBatchUnverifiable: 200,
				OpenFindings: map[string]int{"missed_success": 3, "paid_locally_not_externally": 1}},
			// Healthy, in its first cycle.
			"fine": {Job: "fine", Now: t0, Lag: time.Hour, Rows: 50, CycleStartedAt: t0.Add(-30 * time.Minute),
				LastBatchScanned: 100, LastBatchUnverifiable: 1},
		},
		errs: map[string]error{"broken": errors.New("pgstore: connection refused")},
	}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "stuck", "broken", "fine")}), Kinds: policyKinds})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)

	const want = `
# HELP reconcile_cycle_age_seconds How long the current cycle has been running; absent before the job's first batch.
# TYPE reconcile_cycle_age_seconds gauge
reconcile_cycle_age_seconds{job="fine"} 1800
reconcile_cycle_age_seconds{job="stuck"} 7200
# HELP reconcile_cycles_completed_total Cycles the job has completed, as the store counts them.
# TYPE reconcile_cycles_completed_total counter
reconcile_cycles_completed_total{job="fine"} 0
reconcile_cycles_completed_total{job="stuck"} 7
# HELP reconcile_health_check_ok 1 if the health check passes, else 0. A fan-out's accounts are one check, "account:*", failing when one of them fails (the health endpoint names which).
# TYPE reconcile_health_check_ok gauge
reconcile_health_check_ok{check="cycle_age",job="fine"} 1
reconcile_health_check_ok{check="cycle_age",job="stuck"} 1
reconcile_health_check_ok{check="lag",job="fine"} 1
reconcile_health_check_ok{check="lag",job="stuck"} 0
reconcile_health_check_ok{check="last_attempt",job="fine"} 1
reconcile_health_check_ok{check="last_attempt",job="stuck"} 1
reconcile_health_check_ok{check="since_last_batch",job="stuck"} 1
reconcile_health_check_ok{check="since_last_cycle",job="stuck"} 1
reconcile_health_check_ok{check="stale_findings",job="fine"} 1
reconcile_health_check_ok{check="stale_findings",job="stuck"} 1
reconcile_health_check_ok{check="unverifiable",job="fine"} 1
reconcile_health_check_ok{check="unverifiable",job="stuck"} 0
# HELP reconcile_healthy 1 if every health check passes, else 0; absent when the status could not be read.
# TYPE reconcile_healthy gauge
reconcile_healthy{job="fine"} 1
reconcile_healthy{job="stuck"} 0
# HELP reconcile_lag_seconds Longest time any of the job's rows has gone without being verified (the primary SLO).
# TYPE reconcile_lag_seconds gauge
reconcile_lag_seconds{job="fine"} 3600
reconcile_lag_seconds{job="stuck"} 360000
# HELP reconcile_lag_slo_seconds The lag the job's health is judged against (HealthPolicy.LagSLO), for alerts and dashboards to compare lag_seconds with.
# TYPE reconcile_lag_slo_seconds gauge
reconcile_lag_slo_seconds{job="broken"} 259200
reconcile_lag_slo_seconds{job="fine"} 259200
reconcile_lag_slo_seconds{job="stuck"} 259200
# HELP reconcile_last_batch_unverifiable_ratio Share of the last non-empty batch's rows that could not be checked.
# TYPE reconcile_last_batch_unverifiable_ratio gauge
reconcile_last_batch_unverifiable_ratio{job="fine"} 0.01
reconcile_last_batch_unverifiable_ratio{job="stuck"} 1
# HELP reconcile_open_findings Open findings, by kind; a kind the exporter does not know (Options.Kinds) counts as unexpected.
# TYPE reconcile_open_findings gauge
reconcile_open_findings{job="stuck",kind="missed_success"} 3
reconcile_open_findings{job="stuck",kind="paid_locally_not_externally"} 1
# HELP reconcile_covered_rows Rows the job covers.
# TYPE reconcile_covered_rows gauge
reconcile_covered_rows{job="fine"} 50
reconcile_covered_rows{job="stuck"} 1000
# HELP reconcile_since_last_cycle_seconds Time since the last completed cycle; absent until one completes.
# TYPE reconcile_since_last_cycle_seconds gauge
reconcile_since_last_cycle_seconds{job="stuck"} 10800
# HELP reconcile_stale_findings Findings open longer than the store's threshold: repairs that never applied, reviews nobody did.
# TYPE reconcile_stale_findings gauge
reconcile_stale_findings{job="fine"} 0
reconcile_stale_findings{job="stuck"} 0
# HELP reconcile_status_errors_total Failed reads of a job's status at scrape time; that scrape has none of the job's health gauges.
# TYPE reconcile_status_errors_total counter
reconcile_status_errors_total{job="broken"} 1
reconcile_status_errors_total{job="fine"} 0
reconcile_status_errors_total{job="stuck"} 0
`
	// GatherAndCompare fails if the scrape itself does: a failed read must not fail it.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), healthNames...); err != nil {
		t.Fatal(err)
	}

	// Failed reads are not cached: every scrape asks again and counts again.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP reconcile_status_errors_total Failed reads of a job's status at scrape time; that scrape has none of the job's health gauges.
# TYPE reconcile_status_errors_total counter
reconcile_status_errors_total{job="broken"} 2
reconcile_status_errors_total{job="fine"} 0
reconcile_status_errors_total{job="stuck"} 0
`), "reconcile_status_errors_total"); err != nil {
		t.Error(err)
	}
	if got := [3]int{reader.readsOf("stuck"), reader.readsOf("fine"), reader.readsOf("broken")}; got != [3]int{1, 1, 2} {
		t.Errorf("reads of stuck, fine, broken = %v, want [1 1 2]", got)
	}
}

func TestStatusCache(t *testing.T) {
	st := reconcile.Status{Job: "payments", Now: t0, CycleStartedAt: t0}
	tests := []struct {
		name      string
		ttl       time.Duration
		advance   []time.Duration // before each scrape after the first
		wantReads []int           // after each scrape
	}{
		{"two scrapes within the default TTL read once, a third after it reads again", 0,
			[]time.Duration{10 * time.Second, 25 * time.Second}, []int{1, 1, 2}},
		{"a scrape exactly at the TTL reads again", 0,
			[]time.Duration{30 * time.Second}, []int{1, 2}},
		{"a custom TTL is honoured", time.Minute,
			[]time.Duration{45 * time.Second, 20 * time.Second}, []int{1, 1, 2}},
		{"a negative TTL reads on every scrape", -1,
			[]time.Duration{0, 0}, []int{1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := &fakeStatus{status: map[string]reconcile.Status{"payments": st}}
			now := t0
			m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "payments"),
				TTL: tt.ttl, Now: func() time.Time { return now }})})
			if err != nil {
				t.Fatal(err)
			}
			reg := newRegistry(t, m)
			for i, want := range tt.wantReads {
				if i > 0 {
					now = now.Add(tt.advance[i-1])
				}
				if n, err := testutil.GatherAndCount(reg, "reconcile_healthy"); err != nil || n != 1 {
					t.Fatalf("scrape %d: %d healthy series, %v", i+1, n, err)
				}
				if got := reader.readsOf("payments"); got != want {
					t.Errorf("after scrape %d: %d reads, want %d", i+1, got, want)
				}
			}
		})
	}
}

func TestSlowStatusReadsAreBoundedByTheTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // lets the read that ignores its context end, for goleak
	reader := &fakeStatus{
		status: map[string]reconcile.Status{"ok": {Job: "ok", Now: t0, CycleStartedAt: t0}},
		block:  release,
	}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "hung", "slow", "ok"),
		Timeout: 50 * time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	start := time.Now()
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP reconcile_healthy 1 if every health check passes, else 0; absent when the status could not be read.
# TYPE reconcile_healthy gauge
reconcile_healthy{job="ok"} 1
# HELP reconcile_status_errors_total Failed reads of a job's status at scrape time; that scrape has none of the job's health gauges.
# TYPE reconcile_status_errors_total counter
reconcile_status_errors_total{job="hung"} 1
reconcile_status_errors_total{job="ok"} 0
reconcile_status_errors_total{job="slow"} 1
`), "reconcile_healthy", "reconcile_status_errors_total")
	if err != nil {
		t.Error(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("scrape took %s with a 50ms StatusTimeout", d)
	}
}

// rendezvous is a StatusReader and an OutboxReader each of whose reads answers only once the
// other kind of read has begun: read one after the other, the first waits out its timeout.
type rendezvous struct{ status, outbox chan struct{} }

func (r rendezvous) Status(ctx context.Context, job string) (reconcile.Status, error) {
	close(r.status)
	select {
	case <-r.outbox:
		return reconcile.Status{Job: job, Now: t0, CycleStartedAt: t0}, nil
	case <-ctx.Done():
		return reconcile.Status{}, ctx.Err()
	}
}

func (r rendezvous) Stats(ctx context.Context) (reconcile.OutboxStats, error) {
	close(r.outbox)
	select {
	case <-r.status:
		return reconcile.OutboxStats{Now: t0}, nil
	case <-ctx.Done():
		return reconcile.OutboxStats{}, ctx.Err()
	}
}

// The status and the outbox are read at once, so that a database that hangs holds the scrape
// for one StatusTimeout, not two: two defaults (5 s each) are Prometheus's default
// scrape_timeout, and a scrape that times out has no series at all, so neither
// ReconcileStatusUnreadable nor any other alert of the mixin fires.
func TestTheStatusAndTheOutboxAreReadTogether(t *testing.T) {
	r := rendezvous{status: make(chan struct{}), outbox: make(chan struct{})}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(r, reconcile.HealthPolicy{}, "a")}), Outbox: r})
	if err != nil {
		t.Fatal(err)
	}
	err = testutil.GatherAndCompare(newRegistry(t, m), strings.NewReader(`
# HELP reconcile_healthy 1 if every health check passes, else 0; absent when the status could not be read.
# TYPE reconcile_healthy gauge
reconcile_healthy{job="a"} 1
# HELP reconcile_outbox_queued Repair commands queued and not yet applied: due, waiting to retry, or running.
# TYPE reconcile_outbox_queued gauge
reconcile_outbox_queued 0
`), "reconcile_healthy", "reconcile_outbox_queued")
	if err != nil {
		t.Error(err)
	}
}

func TestObserverIsSafeForConcurrentUse(t *testing.T) {
	reader := &fakeStatus{status: map[string]reconcile.Status{"a": {Job: "a", Now: t0}}}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "a"), TTL: -1})})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			job := fmt.Sprintf("job%d", w%2)
			for range each {
				m.GatewayCalls(job, 1, time.Millisecond, reconcile.ClassOK)
				m.BatchDone(job, reconcile.Report{Job: job, Scanned: 1,
					Verdicts: map[reconcile.Verdict]int{reconcile.InSync: 1}}, nil)
			}
		}()
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP reconcile_rows_total Rows judged by successful batches, by verdict.
# TYPE reconcile_rows_total counter
reconcile_rows_total{job="job0",verdict="in_flight"} 0
reconcile_rows_total{job="job0",verdict="in_sync"} 400
reconcile_rows_total{job="job0",verdict="needs_review"} 0
reconcile_rows_total{job="job0",verdict="repairable"} 0
reconcile_rows_total{job="job0",verdict="unverifiable"} 0
reconcile_rows_total{job="job1",verdict="in_flight"} 0
reconcile_rows_total{job="job1",verdict="in_sync"} 400
reconcile_rows_total{job="job1",verdict="needs_review"} 0
reconcile_rows_total{job="job1",verdict="repairable"} 0
reconcile_rows_total{job="job1",verdict="unverifiable"} 0
`), "reconcile_rows_total"); err != nil {
		t.Error(err)
	}
}

func TestInvalidUTF8LabelsDoNotPanic(t *testing.T) {
	bad := "kind\xff"
	reader := &fakeStatus{status: map[string]reconcile.Status{"a": {Job: "a", Now: t0,
		OpenFindings: map[string]int{bad: 1, "kind\xfe": 2}}}}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "a")})})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	m.BatchDone("job\xff", reconcile.Report{}, nil)
	m.GatewayCalls("job\xff", 1, time.Millisecond, "class\xff")
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP reconcile_open_findings Open findings, by kind; a kind the exporter does not know (Options.Kinds) counts as unexpected.
# TYPE reconcile_open_findings gauge
reconcile_open_findings{job="a",kind="unexpected"} 3
`), "reconcile_open_findings"); err != nil {
		t.Error(err)
	}
}

func TestMetricNamesPassPromlint(t *testing.T) {
	reader := &fakeStatus{status: map[string]reconcile.Status{"a": {Job: "a", Now: t0, CycleStartedAt: t0,
		LastCycleCompletedAt: t0, OpenFindings: map[string]int{"missed_success": 1}}}}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "a")})})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	m.BatchDone("a", reconcile.Report{Verdicts: map[reconcile.Verdict]int{reconcile.InSync: 1}}, nil)
	m.GatewayCalls("a", 1, time.Millisecond, reconcile.ClassOK)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts prommetrics.Options
		want string
	}{
		{"a namespace with a dash", prommetrics.Options{Namespace: "my-app"}, "Namespace"},
		{"buckets out of order", prommetrics.Options{Buckets: []float64{1, 0.5}}, "Buckets"},
		{"empty call buckets", prommetrics.Options{CallBuckets: []float64{}}, "CallBuckets"},
		// A typed nil behind the interface passed New and panicked in the scrape's goroutine,
		// which takes the process down.
		{"a nil *AdaptiveLimiter", prommetrics.Options{Limiter: (*reconcile.AdaptiveLimiter)(nil)}, "Limiter is a nil *reconcile.AdaptiveLimiter"},
		{"a nil *rate.Limiter", prommetrics.Options{Limiter: (*rate.Limiter)(nil)}, "Limiter is a nil *rate.Limiter"},
		{"a nil *Outbox", prommetrics.Options{Outbox: (*pgoutbox.Outbox)(nil)}, "Outbox is a nil"},
		// A Monitor not made by NewMonitor has no jobs: no gauge at all, so no alert could fire.
		{"a Monitor not made by NewMonitor", prommetrics.Options{Monitor: &reconcile.Monitor{}}, "Monitor has no jobs"},
		{"an empty kind", prommetrics.Options{Kinds: []string{"missed_success", ""}}, "Kinds[1]"},
		{"an overlong kind", prommetrics.Options{Kinds: []string{strings.Repeat("k", prommetrics.MaxKindLength+1)}}, "Kinds[0]"},
		{"a kind with a newline", prommetrics.Options{Kinds: []string{"missed\nsuccess"}}, "Kinds[0]"},
		{"a kind that is not UTF-8", prommetrics.Options{Kinds: []string{"missed\xff"}}, "Kinds[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := prommetrics.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "prommetrics: ") {
				t.Fatalf("New = %v, %v; want an error about %s", m, err, tt.want)
			}
		})
	}
}

func TestRegisteringTwiceFails(t *testing.T) {
	m, err := prommetrics.New(prommetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	var already prometheus.AlreadyRegisteredError
	if err := m.Register(reg); !errors.As(err, &already) {
		t.Errorf("second Register = %v, want AlreadyRegisteredError", err)
	}
}

func TestEachTierIsReadThroughItsOwnReader(t *testing.T) {
	shared := &fakeStatus{status: map[string]reconcile.Status{"hot": {Job: "hot", Rows: 1}, "cold": {Job: "cold", Rows: 1}}}
	cold := &fakeStatus{status: map[string]reconcile.Status{"cold": {Job: "cold", Rows: 41}}}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{TTL: -1,
		Jobs: []reconcile.MonitorJob{{Name: "hot", Status: shared}, {Name: "cold", Status: cold}}})})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP reconcile_covered_rows Rows the job covers.
# TYPE reconcile_covered_rows gauge
reconcile_covered_rows{job="cold"} 41
reconcile_covered_rows{job="hot"} 1
`), "reconcile_covered_rows"); err != nil {
		t.Fatal(err)
	}
	if shared.readsOf("cold") != 0 {
		t.Fatal("the cold tier was read through the shared reader")
	}
}

func TestAnObservedBatchOrRepairDropsTheCachedStatus(t *testing.T) {
	reader := &fakeStatus{status: map[string]reconcile.Status{"payments": {Job: "payments", Now: t0, CycleStartedAt: t0}}}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "payments"), Now: func() time.Time { return t0 }})})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, m)
	scrape := func() {
		t.Helper()
		if n, err := testutil.GatherAndCount(reg, "reconcile_healthy"); err != nil || n != 1 {
			t.Fatalf("scrape: %d healthy series, %v", n, err)
		}
	}
	scrape()
	scrape()
	if got := reader.readsOf("payments"); got != 1 {
		t.Fatalf("%d reads after two scrapes with no write between, want 1", got)
	}
	m.BatchDone("payments", reconcile.Report{Job: "payments"}, nil)
	scrape()
	if got := reader.readsOf("payments"); got != 2 {
		t.Fatalf("%d reads after a batch, want 2", got)
	}
	m.CommandAttempted(reconcile.CommandAttempt{Command: "ApplyPaymentSucceeded", Outcome: reconcile.AttemptDone})
	scrape()
	scrape()
	if got := reader.readsOf("payments"); got != 3 {
		t.Fatalf("%d reads after an applied repair and two scrapes, want 3", got)
	}
}
