// Package prommetrics exposes reconcile's work and health as Prometheus metrics, through
// github.com/prometheus/client_golang, in a package of its own so that the core does not
// depend on it.
//
// # Wiring it
//
// One Metrics serves every job of a process. It is a reconcile.Observer: set it as each job's
// Config.Observer and it counts batches, rows, gateway calls, findings and commands as they
// happen. It is a reconcile.CommandObserver: set it as the dispatcher's Config.Observer and it
// counts attempts by command and outcome. It is also a prometheus.Collector: register it once
// and serve the registry. Its health gauges are those of a reconcile.Monitor, the one the
// health endpoint and the review console use: each job judged by its own policy, from one
// cache. The package imports neither pgoutbox nor pgx.
//
//	var kinds []string // the policy's finding kinds, named in open_findings; any other is "unexpected"
//	for _, k := range stripepolicy.Kinds() {
//		kinds = append(kinds, k.Kind)
//	}
//	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
//		{Name: "payments", Status: payments, Policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour}},
//		{Name: "refunds", Status: refunds}, // each job its own store (*pgstore.Store)
//	}})
//	if err != nil { ... }
//	metrics, err := prommetrics.New(prommetrics.Options{
//		Monitor: monitor, // health gauges read at scrape time
//		Kinds:   kinds,
//		Outbox:  pgoutbox.Outbox{DB: pool, Tables: payments.Tables()}, // backlog and dead commands
//	})
//	if err != nil { ... }
//	reg := prometheus.NewRegistry()
//	if err := metrics.Register(reg); err != nil { ... }
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//	cfg := reconcile.Config[Payment, *stripe.PaymentIntent]{..., Observer: metrics}
//	dispatcher, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: payments.Tables(), Observer: metrics})
//
// The event counters describe this process; run several workers and sum them by job. The
// health and outbox gauges describe the database, which every process reads alike; set
// Monitor and Outbox in one process only (or deduplicate with max by (job)). Reads run
// concurrently, bounded together by the Monitor's Timeout. A read that fails or times out
// counts in status_errors_total (outbox_errors_total) and leaves those gauges out of the
// scrape, which still succeeds: a job whose status cannot be read is never reported healthy.
//
// # Freshness
//
// Each job's Status is kept by the Monitor for its TTL, 30 s by default, so that several
// scrapers (and health probes, and the console) do not each scan a large table; but a kept
// Status is used only while no write made through this process could have changed it. Every
// batch or lane step observed (BatchDone), every dispatcher attempt observed
// (CommandAttempted), every resolution in the console and every write through a
// pgstore.Store of the process drops it. So the gauges never show a state older than this
// process's last write; what other processes write shows within the TTL. A process whose jobs commit between every two
// scrapes thus reads each job's Status at every scrape: mind its cost on a large table
// (pgstore's Status doc), or export the health gauges from a process that runs no job. The
// outbox is read at every scrape. Times are the store's clock.
//
// # The metrics
//
// Names carry Options.Namespace, "reconcile" by default. Counters of a job start at zero, for
// every verdict, outcome and class, when the job's first batch or call is observed; a
// command's attempt counters, for every outcome, at its first attempt. This list is checked
// against a scrape by the package's tests, and the README carries the same table.
//
//	Name                                        Type       Labels            Meaning
//	reconcile_rows_total                        counter    job, verdict      rows judged by successful batches
//	reconcile_batches_total                     counter    job, outcome      batches by outcome
//	reconcile_batch_duration_seconds            histogram  job               wall time of every batch, failed ones included
//	reconcile_gateway_calls_total               counter    job, class        external calls by outcome class (reconcile.ErrorClass)
//	reconcile_gateway_call_duration_seconds     histogram  job               per Fetch; a FetchBatch of n calls in d observes d/n once
//	reconcile_findings_opened_total             counter    job               findings opened by committed batches
//	reconcile_commands_queued_total             counter    job               repair commands queued by committed batches
//	reconcile_rate_limited_batches_total        counter    job               batches whose calls a rate limit (or the limiter) stopped
//	reconcile_dispatcher_attempts_total         counter    command, outcome  the repair dispatcher's attempts; failures are retry and dead
//	reconcile_status_errors_total               counter    job               failed Status reads at scrape time
//	reconcile_rate_budget_calls_per_second      gauge      -                 calls per second the shared limiter allows now (Options.Limiter)
//	reconcile_lag_seconds                       gauge      job               the longest any row has gone unverified: the primary SLO
//	reconcile_lag_slo_seconds                   gauge      job               the lag the job's health is judged against (its HealthPolicy.LagSLO)
//	reconcile_covered_rows                      gauge      job               rows the job covers
//	reconcile_cycle_age_seconds                 gauge      job               age of the current cycle; absent before the first batch
//	reconcile_since_last_cycle_seconds          gauge      job               time since the last completed cycle; absent until one completes
//	reconcile_cycles_completed_total            counter    job               cycles completed, as the store counts them
//	reconcile_last_batch_unverifiable_ratio     gauge      job               share of the last batch's rows that could not be checked
//	reconcile_open_findings                     gauge      job, kind         open findings by kind (Options.Kinds, the engine's; any other: unexpected); a kind with none is absent
//	reconcile_stale_findings                    gauge      job               findings open past the store's threshold (pgstore's StaleAfter)
//	reconcile_healthy                           gauge      job               1 if the job's health (reconcile.Monitor) passes, else 0
//	reconcile_health_check_ok                   gauge      job, check        1 or 0 per health check
//	reconcile_lane_lag_seconds                  gauge      job, lane         time since the lane last reached its feed's end (or first ran)
//	reconcile_outbox_queued                     gauge      -                 repair commands queued: due, waiting to retry, or running
//	reconcile_outbox_oldest_queued_age_seconds  gauge      -                 how long the oldest queued command has waited; 0 if none
//	reconcile_dead_commands                     gauge      command           dead commands waiting for Redrive; 0 once a name seen dead has none
//	reconcile_outbox_errors_total               counter    -                 failed outbox reads at scrape time
//
// The first ten are counted as events happen; the rest are read at scrape time: the rate
// budget with Options.Limiter, the health gauges for each job of Options.Monitor
// (lag_slo_seconds even when the status cannot be read), the outbox ones with
// Options.Outbox. The labels with a fixed set of values take these:
//
//	reconcile_rows_total{verdict}                 in_sync, in_flight, repairable, needs_review, unverifiable
//	reconcile_batches_total{outcome}              ok, wrapped, deferred, conflict, error
//	reconcile_gateway_calls_total{class}          ok, not_found, rate_limited, unavailable, abort, review, canceled, other
//	reconcile_dispatcher_attempts_total{outcome}  done, retry, dead, deferred, released, lease_lost
//	reconcile_health_check_ok{check}              lag, since_last_cycle, cycle_age, last_attempt, since_last_batch, unverifiable, stale_findings, plan, lane:<lane>
//
// A batch is wrapped when it completed the cycle, deferred when its first row could not be
// asked (nothing written), conflict when another replica moved the cursor. Of the checks,
// since_last_cycle appears once a cycle has completed, since_last_batch once a batch has
// committed rows, plan with a HealthPolicy.Schedule, and one lane:<lane> per lane of the job;
// a fan-out judged as one job (reconcile.FanOut.Health) has one account:* for all its
// accounts, failing when one does, rather than a check per account (and accounts, when its
// account list cannot be read). An attempt is deferred by pgoutbox.RetryLater, released when the dispatcher stopped during it,
// lease_lost when another dispatcher took the command over.
//
// # Alerts and a dashboard
//
// The folder mixin holds what to load, tested against this package (in the Prometheus
// "mixin" fashion): alerts.yaml, rules for Prometheus's rule_files, with promtool unit tests
// in alerts_test.yaml, and dashboard.json, a Grafana dashboard with a datasource and a job
// variable. The package's tests run promtool over the rules and check that every metric the
// rules and the dashboard name is in a scrape of a real run. Scrape the exporter with
// honor_labels: true: the metrics' job label is the reconcile job, which Prometheus would
// otherwise rename exported_job to keep its own target label.
//
// The alerts: ReconcileUnhealthy (a health check failing for 15 minutes: the checks say which),
// ReconcileStatusUnreadable (a job configured, its health unknown), ReconcileLagOverSLO
// (lag_seconds above lag_slo_seconds), ReconcileBatchesFailing, ReconcileUnverifiableRatioHigh
// (an outage or a bad key), ReconcileStaleFindings (repairs that never applied, reviews nobody
// did), ReconcileDeadCommands, ReconcileOutboxBacklogGrowing and ReconcileOutboxStalled (a
// dispatcher that stopped or cannot keep up), ReconcileRepairsFailing and ReconcileLaneBehind
// (a lane past its HealthPolicy's MaxLaneLag). reconcile_healthy already covers lag, cycle
// progress, unverifiable rows and stale findings against each job's policy; the finer alerts page
// with a clearer reason. Tune the durations and ratios to your jobs.
package prommetrics
