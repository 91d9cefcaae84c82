package prommetrics

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reconcilekit/reconcile"
)

// healthCollector reads each job's health through the Monitor at scrape time and sends the
// health gauges as const metrics: they describe the store, not this process, so they are
// computed fresh (or from the Monitor's cache) rather than kept up to date.
type healthCollector struct {
	monitor *reconcile.Monitor
	errors  *prometheus.CounterVec
	kinds   map[string]bool // the kinds open_findings names; the rest are KindUnexpected

	lag, lagSLO, rows, cycleAge, sinceLastCycle, cyclesCompleted, unverifiableRatio *prometheus.Desc
	openFindings, staleFindings, healthy, checkOK, laneLag                          *prometheus.Desc
}

func newHealthCollector(opts Options, statusErrors *prometheus.CounterVec) *healthCollector {
	name := func(n string) string { return prometheus.BuildFQName(opts.Namespace, "", n) }
	job := []string{"job"}
	h := &healthCollector{
		monitor: opts.Monitor, errors: statusErrors, kinds: make(map[string]bool),

		lag: prometheus.NewDesc(name("lag_seconds"),
			"Longest time any of the job's rows has gone without being verified (the primary SLO).", job, nil),
		lagSLO: prometheus.NewDesc(name("lag_slo_seconds"),
			"The lag the job's health is judged against (HealthPolicy.LagSLO), for alerts and dashboards to compare lag_seconds with.", job, nil),
		rows: prometheus.NewDesc(name("covered_rows"), "Rows the job covers.", job, nil),
		cycleAge: prometheus.NewDesc(name("cycle_age_seconds"),
			"How long the current cycle has been running; absent before the job's first batch.", job, nil),
		sinceLastCycle: prometheus.NewDesc(name("since_last_cycle_seconds"),
			"Time since the last completed cycle; absent until one completes.", job, nil),
		cyclesCompleted: prometheus.NewDesc(name("cycles_completed_total"),
			"Cycles the job has completed, as the store counts them.", job, nil),
		unverifiableRatio: prometheus.NewDesc(name("last_batch_unverifiable_ratio"),
			"Share of the last non-empty batch's rows that could not be checked.", job, nil),
		openFindings: prometheus.NewDesc(name("open_findings"),
			"Open findings, by kind; a kind the exporter does not know (Options.Kinds) counts as unexpected.", []string{"job", "kind"}, nil),
		staleFindings: prometheus.NewDesc(name("stale_findings"),
			"Findings open longer than the store's threshold: repairs that never applied, reviews nobody did.", job, nil),
		healthy: prometheus.NewDesc(name("healthy"),
			"1 if every health check passes, else 0; absent when the status could not be read.", job, nil),
		checkOK: prometheus.NewDesc(name("health_check_ok"),
			"1 if the health check passes, else 0. A fan-out's accounts are one check, \"account:*\", failing when one of them fails (the health endpoint names which).",
			[]string{"job", "check"}, nil),
		laneLag: prometheus.NewDesc(name("lane_lag_seconds"),
			"Time since the lane last reached the end of its feed (caught up with an event log, completed a reverse pass), or since it first ran.",
			[]string{"job", "lane"}, nil),
	}
	for _, j := range h.monitor.Jobs() {
		statusErrors.WithLabelValues(labelValue(j)) // present at zero from the start
	}
	for _, k := range append([]string{reconcile.KindMissingExternally, reconcile.KindMissingLocally, reconcile.KindInvalidExternalID,
		reconcile.KindInvalidRow, reconcile.KindRejected}, opts.Kinds...) {
		h.kinds[k] = true
	}
	return h
}

func (h *healthCollector) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{h.lag, h.lagSLO, h.rows, h.cycleAge, h.sinceLastCycle, h.cyclesCompleted,
		h.unverifiableRatio, h.openFindings, h.staleFindings, h.healthy, h.checkOK, h.laneLag} {
		ch <- d
	}
}

func (h *healthCollector) collect(ch chan<- prometheus.Metric) {
	for _, jh := range h.monitor.Health(context.Background()) {
		job := labelValue(jh.Job)
		// Configuration, not status: sent even when the status cannot be read.
		ch <- prometheus.MustNewConstMetric(h.lagSLO, prometheus.GaugeValue, jh.Policy.LagSLO.Seconds(), job)
		if jh.Err != nil {
			h.errors.WithLabelValues(job).Inc()
			continue
		}
		h.send(ch, job, jh.Health)
	}
}

// send sends job's gauges for its health, as the Monitor judged it.
func (h *healthCollector) send(ch chan<- prometheus.Metric, job string, health reconcile.Health) {
	st := health.Status
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{job}, labels...)...)
	}
	gauge(h.lag, st.Lag.Seconds())
	gauge(h.rows, float64(st.Rows))
	if !st.CycleStartedAt.IsZero() {
		gauge(h.cycleAge, st.CycleAge().Seconds())
	}
	if since, ok := st.SinceLastCycle(); ok {
		gauge(h.sinceLastCycle, since.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(h.cyclesCompleted, prometheus.CounterValue, float64(st.CyclesCompleted), job)
	gauge(h.unverifiableRatio, st.UnverifiableRatio())
	// A bounded label set whatever the external system sends: the kinds known, then one bucket.
	kinds := make(map[string]int, len(st.OpenFindings))
	for kind, n := range st.OpenFindings {
		if !h.kinds[kind] {
			kind = KindUnexpected
		}
		kinds[kind] += n
	}
	for kind, n := range kinds {
		gauge(h.openFindings, float64(n), kind)
	}
	gauge(h.staleFindings, float64(st.StaleFindings))
	for _, l := range st.Lanes {
		gauge(h.laneLag, l.SinceEnd(st.Now).Seconds(), labelValue(l.Lane))
	}
	gauge(h.healthy, boolValue(health.OK))
	checks := make(map[string]bool, len(health.Checks))
	for _, c := range health.Checks {
		name := labelValue(c.Name)
		if strings.HasPrefix(name, accountCheckPrefix) {
			// A check per account, named by its id (FanOut.Health): as many series as accounts
			// sign up, each label as long as its id. One series, whatever the accounts.
			name = accountsCheck
		}
		ok, seen := checks[name]
		checks[name] = c.OK && (ok || !seen)
	}
	for name, ok := range checks {
		gauge(h.checkOK, boolValue(ok), name)
	}
}

// accountCheckPrefix starts the name of each account's check in a fan-out's health
// (reconcile.FanOut.Health); accountsCheck is the one check they are exported as.
const (
	accountCheckPrefix = "account:"
	accountsCheck      = "account:*"
)

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
