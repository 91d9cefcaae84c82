package prommetrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reconcilekit/reconcile"
)

// healthCollector reads each job's Status at scrape time, caches it, judges it and sends the
// health gauges as const metrics: they describe the store, not this process, so they are
// computed fresh rather than kept up to date.
type healthCollector struct {
	status  reconcile.StatusReader
	readers map[string]reconcile.StatusReader
	jobs    []string
	policy  reconcile.HealthPolicy
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time
	errors  *prometheus.CounterVec
	writes  func() uint64   // the writes the Metrics observed
	kinds   map[string]bool // the kinds open_findings names; the rest are KindUnexpected

	lag, lagSLO, rows, cycleAge, sinceLastCycle, cyclesCompleted, unverifiableRatio *prometheus.Desc
	openFindings, staleFindings, healthy, checkOK, laneLag                          *prometheus.Desc

	mu    sync.Mutex
	cache map[string]cachedStatus
}

type cachedStatus struct {
	st  reconcile.Status
	at  time.Time // our clock when the read began
	gen uint64    // the writes known when the read began (generation)
}

// writeCounter is a StatusReader that counts the writes made through it (or through its
// kind in this process), as pgstore.Store does: a cached Status read before the last of them
// is out of date.
type writeCounter interface {
	Writes() uint64
}

func newHealthCollector(opts Options, statusErrors *prometheus.CounterVec, writes func() uint64) *healthCollector {
	name := func(n string) string { return prometheus.BuildFQName(opts.Namespace, "", n) }
	job := []string{"job"}
	h := &healthCollector{
		status: opts.Status, readers: opts.Readers, jobs: opts.Jobs, policy: opts.Policy,
		ttl: opts.StatusTTL, timeout: opts.StatusTimeout, now: opts.Now, errors: statusErrors, writes: writes,
		cache: make(map[string]cachedStatus), kinds: make(map[string]bool),

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
			"1 if the health check passes, else 0.", []string{"job", "check"}, nil),
		laneLag: prometheus.NewDesc(name("lane_lag_seconds"),
			"Time since the lane last reached the end of its feed (caught up with an event log, completed a reverse pass), or since it first ran.",
			[]string{"job", "lane"}, nil),
	}
	for _, j := range h.jobs {
		statusErrors.WithLabelValues(j) // present at zero from the start
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
	slo := h.policy.LagSLO
	if slo <= 0 {
		slo = reconcile.DefaultLagSLO
	}
	for i, r := range h.read() {
		job := h.jobs[i]
		// Configuration, not status: sent even when the status cannot be read.
		ch <- prometheus.MustNewConstMetric(h.lagSLO, prometheus.GaugeValue, slo.Seconds(), job)
		if r.err != nil {
			h.errors.WithLabelValues(job).Inc()
			continue
		}
		h.send(ch, job, r.st)
	}
}

type readResult struct {
	i   int
	st  reconcile.Status
	err error
}

// read returns every job's status, from the cache or read concurrently under one timeout. A
// reader that ignores its context cannot hold the scrape past the timeout: its result is
// dropped (a late success still fills the cache).
func (h *healthCollector) read() []readResult {
	now := h.now()
	out := make([]readResult, len(h.jobs))
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	results := make(chan readResult, len(h.jobs)) // buffered: late senders never block
	pending := 0
	for i, job := range h.jobs {
		r := h.status
		if own := h.readers[job]; own != nil {
			r = own
		}
		gen := h.generation(r)
		if st, ok := h.cached(job, now, gen); ok {
			out[i] = readResult{i: i, st: st}
			continue
		}
		out[i] = readResult{i: i, err: fmt.Errorf("prommetrics: job %s: status: no answer within %s", job, h.timeout)}
		pending++
		go func() {
			st, err := r.Status(ctx, job)
			if err == nil {
				h.store(job, st, now, gen)
			}
			results <- readResult{i: i, st: st, err: err}
		}()
	}
	for ; pending > 0; pending-- {
		select {
		case r := <-results:
			out[r.i] = r
		case <-ctx.Done():
			return out // the unanswered keep their timeout error
		}
	}
	return out
}

// generation is the number of writes that could have changed a Status read through r: the
// ones the Metrics observed and the ones r counts. Both only grow, so an unchanged sum means
// no write since.
func (h *healthCollector) generation(r reconcile.StatusReader) uint64 {
	gen := h.writes()
	if wc, ok := r.(writeCounter); ok {
		gen += wc.Writes()
	}
	return gen
}

func (h *healthCollector) cached(job string, now time.Time, gen uint64) (reconcile.Status, bool) {
	if h.ttl < 0 {
		return reconcile.Status{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.cache[job]
	if !ok || c.gen != gen || now.Sub(c.at) >= h.ttl || now.Before(c.at) {
		return reconcile.Status{}, false
	}
	return c.st, true
}

func (h *healthCollector) store(job string, st reconcile.Status, at time.Time, gen uint64) {
	if h.ttl < 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// A slow read must not replace a newer one.
	if c, ok := h.cache[job]; !ok || at.After(c.at) || (at.Equal(c.at) && gen >= c.gen) {
		h.cache[job] = cachedStatus{st: st, at: at, gen: gen}
	}
}

// send sends job's gauges for st.
func (h *healthCollector) send(ch chan<- prometheus.Metric, job string, st reconcile.Status) {
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

	health := reconcile.EvaluateHealth(st, h.policy)
	gauge(h.healthy, boolValue(health.OK))
	for _, c := range health.Checks {
		gauge(h.checkOK, boolValue(c.OK), labelValue(c.Name))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
