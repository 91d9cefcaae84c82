package prommetrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reconcilekit/reconcile"
)

// outboxCollector reads the repair outbox at every scrape and sends its backlog and dead
// commands as const metrics: like the health gauges, they describe the database, not this
// process.
type outboxCollector struct {
	reader  reconcile.OutboxReader
	timeout time.Duration
	errors  prometheus.Counter

	queued, oldestAge, dead *prometheus.Desc

	mu       sync.Mutex
	commands map[string]bool // command names seen dead: reported at 0 once they are redriven
}

func newOutboxCollector(opts Options) *outboxCollector {
	name := func(n string) string { return prometheus.BuildFQName(opts.Namespace, "", n) }
	timeout := reconcile.DefaultMonitorTimeout
	if opts.Monitor != nil {
		timeout = opts.Monitor.Timeout()
	}
	return &outboxCollector{
		reader: opts.Outbox, timeout: timeout,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: opts.Namespace, Name: "outbox_errors_total",
			Help: "Failed reads of the outbox at scrape time; that scrape has none of the outbox gauges."}),
		queued: prometheus.NewDesc(name("outbox_queued"),
			"Repair commands queued and not yet applied: due, waiting to retry, or running.", nil, nil),
		oldestAge: prometheus.NewDesc(name("outbox_oldest_queued_age_seconds"),
			"How long the oldest queued repair command has waited; 0 when none is queued.", nil, nil),
		dead: prometheus.NewDesc(name("dead_commands"),
			"Dead repair commands by command name, waiting for Redrive.", []string{"command"}, nil),
		commands: map[string]bool{},
	}
}

func (o *outboxCollector) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{o.queued, o.oldestAge, o.dead} {
		ch <- d
	}
	o.errors.Describe(ch)
}

func (o *outboxCollector) collect(ch chan<- prometheus.Metric) {
	defer o.errors.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	st, err := o.reader.Stats(ctx)
	if err != nil {
		o.errors.Inc()
		return
	}
	ch <- prometheus.MustNewConstMetric(o.queued, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(o.oldestAge, prometheus.GaugeValue, st.OldestQueuedAge().Seconds())
	dead := map[string]int64{}
	for name, n := range st.Dead {
		dead[labelValue(redactKeys(name))] += n
	}
	o.mu.Lock()
	for name := range dead {
		o.commands[name] = true
	}
	for name := range o.commands {
		ch <- prometheus.MustNewConstMetric(o.dead, prometheus.GaugeValue, float64(dead[name]), name)
	}
	o.mu.Unlock()
}
