package prommetrics

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// KindUnexpected is the kind label of the open findings whose kind is not in Options.Kinds nor
// one of the engine's own.
const KindUnexpected = "unexpected"

// MaxKindLength bounds the length in bytes of a kind in Options.Kinds, and so of every kind
// label.
const MaxKindLength = 100

// DefaultNamespace is the namespace a zero Options gets.
const DefaultNamespace = "reconcile"

// DefaultBuckets are the batch duration buckets a zero Options gets: 10 ms to about 5 minutes,
// doubling, so that a paced batch of a few hundred calls still lands in a bucket.
var DefaultBuckets = prometheus.ExponentialBuckets(0.01, 2, 16)

// DefaultCallBuckets are the gateway call duration buckets a zero Options gets.
var DefaultCallBuckets = prometheus.DefBuckets

// Options configures Metrics. The zero value works: event metrics only, under "reconcile_".
type Options struct {
	// Namespace prefixes every metric name. Empty means DefaultNamespace.
	Namespace string

	// Monitor, if set, turns on the health gauges: at scrape time each of its jobs' health is
	// read and judged (reconcile.Monitor.Health), each job by its own policy, within the
	// Monitor's Timeout, from its cache when kept. Give it the Monitor the health endpoint and
	// the console use: the gauges then agree with them, and the batches and repairs this
	// Metrics observes drop its cache (Monitor.Forget), so the gauges never show a state older
	// than this process's last write. Give it to the Metrics of one process only: the gauges
	// describe the database, not the process.
	Monitor *reconcile.Monitor
	// Kinds are the finding kinds open_findings names in its kind label: your policy's, such
	// as the Kind of each of stripepolicy.Kinds(). The engine's own kinds
	// (reconcile.KindMissingExternally, KindMissingLocally, KindInvalidExternalID,
	// KindInvalidRow, KindRejected) are named without being listed. Open findings of any other
	// kind count under one label, KindUnexpected: a kind can be made of what the external
	// system sent (an unexpected pair of states), and a series per distinct value would let it
	// grow the label set, and each label, without bound. Each is valid UTF-8 without control
	// characters, at most MaxKindLength bytes.
	Kinds []string
	// Outbox, if set, is read at every scrape for the repair outbox's backlog and dead
	// commands: pgoutbox.Outbox{DB: pool, Tables: store.Tables()}. It is read alongside the
	// statuses, within the Monitor's Timeout (reconcile.DefaultMonitorTimeout without one). Set
	// it in one process only, as Monitor.
	Outbox reconcile.OutboxReader

	// Limiter, if set, is the rate limiter the jobs share (a *reconcile.AdaptiveLimiter or a
	// *rate.Limiter): its current rate is exported at scrape time as the rate budget, so that a
	// dashboard shows what share of it the gateway calls use, and an AdaptiveLimiter's
	// slowdown after a 429 shows.
	Limiter RateReader

	// Buckets are the upper bounds of the batch duration histogram, in seconds, increasing.
	// Nil means DefaultBuckets.
	Buckets []float64
	// CallBuckets are the upper bounds of the gateway call duration histogram, in seconds,
	// increasing. Nil means DefaultCallBuckets.
	CallBuckets []float64
}

// RateReader reads a rate limiter's current rate; *reconcile.AdaptiveLimiter and *rate.Limiter
// are ones.
type RateReader interface {
	Limit() rate.Limit
}

// Metrics is a reconcile.Observer that counts what the engine does, a
// reconcile.CommandObserver that counts the repair dispatcher's attempts (pgoutbox's
// Config.Observer), and a prometheus.Collector that exposes those counts
// together with health gauges read at scrape time. Set it as Config.Observer of every job and
// of the dispatcher, and register it once. It is safe for concurrent use.
type Metrics struct {
	// Event metrics, updated by the Observer methods.
	rows            *prometheus.CounterVec
	batches         *prometheus.CounterVec
	batchDuration   *prometheus.HistogramVec
	gatewayCalls    *prometheus.CounterVec
	callDuration    *prometheus.HistogramVec
	findingsOpened  *prometheus.CounterVec
	commandsQueued  *prometheus.CounterVec
	rateLimited     *prometheus.CounterVec
	statusErrors    *prometheus.CounterVec
	attempts        *prometheus.CounterVec
	seen            sync.Map // job label -> struct{}: jobs whose series are initialized
	seenCommands    sync.Map // command label -> struct{}
	eventCollectors []prometheus.Collector

	monitor *reconcile.Monitor // nil without Options.Monitor: told of the writes observed
	health  *healthCollector   // nil without Options.Monitor
	outbox  *outboxCollector   // nil without Options.Outbox
}

var (
	_ reconcile.Observer        = (*Metrics)(nil)
	_ reconcile.CommandObserver = (*Metrics)(nil)
	_ prometheus.Collector      = (*Metrics)(nil)
)

// Outcomes of a batch, as the outcome label of batches_total names them, by what
// reconcile.AfterBatch decides: ok for a batch that committed rows (AfterProgress,
// AfterRateLimit, AfterOutage), wrapped for AfterCycle, deferred for a batch that wrote nothing
// (AfterDeferred, AfterIdle), conflict for AfterConflict, error for a failed or cancelled one.
const (
	OutcomeOK       = "ok"
	OutcomeWrapped  = "wrapped"
	OutcomeDeferred = "deferred"
	OutcomeError    = "error"
	// OutcomeConflict is a batch that lost the cursor race to another reconciler of the same
	// job (reconcile.ErrConcurrentRun): routine with several replicas, not an error.
	OutcomeConflict = "conflict"
)

var (
	outcomes = []string{OutcomeOK, OutcomeWrapped, OutcomeDeferred, OutcomeError, OutcomeConflict}
	classes  = []string{
		reconcile.ClassOK, reconcile.ClassNotFound, reconcile.ClassRateLimited, reconcile.ClassUnavailable,
		reconcile.ClassAbort, reconcile.ClassReview, reconcile.ClassCanceled, reconcile.ClassOther,
	}
	// A namespace is joined to names with "_"; the classic metric name syntax keeps the names
	// usable by every Prometheus version and exposition format.
	namespaceRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// New checks opts and returns Metrics.
func New(opts Options) (*Metrics, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if !namespaceRE.MatchString(opts.Namespace) {
		return nil, fmt.Errorf("prommetrics: options: Namespace %q is not a valid metric name prefix", opts.Namespace)
	}
	if opts.Buckets == nil {
		opts.Buckets = DefaultBuckets
	}
	if opts.CallBuckets == nil {
		opts.CallBuckets = DefaultCallBuckets
	}
	if err := checkBuckets("Buckets", opts.Buckets); err != nil {
		return nil, err
	}
	if err := checkBuckets("CallBuckets", opts.CallBuckets); err != nil {
		return nil, err
	}
	if err := checkNilPointers(opts); err != nil {
		return nil, err
	}
	if err := checkKinds(opts.Kinds); err != nil {
		return nil, err
	}
	if opts.Monitor != nil && len(opts.Monitor.Jobs()) == 0 {
		// A Monitor not made by NewMonitor: no job would have a gauge, so no alert could fire.
		return nil, errors.New("prommetrics: options: the Monitor has no jobs; make it with reconcile.NewMonitor")
	}

	ns := opts.Namespace
	m := &Metrics{
		monitor: opts.Monitor,
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rows_total",
			Help: "Rows judged by successful batches, by verdict."}, []string{"job", "verdict"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "batches_total",
			Help: "Batches run, by outcome: ok, wrapped (the batch completed the cycle), deferred (the first row could not be asked, nothing written), conflict (another reconciler moved the cursor, nothing written) or error."},
			[]string{"job", "outcome"}),
		batchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "batch_duration_seconds",
			Help: "Wall time of batches, failed ones included.", Buckets: opts.Buckets}, []string{"job"}),
		gatewayCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "gateway_calls_total",
			Help: "Calls to the external system, by outcome class."}, []string{"job", "class"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "gateway_call_duration_seconds",
			Help:    "Duration of gateway calls: one observation per Fetch, and one per FetchBatch of its mean time per call.",
			Buckets: opts.CallBuckets}, []string{"job"}),
		findingsOpened: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "findings_opened_total",
			Help: "Findings opened by committed batches."}, []string{"job"}),
		commandsQueued: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "commands_queued_total",
			Help: "Repair commands queued by committed batches."}, []string{"job"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rate_limited_batches_total",
			Help: "Batches whose calls were stopped by a rate limit or by the limiter."}, []string{"job"}),
		statusErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "status_errors_total",
			Help: "Failed reads of a job's status at scrape time; that scrape has none of the job's health gauges."},
			[]string{"job"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "dispatcher_attempts_total",
			Help: "Attempts of the repair dispatcher by command and outcome: done, retry and dead (failures), deferred (RetryLater), released (stopped), lease_lost."},
			[]string{"command", "outcome"}),
	}
	m.eventCollectors = []prometheus.Collector{
		m.rows, m.batches, m.batchDuration, m.gatewayCalls, m.callDuration,
		m.findingsOpened, m.commandsQueued, m.rateLimited, m.attempts,
	}
	if l := opts.Limiter; l != nil {
		m.eventCollectors = append(m.eventCollectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns,
			Name: "rate_budget_calls_per_second",
			Help: "Calls per second the shared rate limiter allows now (an AdaptiveLimiter lowers it after a 429); +Inf if unlimited."},
			func() float64 {
				if r := l.Limit(); r != rate.Inf {
					return float64(r)
				}
				return math.Inf(1)
			}))
	}
	if opts.Monitor != nil {
		m.health = newHealthCollector(opts, m.statusErrors)
	}
	if opts.Outbox != nil {
		m.outbox = newOutboxCollector(opts)
	}
	return m, nil
}

func checkBuckets(field string, b []float64) error {
	if len(b) == 0 {
		return fmt.Errorf("prommetrics: options: %s is empty; leave it nil for the default", field)
	}
	for i := 1; i < len(b); i++ {
		if !(b[i] > b[i-1]) {
			return fmt.Errorf("prommetrics: options: %s must be strictly increasing: %v", field, b)
		}
	}
	return nil
}

// checkNilPointers rejects a nil pointer behind a non-nil interface (a *pgoutbox.Outbox or
// *reconcile.AdaptiveLimiter variable left nil), as reconcile.New does a Limiter's: it would
// pass the nil checks and panic at the first scrape, in a goroutine of its own, which takes
// the process down.
func checkNilPointers(opts Options) error {
	names := []string{"Outbox", "Limiter"}
	values := []any{opts.Outbox, opts.Limiter}
	for i, v := range values {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return fmt.Errorf("prommetrics: options: %s is a nil %T; leave it nil to turn it off", names[i], v)
		}
	}
	return nil
}

func checkKinds(kinds []string) error {
	for i, kind := range kinds {
		if kind == "" || len(kind) > MaxKindLength || !utf8.ValidString(kind) || strings.ContainsFunc(kind, unicode.IsControl) {
			return fmt.Errorf("prommetrics: options: Kinds[%d] %q is empty, longer than %d bytes, not UTF-8 or has control characters", i, kind, MaxKindLength)
		}
	}
	return nil
}

// Register registers m with r; nil means prometheus.DefaultRegisterer.
func (m *Metrics) Register(r prometheus.Registerer) error {
	if r == nil {
		r = prometheus.DefaultRegisterer
	}
	if err := r.Register(m); err != nil {
		return fmt.Errorf("prommetrics: register: %w", err)
	}
	return nil
}

// Describe sends the descriptors of every metric m can collect.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.eventCollectors {
		c.Describe(ch)
	}
	m.statusErrors.Describe(ch)
	if m.health != nil {
		m.health.describe(ch)
	}
	if m.outbox != nil {
		m.outbox.describe(ch)
	}
}

// Collect sends the event metrics and, when Options.Monitor is set, reads each job's health
// and sends its gauges. A failed read counts in status_errors_total and leaves that
// job's gauges out; it never fails the scrape.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	// The outbox is read alongside the statuses, so that a database that hangs holds the scrape
	// for one timeout, not two: two defaults make Prometheus's default scrape_timeout, and a
	// scrape that times out has none of the series the alerts need.
	var outbox sync.WaitGroup
	if m.outbox != nil {
		outbox.Go(func() { m.outbox.collect(ch) })
	}
	if m.health != nil {
		m.health.collect(ch) // before statusErrors: it counts failed reads there
	}
	outbox.Wait()
	for _, c := range m.eventCollectors {
		c.Collect(ch)
	}
	m.statusErrors.Collect(ch)
}

// redactKeys replaces anything in s that looks like a Stripe key (redact.Keys). A label value
// read from the database (a dead command's name) is exported to every scraper: it must not
// carry a key.
func redactKeys(s string) string { return redact.Keys(s) }

// labelValue makes s safe as a label value: client_golang panics on invalid UTF-8, and a
// metrics library must not take the batch down with it.
func labelValue(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
