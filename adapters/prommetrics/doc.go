// Package prommetrics exposes reconcile's work and health as Prometheus metrics, through
// github.com/prometheus/client_golang, in a package of its own so that the core does not
// depend on it.
//
// # Wiring it
//
// One Metrics serves every job of a process. It is a reconcile.Observer: set it as each job's
// Config.Observer and it counts batches, rows, gateway calls, findings and commands as they
// happen. It is also a prometheus.Collector: register it once and serve the registry.
//
//	metrics, err := prommetrics.New(prommetrics.Options{
//		Status: store, // a *pgstore.Store: health gauges read at scrape time
//		Jobs:   []string{"payments", "refunds"},
//		Policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour},
//	})
//	if err != nil { ... }
//	reg := prometheus.NewRegistry()
//	if err := metrics.Register(reg); err != nil { ... }
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//	cfg := reconcile.Config[Payment, *stripe.PaymentIntent]{..., Observer: metrics}
//
// The event counters describe this process; run several workers and sum them by job. The
// health gauges describe the store, which every process reads alike; set Status and Jobs in
// one process only (or deduplicate with max by (job)). Each job's Status is cached for
// Options.StatusTTL, 30 s by default, so that a scrape every 15 s does not scan a large
// table each time; reads run concurrently, bounded together by Options.StatusTimeout. A read
// that fails or times out counts in status_errors_total and leaves that job's gauges out of
// the scrape, which still succeeds: a job whose status cannot be read is never reported
// healthy.
//
// # The metrics
//
// Names carry Options.Namespace, "reconcile" by default. Counters of a job start at zero, for
// every verdict, outcome and class, when the job's first batch or call is observed.
//
//	Name                                    Type       Labels        Meaning
//	reconcile_rows_total                    counter    job, verdict  rows judged by successful batches; verdict is in_sync, in_flight,
//	                                                                 repairable, needs_review or unverifiable (reconcile.Verdict.String)
//	reconcile_batches_total                 counter    job, outcome  batches by outcome: ok, wrapped (the cycle completed),
//	                                                                 deferred (the first row could not be asked, nothing written),
//	                                                                 conflict (another replica moved the cursor) or error
//	reconcile_batch_duration_seconds        histogram  job           wall time of every batch, failed ones included
//	reconcile_gateway_calls_total           counter    job, class    external calls by outcome class (reconcile.ErrorClass): ok, not_found,
//	                                                                 rate_limited, unavailable, abort, review, canceled, other
//	reconcile_gateway_call_duration_seconds histogram  job           one observation per Fetch; for a FetchBatch that made n calls in d,
//	                                                                 one observation of d/n, the mean per call of that invocation
//	reconcile_findings_opened_total         counter    job           findings opened by committed batches
//	reconcile_commands_queued_total         counter    job           repair commands queued by committed batches
//	reconcile_rate_limited_batches_total    counter    job           batches whose calls a rate limit (or the limiter) stopped
//	reconcile_status_errors_total           counter    job           failed Status reads at scrape time
//
// Read from the store at scrape time, for each of Options.Jobs:
//
//	reconcile_lag_seconds                   gauge      job           the longest any row has gone unverified: the primary SLO
//	reconcile_covered_rows                  gauge      job           rows the job covers
//	reconcile_cycle_age_seconds             gauge      job           age of the current cycle; absent before the first batch
//	reconcile_since_last_cycle_seconds      gauge      job           time since the last completed cycle; absent until one completes
//	reconcile_cycles_completed_total        counter    job           cycles completed, as the store counts them
//	reconcile_last_batch_unverifiable_ratio gauge      job           share of the last batch's rows that could not be checked
//	reconcile_open_findings                 gauge      job, kind     open findings by kind
//	reconcile_stale_findings                gauge      job           findings open past the store's threshold (pgstore's StaleAfter)
//	reconcile_healthy                       gauge      job           1 if reconcile.EvaluateHealth passes against Options.Policy, else 0
//	reconcile_health_check_ok               gauge      job, check    1 or 0 per check: lag, since_last_cycle, cycle_age, unverifiable,
//	                                                                 stale_findings
//
// The gauges are as of the cached read, up to StatusTTL old; times are the store's clock.
//
// # Alerts to set
//
// Sensible starting points, to tune against the policy and the job's size:
//
//	# Any health check failing for a while (the checks say which).
//	reconcile_healthy == 0                                                       for 15m
//	# The status cannot be read, or nothing exports the health gauges any more.
//	increase(reconcile_status_errors_total[10m]) > 0                             for 15m
//	absent(reconcile_healthy{job="payments"})                                    for 15m
//	# Lag past the SLO (here 24 h), or heading there.
//	reconcile_lag_seconds > 24 * 3600
//	predict_linear(reconcile_lag_seconds[6h], 12 * 3600) > 24 * 3600            for 1h
//	# An outage or a bad key: most rows cannot be checked.
//	reconcile_last_batch_unverifiable_ratio > 0.25                               for 15m
//	# Repairs that never applied, reviews nobody did.
//	reconcile_stale_findings > 0                                                 for 1h
//	# Batches failing.
//	sum by (job) (rate(reconcile_batches_total{outcome="error"}[15m]))
//	  / sum by (job) (rate(reconcile_batches_total[15m])) > 0.1                  for 15m
//	# Starved by the external system's rate limit.
//	sum by (job) (rate(reconcile_batches_total{outcome="deferred"}[30m]))
//	  / sum by (job) (rate(reconcile_batches_total[30m])) > 0.5                  for 30m
//	# Drift appearing faster than usual (a deploy broke webhooks, say).
//	sum by (job) (increase(reconcile_findings_opened_total[1h])) > 50
//
// reconcile_healthy already covers lag, cycle progress, unverifiable rows and stale findings
// against Options.Policy; the finer alerts page with a clearer reason.
package prommetrics
