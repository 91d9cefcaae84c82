package prommetrics_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
)

// A sweep over three payments kept in memory, counted: one in sync, one whose success webhook
// was lost (repaired automatically), one the external system could not be asked about.
func Example() {
	metrics, err := prommetrics.New(prommetrics.Options{})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry() // a server would expose it with promhttp.HandlerFor
	if err := metrics.Register(reg); err != nil {
		panic(err)
	}

	ctx := context.Background()
	store := memstore.New[int64, string](memstore.Options{AggregateType: "payment"})
	hourAgo := time.Now().Add(-time.Hour)
	store.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: hourAgo})
	store.Put(memstore.Row[int64, string]{Key: 2, ExternalID: "pi_2", Local: "pending", UpdatedAt: hourAgo})
	store.Put(memstore.Row[int64, string]{Key: 3, ExternalID: "pi_3", Local: "paid", UpdatedAt: hourAgo})
	gateway := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		if id == "pi_3" {
			return "", reconcile.ErrUnavailable // a 503, say
		}
		return "succeeded", nil
	})
	classifier, err := reconcile.NewRuleTable(
		func(l string) string { return l }, func(e string) string { return e },
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
	)
	if err != nil {
		panic(err)
	}

	cfg := reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, Gateway: gateway, Classifier: classifier,
		Observer: metrics, // every job of the process may share one Metrics
	}
	for {
		rep, err := reconcile.RunBatch(ctx, cfg)
		if err != nil {
			panic(err)
		}
		if rep.Wrapped {
			break
		}
	}

	printScrape(reg, "reconcile_batches_total", "reconcile_rows_total", "reconcile_gateway_calls_total",
		"reconcile_findings_opened_total", "reconcile_commands_queued_total")
	// Output:
	// reconcile_batches_total{job="payments",outcome="wrapped"} 1
	// reconcile_commands_queued_total{job="payments"} 1
	// reconcile_findings_opened_total{job="payments"} 1
	// reconcile_gateway_calls_total{class="ok",job="payments"} 2
	// reconcile_gateway_calls_total{class="unavailable",job="payments"} 1
	// reconcile_rows_total{job="payments",verdict="in_sync"} 1
	// reconcile_rows_total{job="payments",verdict="repairable"} 1
	// reconcile_rows_total{job="payments",verdict="unverifiable"} 1
}

// statusFunc adapts a function to reconcile.StatusReader; pgstore.Store is the real one.
type statusFunc func(ctx context.Context, job string) (reconcile.Status, error)

func (f statusFunc) Status(ctx context.Context, job string) (reconcile.Status, error) {
	return f(ctx, job)
}

// Health gauges, read from the store at scrape time: a job whose external system has been
// failing for four days is unhealthy on two counts.
func Example_health() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := statusFunc(func(ctx context.Context, job string) (reconcile.Status, error) {
		return reconcile.Status{Job: job, Now: now, Lag: 96 * time.Hour, Rows: 5000,
			CycleStartedAt: now.Add(-time.Hour), LastCycleCompletedAt: now.Add(-2 * time.Hour), CyclesCompleted: 41,
			LastBatchScanned: 200, LastBatchUnverifiable: 180}, nil
	})
	// The Monitor the health endpoint and the review console use too.
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "payments", Status: store, Policy: reconcile.HealthPolicy{LagSLO: 72 * time.Hour}},
	}})
	if err != nil {
		panic(err)
	}
	metrics, err := prommetrics.New(prommetrics.Options{Monitor: monitor})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		panic(err)
	}

	printScrape(reg, "reconcile_healthy", "reconcile_health_check_ok", "reconcile_lag_seconds",
		"reconcile_last_batch_unverifiable_ratio")
	// Output:
	// reconcile_health_check_ok{check="cycle_age",job="payments"} 1
	// reconcile_health_check_ok{check="lag",job="payments"} 0
	// reconcile_health_check_ok{check="last_attempt",job="payments"} 1
	// reconcile_health_check_ok{check="since_last_cycle",job="payments"} 1
	// reconcile_health_check_ok{check="stale_findings",job="payments"} 1
	// reconcile_health_check_ok{check="unverifiable",job="payments"} 0
	// reconcile_healthy{job="payments"} 0
	// reconcile_lag_seconds{job="payments"} 345600
	// reconcile_last_batch_unverifiable_ratio{job="payments"} 0.9
}

// outboxSays is a reconcile.OutboxReader over fixed stats; pgoutbox.Outbox is the real one.
type outboxSays reconcile.OutboxStats

func (o outboxSays) Stats(context.Context) (reconcile.OutboxStats, error) {
	return reconcile.OutboxStats(o), nil
}

// The repair side: the dispatcher's attempts (Metrics is its Observer) and the outbox, read at
// scrape time: a backlog waiting an hour and a command that went dead.
func Example_repairs() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	metrics, err := prommetrics.New(prommetrics.Options{
		Outbox: outboxSays{Now: now, Queued: 42, OldestQueuedAt: now.Add(-time.Hour),
			Dead: map[string]int64{"ApplyPaymentSucceeded": 1}},
	})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		panic(err)
	}
	// pgoutbox.Config{Observer: metrics} makes the dispatcher call this after every attempt.
	metrics.CommandAttempted(reconcile.CommandAttempt{Command: "ApplyPaymentSucceeded", Outcome: reconcile.AttemptRetry})
	metrics.CommandAttempted(reconcile.CommandAttempt{Command: "ApplyPaymentSucceeded", Outcome: reconcile.AttemptDead})

	printScrape(reg, "reconcile_dispatcher_attempts_total", "reconcile_outbox_queued",
		"reconcile_outbox_oldest_queued_age_seconds", "reconcile_dead_commands")
	// Output:
	// reconcile_dead_commands{command="ApplyPaymentSucceeded"} 1
	// reconcile_dispatcher_attempts_total{command="ApplyPaymentSucceeded",outcome="dead"} 1
	// reconcile_dispatcher_attempts_total{command="ApplyPaymentSucceeded",outcome="retry"} 1
	// reconcile_outbox_oldest_queued_age_seconds 3600
	// reconcile_outbox_queued 42
}

// printScrape prints the named metrics as a scrape shows them, without comments, and without
// the counters still at zero, to keep the examples short.
func printScrape(g prometheus.Gatherer, names ...string) {
	text, err := testutil.GatherAndFormat(g, expfmt.TypeTextPlain, names...)
	if err != nil {
		panic(err)
	}
	lines := bufio.NewScanner(bytes.NewReader(text))
	for lines.Scan() {
		line := lines.Text()
		isZeroCounter := strings.Contains(line, "_total{") && strings.HasSuffix(line, " 0")
		if !strings.HasPrefix(line, "#") && !isZeroCounter {
			fmt.Println(line)
		}
	}
}
