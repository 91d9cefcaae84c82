package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultFanOutRefresh and DefaultFanOutBackoff are the values a zero FanOutConfig gets.
const (
	DefaultFanOutRefresh = time.Minute
	DefaultFanOutBackoff = time.Minute
)

// FanOutJob is one BatchRunner of an account: its sweep or one of its lanes.
type FanOutJob struct {
	// Job is the job its batches record under (Config.Job, or LaneConfig.Job for a lane,
	// which is its sweep's): FanOut.Health reads its Status. It must be the account's own:
	// two accounts sharing a job would share a cursor.
	Job string
	// Batches runs the job's batches: a *Reconciler or a *Lane.
	Batches BatchRunner
	// Status reads the job's Status for FanOut.Health: usually the account's store (a
	// pgstore.Store whose Filter selects the account's rows). Of several FanOutJobs of one job
	// (a sweep and its lanes), one having it is enough; a job none has it for fails health.
	Status StatusReader
}

// FanOutConfig describes a fan-out.
type FanOutConfig struct {
	// Name names the fan-out in reports, health and logs, such as "payments@connect". Required.
	Name string
	// Accounts lists the accounts to cover, such as the ids in the host's accounts table. It
	// is called at the start of every round and every RefreshEvery during one, so accounts
	// added to and removed from the table are followed. When it fails, the accounts it listed
	// last go on (Health reports the failure). Required.
	Accounts func(ctx context.Context) ([]string, error)
	// Build returns the FanOutJobs of one account, when it first appears. It should do no I/O.
	// An account it fails for takes no turn, is tried again at the next refresh, and fails
	// the fan-out's health meanwhile. Required.
	Build func(account string) ([]FanOutJob, error)
	// RefreshEvery is how often Accounts is called again during a round. Zero means
	// DefaultFanOutRefresh.
	RefreshEvery time.Duration
	// Backoff is how long an account sits out after a batch that failed or learned nothing
	// (Unavailable, Deferred), doubled per consecutive one up to 32 times, or the answer's
	// Retry-After if longer. Zero means DefaultFanOutBackoff.
	Backoff time.Duration
	// Logger receives a line per failed batch and per account added or removed. Nil means no
	// logging. Each batch logs through its own job's Logger.
	Logger *slog.Logger
	// Now is the clock of sit-out times; nil means time.Now.
	Now func() time.Time
}

// FanOut covers many accounts (tenants, Stripe connected accounts) with one BatchRunner. Each
// account has jobs of its own, built by the host (a sweep and its lanes, each under a job name
// of its own such as "payments@acct_123"), so each keeps its own cursor and lane positions; the
// fan-out takes turns among them:
//
//   - A round is the fan-out's cycle. It starts with the accounts the host lists, and it ends
//     when every account in it has completed a cycle: each of its FanOutJobs reported Wrapped
//     once during the round (a sweep's cycle, a reverse lane's pass, an events lane's
//     catch-up). The batch that ends the round reports Wrapped.
//   - Within a round, accounts take turns in the order of their ids, one batch per turn; an
//     account with several FanOutJobs runs the next of them not yet wrapped this round. An
//     account that has completed its cycle sits the rest of the round out, so a huge account
//     cannot starve small ones (they get one batch for each of its batches) and small ones do
//     not spin (they wait for the next round instead of verifying their rows again and again).
//   - An account added during a round joins it. An account removed during a round leaves it
//     at once; a batch of it already running finishes, and what it reports is ignored.
//   - What an account's batch leaves to do is AfterBatch's. An account whose batch fails or
//     finds the external system down or refusing (AfterFailure, AfterOutage, AfterDeferred)
//     sits out for Backoff, doubled with each consecutive such batch (or the Retry-After, if
//     longer), and does not hold the round up meanwhile: the others go on, their round
//     completes without it, and it takes its turn again, in whatever round is under way, once
//     its time has passed. Its health shows the failure and its growing lag. One that lost a
//     cursor race (AfterConflict) or had nothing to do (AfterIdle: a sharded job's shards all
//     leased elsewhere) sits out for Backoff, not doubled, or the Retry-After if longer. An
//     account rate limited after some progress (AfterRateLimit) stays in the round and waits
//     what the answer asked. The fan-out's batch reports neither an error nor pushback for one
//     account; only when every account left in the round waits does a batch report Deferred
//     and RateLimited, and when every account is away after failing, Deferred and
//     Unavailable, each with the wait until the first may go again; when every account left
//     runs in another call, it reports Deferred alone (AfterIdle).
//   - Give every account's jobs the same Limiter: the budget is the platform's (see the
//     Stripe adapter's Connect section for how Stripe counts), and a rate-limit answer for one
//     account then slows them all (an AdaptiveLimiter halves its rate and pauses for
//     Retry-After).
//
// A round therefore takes the sum of the accounts' cycles' calls at the shared rate (plus each
// batch's local work), and every account that does not fail completes a cycle within it. The fan-out starts no goroutine: batches run
// in the caller's (a Runner's or RunTick's), so stopping the caller stops it, and a removed
// account leaves nothing running. It is safe for concurrent use; concurrent RunBatch calls
// run batches of different accounts.
type FanOut struct {
	cfg FanOutConfig

	refreshMu sync.Mutex // one refresh at a time; held while Accounts and Build run

	mu        sync.Mutex
	accounts  map[string]*fanAccount
	listed    bool // Accounts has answered at least once
	listedAt  time.Time
	inRound   bool
	last      string // the account whose turn came last
	rounds    int64
	listError error // the last refresh's failure, nil after a success
}

// fanAccount is one account's state.
type fanAccount struct {
	id        string
	jobs      []FanOutJob
	buildErr  error
	wrapped   []bool // per FanOutJob: reported Wrapped during this round
	next      int    // the FanOutJob whose turn is next
	busy      bool   // a batch of it is running
	notBefore time.Time
	failures  int  // consecutive batches that made no progress
	away      bool // sitting out after a batch that made no progress
}

// done reports that the account has nothing more to do this round: it completed its cycle,
// it cannot run at all, or it is sitting out after a batch that made no progress (a failing
// account must not hold the round, and with it every other account, up).
func (a *fanAccount) done(now time.Time) bool {
	return a.buildErr != nil || !slices.Contains(a.wrapped, false) || a.away && a.notBefore.After(now)
}

// NewFanOut checks cfg and returns a FanOut. It lists no account yet: the first batch does.
func NewFanOut(cfg FanOutConfig) (*FanOut, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("reconcile: fan-out config: Name is empty")
	case cfg.Accounts == nil:
		return nil, errors.New("reconcile: fan-out config: Accounts is nil")
	case cfg.Build == nil:
		return nil, errors.New("reconcile: fan-out config: Build is nil")
	case cfg.RefreshEvery < 0 || cfg.Backoff < 0:
		return nil, errors.New("reconcile: fan-out config: RefreshEvery and Backoff must not be negative")
	}
	cfg.RefreshEvery = cmp.Or(cfg.RefreshEvery, DefaultFanOutRefresh)
	cfg.Backoff = cmp.Or(cfg.Backoff, DefaultFanOutBackoff)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &FanOut{cfg: cfg, accounts: map[string]*fanAccount{}}, nil
}

// Refresh calls Accounts and follows the list: it builds the FanOutJobs of new accounts (and
// retries those whose build failed) and drops removed ones. RunBatch calls it at the start of
// every round and every RefreshEvery; call it yourself to follow a change at once.
func (f *FanOut) Refresh(ctx context.Context) error {
	f.refreshMu.Lock()
	defer f.refreshMu.Unlock()
	ids, err := f.cfg.Accounts(ctx)
	if err == nil {
		ids, err = cleanAccounts(ids)
	}
	if err != nil {
		err = fmt.Errorf("reconcile: fan-out %s: list accounts: %w", f.cfg.Name, err)
		f.mu.Lock()
		f.listError = err
		f.mu.Unlock()
		return err
	}
	f.mu.Lock()
	var build []string
	for _, id := range ids {
		if a, ok := f.accounts[id]; !ok || a.buildErr != nil {
			build = append(build, id)
		}
	}
	f.mu.Unlock()

	// Build runs without f.mu, so batches and health go on meanwhile.
	built := make(map[string]*fanAccount, len(build))
	for _, id := range build {
		built[id] = f.build(id)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	keep := make(map[string]bool, len(ids))
	for _, id := range ids {
		keep[id] = true
	}
	for id := range f.accounts {
		if !keep[id] {
			delete(f.accounts, id)
			f.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "reconcile fan-out: account removed",
				slog.String("fanout", f.cfg.Name), slog.String("account", id))
		}
	}
	owner := map[string]string{} // job -> account, to refuse a job two accounts share
	for id, a := range f.accounts {
		for _, j := range a.jobs {
			owner[j.Job] = id
		}
	}
	for _, id := range slices.Sorted(maps.Keys(built)) {
		a := built[id]
		if a.buildErr == nil {
			for _, j := range a.jobs {
				if other, ok := owner[j.Job]; ok && other != id {
					a = &fanAccount{id: id, buildErr: fmt.Errorf("job %q is also account %s's", j.Job, other)}
					break
				}
			}
		}
		if old, ok := f.accounts[id]; !ok || old.buildErr != nil {
			f.accounts[id] = a
			for _, j := range a.jobs {
				owner[j.Job] = id
			}
			if a.buildErr != nil {
				f.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile fan-out: cannot build the account's jobs; it is skipped",
					slog.String("fanout", f.cfg.Name), slog.String("account", id), slog.String("error", a.buildErr.Error()))
			} else if !ok {
				f.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "reconcile fan-out: account added",
					slog.String("fanout", f.cfg.Name), slog.String("account", id))
			}
		}
	}
	f.listed, f.listedAt, f.listError = true, f.cfg.Now(), nil
	return nil
}

// cleanAccounts sorts and deduplicates ids and refuses an empty one.
func cleanAccounts(ids []string) ([]string, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > 0 && ids[0] == "" {
		return nil, errors.New("the list has an empty account id")
	}
	return ids, nil
}

// build calls Build for one account, turning a panic or a bad answer into the account's
// build error.
func (f *FanOut) build(id string) (a *fanAccount) {
	a = &fanAccount{id: id}
	defer func() {
		if v := recover(); v != nil {
			a.jobs, a.buildErr = nil, buildFailure{fmt.Errorf("build: panic: %v", v)}
		}
	}()
	jobs, err := f.cfg.Build(id)
	switch {
	case err != nil:
		a.buildErr = buildFailure{err}
	case len(jobs) == 0:
		a.buildErr = errors.New("build returned no jobs")
	}
	for i, j := range jobs {
		if a.buildErr == nil && (j.Job == "" || j.Batches == nil || isNilPointer(j.Batches)) {
			a.buildErr = fmt.Errorf("build: job %d has no Job name or no Batches", i)
		}
	}
	if a.buildErr == nil {
		a.jobs, a.wrapped = jobs, make([]bool, len(jobs))
	}
	return a
}

// buildFailure is the host's Build failing (its error, its panic): the text is the host's, so
// Health shows only its FailureReason.
type buildFailure struct{ error }

func (e buildFailure) Unwrap() error { return e.error }

// RunBatch runs one turn: one batch of the next account due in the round (see FanOut). The
// report counts that batch's rows, verdicts, calls and findings under the fan-out's Name;
// Wrapped reports that the round is complete. A failed account batch (one that missed ctx's
// deadline included) is logged and makes the account sit out; it is not RunBatch's error,
// which is kept for ctx cancelled (the caller stopping) and for the account list failing
// before it was ever read. Once it has been read, a list that fails is
// logged and reported by Health, and the accounts listed last go on.
func (f *FanOut) RunBatch(ctx context.Context) (Report, error) {
	rep := Report{Job: f.cfg.Name, Verdicts: map[Verdict]int{}}
	f.mu.Lock()
	due := !f.inRound || f.cfg.Now().Sub(f.listedAt) >= f.cfg.RefreshEvery
	f.mu.Unlock()
	if due {
		if err := f.Refresh(ctx); err != nil {
			f.mu.Lock()
			listed := f.listed
			f.listedAt = f.cfg.Now() // try again after RefreshEvery, not on every batch
			f.mu.Unlock()
			if !listed || ctx.Err() != nil {
				return rep, err
			}
			// The accounts listed last time go on; Health reports the list failing.
			f.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile fan-out: cannot list the accounts; going on with the last list",
				slog.String("fanout", f.cfg.Name), slog.String("error", err.Error()))
		}
	}

	f.mu.Lock()
	if !f.inRound {
		f.startRoundLocked()
	}
	a, j, stalled := f.pickLocked()
	if a == nil {
		if stalled == nil {
			f.endRoundLocked()
			rep.Wrapped = true
		} else {
			rep = *stalled
		}
		f.mu.Unlock()
		return rep, nil
	}
	a.busy = true
	f.last = a.id
	f.mu.Unlock()

	inner, err := f.runOne(ctx, a.jobs[j].Batches)

	f.mu.Lock()
	defer f.mu.Unlock()
	a.busy = false
	after := AfterBatch(ctx, inner, err)
	if after == AfterStop {
		return rep, err // the caller is stopping: nothing to hold against the account
	}
	if f.accounts[a.id] == a {
		f.settleLocked(ctx, a, j, inner, after, err)
	} // else removed while the batch ran: its report is ignored
	if err == nil && f.accounts[a.id] == a {
		rep.Scanned, rep.Verdicts, rep.GatewayCalls = inner.Scanned, inner.Verdicts, inner.GatewayCalls
		rep.NewFindings, rep.NewCommands, rep.Changed, rep.Duration = inner.NewFindings, inner.NewCommands, inner.Changed, inner.Duration
		if rep.Verdicts == nil {
			rep.Verdicts = map[Verdict]int{}
		}
	}
	if f.roundDoneLocked() {
		f.endRoundLocked()
		rep.Wrapped = true
	}
	return rep, nil
}

// runOne runs one batch, turning a panic into an error so that one account cannot take the
// fan-out down.
func (f *FanOut) runOne(ctx context.Context, b BatchRunner) (rep Report, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return b.RunBatch(ctx)
}

// settleLocked records what one batch of account a's FanOutJob j did, as AfterBatch decided
// (after).
func (f *FanOut) settleLocked(ctx context.Context, a *fanAccount, j int, rep Report, after After, err error) {
	now := f.cfg.Now()
	a.next = (j + 1) % len(a.jobs)
	away := func(d time.Duration) { a.notBefore, a.away = now.Add(d), true }
	attrs := func(extra ...slog.Attr) []slog.Attr {
		return append([]slog.Attr{slog.String("fanout", f.cfg.Name), slog.String("account", a.id), slog.String("job", a.jobs[j].Job),
			slog.Int("consecutive_failures", a.failures), slog.Time("until", a.notBefore)}, extra...)
	}
	switch after {
	case AfterConflict:
		// Another process runs this job (another replica's fan-out, say): routine, and that
		// process completes the cycle.
		away(max(f.cfg.Backoff, rep.RetryAfter))
		f.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "reconcile fan-out: another reconciler moved the account's cursor; it sits out", attrs()...)
	case AfterIdle:
		// The job had nothing it could do now (a sharded job's shards all leased by other
		// workers): routine, as a conflict is, for at least the wait it asked.
		away(max(f.cfg.Backoff, rep.RetryAfter))
	case AfterFailure:
		a.failures++
		away(max(backoff(f.cfg.Backoff, a.failures), rep.RetryAfter))
		f.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile fan-out: the account's batch failed; it sits out",
			attrs(slog.String("error", err.Error()))...)
	case AfterOutage, AfterDeferred:
		// The external system is down for the account, or refused it every call: as a
		// failure. A Retry-After longer than the backoff is honoured.
		a.failures++
		away(max(backoff(f.cfg.Backoff, a.failures), rep.RetryAfter))
		f.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile fan-out: the account's batch could not ask the external system; it sits out",
			attrs(slog.Bool("rate_limited", rep.RateLimited))...)
	default: // AfterProgress, AfterRateLimit, AfterCycle
		a.failures, a.away = 0, false
		// After a rate limit that followed progress, the shared limiter slows everyone
		// already; the account stays in the round and waits what the answer asked.
		a.notBefore = now.Add(rep.RetryAfter)
		if after == AfterCycle {
			a.wrapped[j] = true
		}
	}
}

// startRoundLocked starts a round over the accounts known now.
func (f *FanOut) startRoundLocked() {
	for _, a := range f.accounts {
		if a.buildErr == nil {
			clear(a.wrapped)
			a.next = 0
		}
	}
	f.inRound, f.last = true, ""
}

// endRoundLocked ends the round; the next batch lists the accounts again and starts another.
func (f *FanOut) endRoundLocked() {
	f.inRound = false
	f.rounds++
}

// roundDoneLocked reports that no account has anything left to do this round, and that the
// round did something: not every account is away after failing.
func (f *FanOut) roundDoneLocked() bool {
	now := f.cfg.Now()
	completed, away := false, false
	for _, a := range f.accounts {
		switch {
		case !a.done(now):
			return false
		case a.buildErr == nil && !slices.Contains(a.wrapped, false):
			completed = true
		case a.away:
			away = true
		}
	}
	return completed || !away
}

// pickLocked returns the account whose turn it is and the FanOutJob to run: the first account
// after the last one served, in id order, that is not done this round, not busy and not
// sitting out. With none, it returns a nil account, and a Deferred report if some are still to
// run this round or every account is away after failing (nil if the round is complete).
func (f *FanOut) pickLocked() (*fanAccount, int, *Report) {
	now := f.cfg.Now()
	ids := slices.Sorted(maps.Keys(f.accounts))
	start, _ := slices.BinarySearch(ids, f.last)
	if start < len(ids) && ids[start] == f.last {
		start++
	}
	var (
		pending, completed bool
		wait, away         time.Duration // the shortest wait of the accounts in the round, and of those away
	)
	for k := range ids {
		a := f.accounts[ids[(start+k)%len(ids)]]
		if a.buildErr == nil && !slices.Contains(a.wrapped, false) {
			completed = true
		}
		if a.away && a.notBefore.After(now) {
			if d := a.notBefore.Sub(now); away == 0 || d < away {
				away = d
			}
		}
		if a.done(now) {
			continue
		}
		pending = true
		switch {
		case a.busy:
		case a.notBefore.After(now):
			if d := a.notBefore.Sub(now); wait == 0 || d < wait {
				wait = d
			}
		default:
			j := a.next
			for a.wrapped[j] {
				j = (j + 1) % len(a.jobs)
			}
			return a, j, nil
		}
	}
	switch {
	case !pending && !completed && away > 0:
		// Every account is away after failing: no round was run. Wait for the first back.
		return nil, 0, &Report{Job: f.cfg.Name, Verdicts: map[Verdict]int{}, Deferred: true, Unavailable: true, RetryAfter: away}
	case !pending:
		return nil, 0, nil
	}
	if wait == 0 {
		// Every account left in the round runs in another call: nothing to do here now.
		return nil, 0, &Report{Job: f.cfg.Name, Verdicts: map[Verdict]int{}, Deferred: true}
	}
	// Every account left in the round waits out a rate limit (or runs in another call).
	return nil, 0, &Report{Job: f.cfg.Name, Verdicts: map[Verdict]int{}, Deferred: true, RateLimited: true, RetryAfter: wait}
}

// Rounds is the number of rounds completed since the fan-out was made.
func (f *FanOut) Rounds() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rounds
}

// Accounts returns the ids of the accounts the fan-out covers now, sorted: those the last
// refresh listed.
func (f *FanOut) Accounts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.accounts))
}

// Health judges every account: it reads the Status of each account's jobs (FanOutJob.Status)
// and evaluates it with p. The result is the fan-out's, under its Name: its Status sums the
// accounts' rows and findings and carries the largest lag (and their StaleAfter, when they all
// say the same), and it has one check per account
// job, named "account:" and the account's id (and ":" and the job's name when the account has
// more than one job), whose Value is that job's lag and whose Reason, when it fails, names the
// account and says which of its checks failed. An account whose jobs cannot be built, or whose
// status cannot be read, fails its check; so does the account list, as check "accounts", when
// it cannot be read. A fan-out that has not listed its accounts yet lists them first.
//
// The reasons are fit for the health endpoint, which has no sign-in: they never carry an
// error's text, which may hold SQL, a database's name or a credential. A failed batch or lane
// step, a build or a list shows as its FailureReason, and a status that cannot be read as
// "status unavailable", its error logged (FanOutConfig.Logger).
func (f *FanOut) Health(ctx context.Context, p HealthPolicy) Health {
	f.mu.Lock()
	listed := f.listed
	f.mu.Unlock()
	if !listed {
		_ = f.Refresh(ctx) // its failure is in listError, reported below
	}
	type target struct {
		account, job string
		sr           StatusReader
		err          error
		several      bool // the account has more than one job
	}
	f.mu.Lock()
	var targets []target
	for _, id := range slices.Sorted(maps.Keys(f.accounts)) {
		a := f.accounts[id]
		if a.buildErr != nil {
			targets = append(targets, target{account: id, err: a.buildErr})
			continue
		}
		first := len(targets)
		for _, j := range a.jobs {
			k := slices.IndexFunc(targets[first:], func(t target) bool { return t.job == j.Job })
			if k < 0 {
				targets = append(targets, target{account: id, job: j.Job, sr: j.Status})
			} else if targets[first+k].sr == nil {
				targets[first+k].sr = j.Status
			}
		}
		for k := first; k < len(targets); k++ {
			targets[k].several = len(targets)-first > 1
		}
	}
	listErr := f.listError
	f.mu.Unlock()

	pd := p.WithDefaults()
	round := func(d time.Duration) string { return d.Round(time.Second).String() }
	h := Health{Job: f.cfg.Name, OK: true, Status: Status{Job: f.cfg.Name, OpenFindings: map[string]int{}}}
	add := func(c Check) {
		if c.OK {
			c.Reason = ""
		}
		h.Checks = append(h.Checks, c)
		h.OK = h.OK && c.OK
	}
	if listErr != nil {
		add(Check{Name: "accounts", OK: false, Value: "cannot be listed", Limit: "listed",
			Reason: "accounts: the account list cannot be read: " + FailureReason(listErr.Error())})
	}
	thresholds := map[time.Duration]bool{} // the accounts' Status.StaleAfter
	for _, t := range targets {
		c := Check{Name: "account:" + t.account, Limit: round(pd.LagSLO)}
		if t.several {
			c.Name += ":" + t.job
		}
		if t.err != nil {
			c.Value = "not built"
			shown := t.err.Error()
			if errors.As(t.err, new(buildFailure)) {
				shown = FailureReason(shown)
			}
			c.Reason = fmt.Sprintf("account %s: its jobs cannot be built: %s", t.account, shown)
			add(c)
			continue
		}
		if t.sr == nil {
			c.Value = "not monitored"
			c.Reason = fmt.Sprintf("account %s (job %s): no runner of the job has a Status reader", t.account, t.job)
			add(c)
			continue
		}
		st, err := t.sr.Status(ctx, t.job)
		if err != nil {
			f.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile fan-out: could not read an account job's status",
				slog.String("fanout", f.cfg.Name), slog.String("account", t.account), slog.String("job", t.job), slog.String("error", err.Error()))
			c.Value = "status unreadable"
			c.Reason = fmt.Sprintf("account %s (job %s): %s", t.account, t.job, errStatusUnavailable)
			add(c)
			continue
		}
		jh := EvaluateHealth(withFailureReasons(st), p)
		c.OK, c.Value = jh.OK, round(st.Lag)
		c.Reason = fmt.Sprintf("account %s (job %s): %s", t.account, t.job, strings.Join(jh.Reasons(), "; "))
		add(c)
		mergeStatus(&h.Status, st)
		thresholds[st.StaleAfter] = true
	}
	if len(thresholds) == 1 { // the accounts' stores agree on what is stale
		for d := range thresholds {
			h.Status.StaleAfter = d
		}
	}
	return h
}

// mergeStatus adds one account job's status to the fan-out's: the largest lag, the latest
// clock, sums of rows and findings.
func mergeStatus(dst *Status, st Status) {
	if st.Now.After(dst.Now) {
		dst.Now = st.Now
	}
	dst.Lag = max(dst.Lag, st.Lag)
	dst.Rows += st.Rows
	switch {
	case st.NewRowsPerHour < 0 || dst.NewRowsPerHour < 0:
		dst.NewRowsPerHour = -1
	default:
		dst.NewRowsPerHour += st.NewRowsPerHour
	}
	for k, n := range st.OpenFindings {
		dst.OpenFindings[k] += n
	}
	dst.StaleFindings += st.StaleFindings
	if !st.OldestOpenFinding.IsZero() && (dst.OldestOpenFinding.IsZero() || st.OldestOpenFinding.Before(dst.OldestOpenFinding)) {
		dst.OldestOpenFinding = st.OldestOpenFinding
	}
}
