package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgbudget"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// grantWindow is the window in which Run counts the budget's grants: a second, less 1 ms for
// the grant log's rounding of times to the microsecond (and the float arithmetic that makes
// them), which could put two grants exactly one second apart into one window. At the rates
// run here that 1 ms is worth a tenth of a call, and workers with budgets of their own would
// exceed the bound many times over.
const grantWindow = time.Second - time.Millisecond

// sendSlack is how much earlier than the grants it had to follow Run lets a send be: the
// grants' times are rounded to the microsecond; a send is made later than its grant by at
// least the budget's answer's way to the worker.
const sendSlack = time.Millisecond

// Options configures one Run.
type Options struct {
	// Workers is the number of worker processes.
	Workers int
	// Shards is the number of shards of the job; zero means twice Workers.
	Shards int
	// Batch is the engine's batch size; zero means 1000.
	Batch int
	// Concurrency is the gateway calls in flight per worker; zero means 4.
	Concurrency int
	// PerObject makes the workers retrieve each PaymentIntent on its own, instead of listing
	// them a hundred a call.
	PerObject bool
	// Rate, Burst and MaxLate configure the budget shared by all workers (see
	// pgbudget.Config); zero MaxLate means pgbudget.DefaultMaxLate.
	Rate    float64
	Burst   int
	MaxLate time.Duration
	// Latency is added by stripetest to every request.
	Latency time.Duration
	// Lease is the shards' lease; zero means 30 s.
	Lease time.Duration
	// Cycles is the number of job cycles to run; zero means 1.
	Cycles int64
	// Hang, if set, makes the worker of that index (from 0) hang in its HangOnFetch-th bulk
	// fetch, mid-batch; Run then kills it with SIGKILL, and the others must take its shard
	// over once its lease expires.
	Hang        *int
	HangOnFetch int
	// Timeout bounds the run; zero means 10 minutes.
	Timeout time.Duration
	// Log receives the workers' stderr and progress; nil means os.Stderr.
	Log io.Writer
}

// Result is what a Run measured and checked.
type Result struct {
	Workers int     `json:"workers"`
	Shards  int     `json:"shards"`
	Rows    int     `json:"rows"`
	Seconds float64 `json:"seconds"`
	// RowsPerS is rows per second of wall time, from the first worker's start to the
	// completion of the last cycle.
	RowsPerS float64 `json:"rows_per_s"`
	// APICalls counts the requests stripetest received during the run; CallsPerS is their
	// rate over the run.
	APICalls  int     `json:"api_calls"`
	CallsPerS float64 `json:"calls_per_s"`
	// MaxGrants1s is the most calls the shared budget granted within any one second of the
	// database clock (less grantWindow's millisecond), as the fixture's grant log holds them;
	// GrantBound, Rate·1 s + Burst, is what the budget promises it never exceeds, and what Run
	// checks. Workers with a budget each would exceed it by far: each could make Rate·1 s +
	// Burst.
	MaxGrants1s int     `json:"max_grants_1s"`
	GrantBound  float64 `json:"grant_bound"`
	// Sends counts the requests the surviving workers sent (a killed worker's are lost), and
	// MaxSends1s is the most of them within any one second, by the time each worker read just
	// before the request. Run checks that no request was sent before the budget had granted as
	// many calls (by the same clock: the machine's), but does not bound MaxSends1s, nor
	// MaxCalls1s: a worker makes a granted call no earlier than its time and within MaxLate
	// of when the budget's answer said (pgbudget.Budget), but a process descheduled between
	// the answer and the request, or between the request and stripetest, sends or delivers
	// calls granted apart close together, however well the budget kept its rate.
	Sends      int `json:"sends"`
	MaxSends1s int `json:"max_sends_1s"`
	// MaxCalls1s is the most requests that arrived within any one second (a sliding window
	// over stripetest's log), MaxCallsAligned1s the most within a whole second of the clock.
	MaxCalls1s        int `json:"max_calls_1s"`
	MaxCallsAligned1s int `json:"max_calls_aligned_1s"`
	// Verifications counts the verifications committed per cycle; every row once each.
	Verifications []int64 `json:"verifications"`
	Findings      int64   `json:"findings"`
	Commands      int64   `json:"commands"`
	// Granted counts the calls the shared budget granted.
	Granted int64 `json:"granted"`
	// Takeovers counts the claims of an expired lease; Killed the workers killed.
	Takeovers int64          `json:"takeovers"`
	Killed    []string       `json:"killed,omitempty"`
	Reports   []WorkerReport `json:"worker_reports"`
}

// Run starts opts.Workers worker processes on the fixture, waits until the job has completed
// opts.Cycles cycles, and checks what they did: every row verified exactly once per cycle, the
// planted findings and commands exactly, the budget's grants within its rate in every
// one-second window, and no request sent before its grant. It returns the result with an
// error naming what failed.
func Run(ctx context.Context, f *Fixture, opts Options) (Result, error) {
	if opts.Shards == 0 {
		opts.Shards = 2 * opts.Workers
	}
	if opts.Batch == 0 {
		opts.Batch = 1000
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 4
	}
	if opts.Lease == 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Cycles == 0 {
		opts.Cycles = 1
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.MaxLate == 0 {
		opts.MaxLate = pgbudget.DefaultMaxLate
	}
	var log io.Writer = os.Stderr
	if opts.Log != nil {
		log = opts.Log
	}
	res := Result{Workers: opts.Workers, Shards: opts.Shards, Rows: f.Rows, GrantBound: opts.Rate + float64(opts.Burst)}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	f.Stripe.SetLatency(opts.Latency)
	f.Stripe.ResetLog()

	exe, err := os.Executable()
	if err != nil {
		return res, err
	}
	var started time.Time
	if err := f.Pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&started); err != nil {
		return res, err
	}
	procs := make([]*worker, opts.Workers)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.kill()
			}
		}
	}()
	for i := range procs {
		cfg := WorkerConfig{
			Owner: fmt.Sprintf("worker-%d", i), DatabaseURL: f.URL, Schema: f.Schema,
			StripeURL: f.Stripe.URL(), StripeKey: f.Stripe.Key(),
			Shards: opts.Shards, Batch: opts.Batch, Concurrency: opts.Concurrency, PerObject: opts.PerObject,
			Rate: opts.Rate, Burst: opts.Burst, MaxLate: opts.MaxLate, Lease: opts.Lease, Cycles: opts.Cycles,
		}
		if opts.Hang != nil && *opts.Hang == i {
			cfg.HangOnFetch = max(opts.HangOnFetch, 1)
		}
		if procs[i], err = startWorker(exe, cfg, log); err != nil {
			return res, err
		}
	}

	// Kill the worker that hangs as soon as it says so.
	if opts.Hang != nil {
		victim := procs[*opts.Hang]
		for {
			var n int
			if err := f.Pool.QueryRow(ctx, `SELECT count(*) FROM `+f.table("hangs")+` WHERE owner = $1`, victim.cfg.Owner).Scan(&n); err != nil {
				return res, fmt.Errorf("scale: waiting for %s to hang: %w", victim.cfg.Owner, err)
			}
			if n > 0 {
				break
			}
			if victim.exited() {
				return res, fmt.Errorf("scale: %s exited before it hung (the job may have completed first: use more rows)", victim.cfg.Owner)
			}
			select {
			case <-ctx.Done():
				return res, fmt.Errorf("scale: %s never hung: %w", victim.cfg.Owner, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		victim.kill()
		res.Killed = append(res.Killed, victim.cfg.Owner)
		fmt.Fprintf(log, "scale: killed %s (SIGKILL) while it hung mid-batch\n", victim.cfg.Owner)
	}

	var errs []error
	var sends []time.Time
	for _, p := range procs {
		rep, err := p.wait(ctx)
		if err != nil {
			// Also when wait killed it for want of time: the run did not finish.
			errs = append(errs, err)
		}
		if !p.killed {
			for _, ns := range rep.Sends {
				sends = append(sends, time.Unix(0, ns))
			}
			rep.Sends = nil // counted in the result, and thousands of times for a log
			res.Reports = append(res.Reports, rep)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}

	var finished time.Time
	err = f.Pool.QueryRow(ctx, `SELECT last_cycle_completed_at FROM `+f.table("reconcile_cursors")+` WHERE job = $1`, Job).Scan(&finished)
	if err != nil {
		return res, fmt.Errorf("scale: read the job's completion: %w", err)
	}
	elapsed := finished.Sub(started)
	res.Seconds = round(elapsed.Seconds(), 3)
	res.RowsPerS = math.Round(float64(int64(f.Rows)*opts.Cycles) / elapsed.Seconds())

	calls := f.Stripe.Log()
	times := make([]time.Time, 0, len(calls))
	for _, c := range calls {
		if c.Route == stripetest.ListPaymentIntents || c.Route == stripetest.RetrievePaymentIntent {
			times = append(times, c.Time)
		}
	}
	res.APICalls = len(times)
	res.CallsPerS = round(float64(res.APICalls)/elapsed.Seconds(), 1)
	res.MaxCalls1s, res.MaxCallsAligned1s = MaxInWindow(times, time.Second), maxAligned(times)

	res.Sends, res.MaxSends1s = len(sends), MaxInWindow(sends, time.Second)

	if err := f.check(ctx, &res, opts.Cycles); err != nil {
		return res, err
	}
	grants, err := f.grants(ctx)
	if err != nil {
		return res, err
	}
	res.MaxGrants1s = MaxInWindow(grants, grantWindow)
	if float64(res.MaxGrants1s) > res.GrantBound {
		return res, fmt.Errorf("scale: the budget granted %d calls within one second of the database clock, over %v/s for 1 s + a burst of %d",
			res.MaxGrants1s, opts.Rate, opts.Burst)
	}
	if n, worst := SentBeforeGranted(sends, grants, sendSlack); n > 0 {
		early := ""
		if worst > 0 {
			early = fmt.Sprintf("; one %v before the grant it needed", worst.Round(time.Microsecond))
		}
		return res, fmt.Errorf("scale: %d of %d requests were sent before the budget had granted as many calls (%d granted in all%s)",
			n, len(sends), len(grants), early)
	}
	return res, nil
}

// grants reads the times of the calls the budget granted, by the database clock, in order.
func (f *Fixture) grants(ctx context.Context) ([]time.Time, error) {
	rows, err := f.Pool.Query(ctx, `SELECT at FROM `+f.table("grants")+` ORDER BY at`)
	if err != nil {
		return nil, fmt.Errorf("scale: read the grants: %w", err)
	}
	grants, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("scale: read the grants: %w", err)
	}
	return grants, nil
}

// SentBeforeGranted checks that every send can be paired with a grant of its own made no later
// than it (less slack): that holds iff, for every k, the k-th earliest send is no earlier than
// the k-th earliest grant. It returns how many sends fail that, and by how much the most
// premature of those that have a k-th grant precedes it.
func SentBeforeGranted(sends, grants []time.Time, slack time.Duration) (n int, worst time.Duration) {
	sends, grants = slices.Clone(sends), slices.Clone(grants)
	slices.SortFunc(sends, func(a, b time.Time) int { return a.Compare(b) })
	slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
	for k, s := range sends {
		if k >= len(grants) {
			n++
			continue
		}
		if early := grants[k].Sub(s); early > slack {
			n++
			worst = max(worst, early)
		}
	}
	return n, worst
}

// check reads what the run left and compares it with what the fixture planted.
func (f *Fixture) check(ctx context.Context, res *Result, cycles int64) error {
	var missing, doubled int64
	for c := range cycles {
		var n, distinct int64
		if err := f.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT record_id) FROM `+f.table("verifications")+` WHERE cycle = $1`, c).
			Scan(&n, &distinct); err != nil {
			return err
		}
		res.Verifications = append(res.Verifications, n)
		missing += int64(f.Rows) - distinct
		doubled += n - distinct
	}
	err := f.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+f.table("reconcile_findings")+`),
		(SELECT count(*) FROM `+f.table("reconcile_outbox")+`),
		(SELECT coalesce(sum(granted), 0) FROM `+f.table("reconcile_rate_budgets")+`),
		(SELECT coalesce(sum(takeovers), 0) FROM `+f.table("reconcile_shards")+`)`).
		Scan(&res.Findings, &res.Commands, &res.Granted, &res.Takeovers)
	if err != nil {
		return err
	}
	wantF, wantC := Expected(f.Rows)
	switch {
	case missing != 0 || doubled != 0:
		return fmt.Errorf("scale: over %d cycles, %d row verifications missing and %d doubled (verifications per cycle %v, %d rows)",
			cycles, missing, doubled, res.Verifications, f.Rows)
	case res.Findings != wantF || res.Commands != wantC:
		return fmt.Errorf("scale: %d findings and %d commands, want %d and %d", res.Findings, res.Commands, wantF, wantC)
	}
	return nil
}

// MaxInWindow returns the most times within any window [t, t+w).
func MaxInWindow(times []time.Time, w time.Duration) int {
	times = slices.Clone(times)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range times {
		for !times[i].Before(times[j].Add(w)) {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// maxAligned returns the most times within one whole second of the clock.
func maxAligned(times []time.Time) int {
	per := map[int64]int{}
	best := 0
	for _, t := range times {
		per[t.Unix()]++
		best = max(best, per[t.Unix()])
	}
	return best
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// worker is a running worker process.
type worker struct {
	cfg    WorkerConfig
	cmd    *exec.Cmd
	stdout bytes.Buffer
	done   chan error
	killed bool
}

func startWorker(exe string, cfg WorkerConfig, log io.Writer) (*worker, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	w := &worker{cfg: cfg, done: make(chan error, 1)}
	w.cmd = exec.Command(exe)
	w.cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, log
	dieWithParent(w.cmd) // a test binary that dies (a panic, a -timeout, SIGKILL) takes its workers along
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("scale: start %s: %w", cfg.Owner, err)
	}
	go func() { w.done <- w.cmd.Wait() }()
	return w, nil
}

func (w *worker) exited() bool {
	select {
	case err := <-w.done:
		w.done <- err
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to end.
func (w *worker) kill() {
	if w.exited() {
		return
	}
	w.killed = true
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	err := <-w.done
	w.done <- err
}

// wait waits for the process to end and reads its report.
func (w *worker) wait(ctx context.Context) (WorkerReport, error) {
	var rep WorkerReport
	var err error
	select {
	case err = <-w.done:
		w.done <- err
	case <-ctx.Done():
		w.kill()
		return rep, fmt.Errorf("scale: %s did not finish: %w", w.cfg.Owner, ctx.Err())
	}
	if w.killed {
		return rep, nil
	}
	out := strings.TrimSpace(w.stdout.String())
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil && err == nil {
		err = fmt.Errorf("report %q: %w", out, jerr)
	}
	if err != nil {
		return rep, fmt.Errorf("scale: %s: %w", w.cfg.Owner, err)
	}
	return rep, nil
}
