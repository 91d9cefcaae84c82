package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// Defaults of MonitorConfig.
const (
	DefaultMonitorTimeout = 5 * time.Second
	DefaultMonitorTTL     = 30 * time.Second
)

// MonitorJob is one job a Monitor reads and judges.
type MonitorJob struct {
	// Name is the job's name, as its StatusReader knows it (Config.Job): valid UTF-8 without
	// control characters, unique in the Monitor. Required.
	Name string
	// Status reads the job's Status: its store (pgstore.Store, memstore.Store) or a sharded
	// job (pgshard.Job). Tiers, or jobs over other tables, each need their own store here: a
	// pgstore.Store counts the rows of its own table and filter. Required unless Judge is set.
	Status StatusReader
	// Judge, instead of Status, judges a job that is several: a FanOut's Health, whose checks
	// name the account that lags. It is given Policy and, through its context, the Monitor's
	// Timeout. Its checks' reasons are shown as it writes them (keys redacted): like
	// FanOut.Health's, they must not carry an error's text.
	Judge func(ctx context.Context, p HealthPolicy) Health
	// Policy is what healthy means for the job; the zero value is the defaults.
	Policy HealthPolicy
	// Coverage reads the job's coverage (the review console's chart). Nil means Status, if it
	// is a CoverageReader (pgstore.Store and memstore.Store are).
	Coverage CoverageReader
}

// MonitorConfig configures a Monitor. Jobs is required; every other field's zero value works.
type MonitorConfig struct {
	// Jobs are the jobs monitored, in the order they are shown. At least one.
	Jobs []MonitorJob
	// Timeout bounds each read, and each caller's wait for the reads: a job not read in time
	// is reported unknown (JobHealth.Err). Zero means DefaultMonitorTimeout.
	Timeout time.Duration
	// TTL keeps each read for this long, so that health probes, scrapes and the console
	// overview do not each read the store: pgstore's Status may scan the job's table. A write
	// the Monitor is told of (Forget: the console's resolutions, the batches and repairs the
	// metrics observe) drops what is kept at once, and a write through a job's reader that
	// counts its writes (a WriteCounter: pgstore.Store, pgshard.Job) drops what is kept of that
	// job: what is shown is never older than this process's last such write. Writes by other
	// processes show within TTL. Zero means DefaultMonitorTTL; a negative value keeps nothing,
	// and reads at every request.
	TTL time.Duration
	// Logger receives a line, with the error, for every read that failed, and for every wait
	// that ran out: what is shown only says that the status is unavailable. Nil means no
	// logging.
	Logger *slog.Logger
	// Now is the clock that TTL is measured by. Nil means time.Now.
	Now func() time.Time
}

// Monitor reads and judges the health of a set of jobs for every surface that shows it: the
// health endpoint (NewHealthHandler), the review console (console.Config.Monitor) and the
// Prometheus exporter (prommetrics.Options.Monitor). Make one per process and give it to all
// three: each job then has one policy, one read in flight at a time and one cache, and the
// surfaces agree.
//
// What it hands out is fit to be shown without sign-in: a failed batch or lane step shows only
// as its FailureReason, and finding kinds, lane names, gap reasons and a Judge's checks have
// anything that looks like a Stripe key redacted. A read's error is logged (Logger), never
// shown.
//
// It is safe for concurrent use.
type Monitor struct {
	jobs    []MonitorJob
	index   map[string]int
	timeout time.Duration
	logger  *slog.Logger
	cache   *readCache
}

// JobHealth is one job's health, as a Monitor judges it.
type JobHealth struct {
	// Job is the job's name.
	Job string
	// Health is the job's Status judged against Policy, or its Judge's answer; the zero
	// Health, but for its Job, when Err is set.
	Health Health
	// Policy is the job's policy with its defaults filled in (HealthPolicy.WithDefaults).
	Policy HealthPolicy
	// Err is why the health is unknown: the status could not be read, or not within the
	// Monitor's Timeout. Its text is for logs: it may hold SQL or a database's address.
	Err error
}

// NewMonitor checks cfg and returns a Monitor.
func NewMonitor(cfg MonitorConfig) (*Monitor, error) {
	if len(cfg.Jobs) == 0 {
		return nil, errors.New("reconcile: monitor: no jobs")
	}
	m := &Monitor{jobs: slices.Clone(cfg.Jobs), index: map[string]int{}, timeout: cfg.Timeout, logger: cfg.Logger}
	for i, j := range m.jobs {
		switch {
		case j.Name == "":
			return nil, fmt.Errorf("reconcile: monitor: job %d has no Name", i)
		case !utf8.ValidString(j.Name) || strings.ContainsFunc(j.Name, unicode.IsControl):
			return nil, fmt.Errorf("reconcile: monitor: job name %q is not valid UTF-8 or has control characters", j.Name)
		}
		if _, dup := m.index[j.Name]; dup {
			return nil, fmt.Errorf("reconcile: monitor: job %q appears twice", j.Name)
		}
		switch {
		case (j.Status == nil || isNilPointer(j.Status)) == (j.Judge == nil):
			return nil, fmt.Errorf("reconcile: monitor: job %q needs exactly one of Status and Judge", j.Name)
		case j.Coverage != nil && isNilPointer(j.Coverage):
			return nil, fmt.Errorf("reconcile: monitor: job %q has a nil %T as its Coverage; leave it nil for none", j.Name, j.Coverage)
		case j.Policy.LagSLO < 0:
			return nil, fmt.Errorf("reconcile: monitor: job %q has a negative Policy.LagSLO %v", j.Name, j.Policy.LagSLO)
		}
		if j.Status != nil && isNilPointer(j.Status) {
			m.jobs[i].Status = nil // a nil store beside a Judge
		}
		// The policy is the Monitor's from now on: the caller's map and plan are not shared.
		m.jobs[i].Policy.LaneLag = maps.Clone(j.Policy.LaneLag)
		if j.Policy.Schedule != nil {
			plan := *j.Policy.Schedule
			m.jobs[i].Policy.Schedule = &plan
		}
		if j.Coverage == nil {
			m.jobs[i].Coverage, _ = m.jobs[i].Status.(CoverageReader)
		}
		m.index[j.Name] = i
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("reconcile: monitor: negative Timeout %v", cfg.Timeout)
	case cfg.Timeout == 0:
		m.timeout = DefaultMonitorTimeout
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = DefaultMonitorTTL
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	m.cache = newReadCache(ttl, m.timeout, now, func(k readKey, err error) {
		m.logger.LogAttrs(context.Background(), slog.LevelError, "reconcile monitor: could not read a job's "+k.what,
			slog.String("job", k.job), slog.String("error", err.Error()))
	})
	return m, nil
}

// Jobs returns the jobs' names, in order.
func (m *Monitor) Jobs() []string {
	names := make([]string, len(m.jobs))
	for i, j := range m.jobs {
		names[i] = j.Name
	}
	return names
}

// Policy returns job's policy with its defaults filled in (HealthPolicy.WithDefaults), and
// false if the Monitor has no such job.
func (m *Monitor) Policy(job string) (HealthPolicy, bool) {
	i, ok := m.index[job]
	if !ok {
		return HealthPolicy{}, false
	}
	return m.jobs[i].Policy.WithDefaults(), true
}

// Timeout is the bound of each read and of each wait for them: an exporter reading more (the
// outbox) at the same time keeps to it too.
func (m *Monitor) Timeout() time.Duration { return m.timeout }

// Forget drops every read kept, after a write that what is shown should reflect at once: the
// console calls it after each resolution, the metrics after each batch and repair they
// observe. Reads under way finish, but what they read is not kept, and requests that come
// after Forget read again. On a Monitor not made by NewMonitor, which keeps nothing, it does
// nothing.
func (m *Monitor) Forget() {
	if m != nil && m.cache != nil {
		m.cache.forget()
	}
}

// Health reads and judges every job, concurrently, and returns their health in the order of
// MonitorConfig.Jobs. It waits at most the Monitor's Timeout (or until ctx is done): a job not
// read by then has an Err. A read kept within TTL, or under way for another caller, is used
// rather than a new one.
func (m *Monitor) Health(ctx context.Context) []JobHealth {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	out := make([]JobHealth, len(m.jobs))
	var wg sync.WaitGroup
	for i := range m.jobs {
		wg.Go(func() { out[i] = m.jobHealth(ctx, m.jobs[i]) })
	}
	wg.Wait()
	return out
}

// jobRead is what a job's read keeps: its status, or its Judge's health.
type jobRead struct {
	st Status
	hl *Health
}

func (m *Monitor) jobHealth(ctx context.Context, j MonitorJob) JobHealth {
	out := JobHealth{Job: j.Name, Health: Health{Job: j.Name}, Policy: j.Policy.WithDefaults()}
	v, err := m.cache.get(ctx, readKey{what: "status", job: j.Name}, writesOf(j.Status), func(ctx context.Context) (any, error) {
		if j.Judge != nil {
			hl := j.Judge(ctx, j.Policy)
			return jobRead{hl: &hl}, nil
		}
		st, err := j.Status.Status(ctx, j.Name)
		return jobRead{st: st}, err
	})
	if err != nil {
		if errors.Is(err, errNotInTime) {
			err = fmt.Errorf("reconcile: monitor: the status of job %q was not read within %v, or the caller went away: %w", j.Name, m.timeout, err)
			m.logger.LogAttrs(ctx, slog.LevelError, "reconcile monitor: could not read a job's status",
				slog.String("job", j.Name), slog.String("error", err.Error()))
		}
		out.Err = err
		return out
	}
	r := v.(jobRead)
	if r.hl == nil {
		out.Health = EvaluateHealth(showable(r.st), j.Policy)
	} else {
		hl := *r.hl
		hl.Status = showable(hl.Status)
		hl.Checks = slices.Clone(hl.Checks)
		for k := range hl.Checks {
			hl.Checks[k].Name, hl.Checks[k].Reason = redact.Keys(hl.Checks[k].Name), redact.Keys(hl.Checks[k].Reason)
		}
		out.Health = hl
	}
	out.Health.Job = j.Name
	return out
}

// Coverage reads job's coverage for q (a CoverageReader), kept and shared like the statuses,
// within the Monitor's Timeout. It fails with an error that errors.Is errors.ErrUnsupported
// when the job has no CoverageReader.
func (m *Monitor) Coverage(ctx context.Context, job string, q CoverageQuery) (Coverage, error) {
	i, ok := m.index[job]
	if !ok {
		return Coverage{}, fmt.Errorf("reconcile: monitor: no job %q", job)
	}
	j := m.jobs[i]
	if j.Coverage == nil {
		return Coverage{}, fmt.Errorf("reconcile: monitor: job %q has no coverage reader: %w", job, errors.ErrUnsupported)
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	key := readKey{what: "coverage", job: job, query: fmt.Sprint(q.Ages, q.Days)}
	v, err := m.cache.get(ctx, key, writesOf(j.Coverage), func(ctx context.Context) (any, error) {
		return j.Coverage.Coverage(ctx, job, q)
	})
	if err != nil {
		return Coverage{}, err
	}
	return v.(Coverage), nil
}

var _ CoverageReader = (*Monitor)(nil)

// WriteCounter is an optional ability of a StatusReader or CoverageReader: it counts the
// writes made through it (pgstore.Store and pgshard.Job do, each its own). A Monitor drops what
// it keeps of the reader's reads whenever the count moves, so that what it shows is never older
// than this process's last write through that reader; writes through other readers (another
// store, another tier) leave it kept.
type WriteCounter interface {
	Writes() uint64
}

// writesOf is r's count of the writes made through it, if it keeps one (a WriteCounter): a
// read kept from before the last of them is out of date.
func writesOf(r any) func() uint64 {
	if wc, ok := r.(WriteCounter); ok {
		return wc.Writes
	}
	return nil
}

// showable is st as a Monitor shows it, before it is judged, so that neither the status nor
// the reasons show what they must not: its failures replaced by their reasons
// (FailureReason), and its other texts (finding kinds, lane names and gaps) with anything that
// looks like a key redacted. Adapters keep keys out of what they store; a host's classifier
// may not (a kind made of an external state), and this is the surfaces' own guard.
func showable(st Status) Status {
	st = withFailureReasons(st)
	if len(st.OpenFindings) > 0 {
		kinds := make(map[string]int, len(st.OpenFindings))
		for k, n := range st.OpenFindings {
			kinds[redact.Keys(k)] += n // two kinds may redact alike
		}
		st.OpenFindings = kinds
	}
	if len(st.Lanes) > 0 {
		lanes := make([]LaneStatus, len(st.Lanes))
		for i, l := range st.Lanes {
			l.Lane, l.GapReason = redact.Keys(l.Lane), redact.Keys(l.GapReason)
			lanes[i] = l
		}
		st.Lanes = lanes
	}
	return st
}
