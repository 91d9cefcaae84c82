package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// Sink records the results of a batch. Commit must apply everything in one transaction:
// observations, findings, repair commands and the cursor advance, compare-and-set on
// Commit.Cursor (ErrConcurrentRun if it moved). A Verified outcome's row is recorded as
// verified at the earlier of Outcome.VerifiedAt and the commit's clock (the commit's alone
// when VerifiedAt is zero), never later. Redoing a batch after a crash must be harmless:
// a finding already open for (job, record, kind) is not recorded again and queues no command.
// The repair command a new finding queues is Outcome.RepairCommand with the finding's id. A
// Sink knows no finding kind but KindMissingLocally: what an outcome asks beyond that it says
// itself (Outcome.Once, Outcome.NotARow).
//
// A commit judges only rows that are as they were read. An outcome whose row no longer exists,
// or whose Version is not empty and is not the row's version under the commit's lock, is
// about a row that changed since its batch read it (a webhook, a repair, a person): the Sink
// records nothing of it, as for a row in grace (no observation, no finding, no command, no
// finding closed), and counts it in CommitResult.Changed; the next cycle judges the row as it
// is then. The reconciler's own writes (observations in host columns) are not changes. An
// outcome that names no row (NotARow) is recorded as it is.
//
// An older answer never overturns a newer one. A Verified outcome whose answer is older than
// the verified time the Sink holds for its row in the job (written by any commit: a lane, the
// sweep, a sharded worker) is treated as a row changed since its read: nothing of it is
// recorded and it counts in CommitResult.Changed. Both times are compared as the Sink writes
// them: the outcome's VerifiedAt capped by the commit's clock (the commit's time when zero),
// against the stored verified time (which a Sink that records commit times, such as pgstore
// with observations in host columns, holds instead of answer times).
//
// A verified judgment of a record's pair decides the record's findings in the job. An outcome
// that Decides (its row judged against the external object's current state: InSync,
// Repairable or NeedsReview) closes every other open finding of (job, record), whoever opened
// it and whatever its kind (another drift, invalid_row, a rejected or missing id, one a person
// is handling or reopened), but KindMissingLocally ones, which name external objects: by
// ResolvedByReconciler, in the findings' history, as ResolutionCleared when the verdict is
// InSync (the note saying both sides' states), else as ResolutionSuperseded by the outcome's
// own finding, opened or already open (Finding.SupersededBy; the note names it); one that
// another transaction is changing at that moment (a person resolving it) it may leave to the
// next verified judgment. So a verified judgment leaves a record at most one open finding in
// the job (missing_locally aside). Other outcomes close nothing: a state from an event may be
// older than the one an open finding was judged on, and an InFlight, Unverifiable or
// unreadable row says nothing of the drift; their findings stand beside the record's others
// until its next verified judgment. Findings of other jobs and resolved findings are never
// touched. Two commits judging the same record at once (a sweep and a lane) must not deadlock
// and must leave it at most one open finding.
type Sink interface {
	Commit(ctx context.Context, c Commit) (CommitResult, error)
}

// FailureRecorder is an optional ability of a Sink: remembering that a batch of a job failed,
// or could not make a single call, so that health reports the failure instead of the last good
// batch. RunBatch calls it after a batch that AfterBatch finds AfterFailure (one that missed
// its context's deadline included), AfterDeferred or AfterOutage; not after a lost cursor race
// or a cancelled context (the host stopping). It should not wait for the cursor's lock: a batch
// held up by that lock is such a failure.
type FailureRecorder interface {
	RecordFailure(ctx context.Context, job string, cause error) error
}

// Store is a Source and a Sink over the same data, as both our adapters are.
type Store[L any] interface {
	Source[L]
	Sink
}

// Commit is one batch's results.
type Commit struct {
	Job string
	// Cursor is the cursor as read; the commit applies only if it is unchanged.
	Cursor Cursor
	// Next is the new position: the key of the last row of Outcomes. Ignored when Wrap is set.
	Next string
	// Wrap ends the cycle: every row of the cycle has been asked, the cursor returns to the
	// start (its End cleared) and the cycle is recorded complete. Outcomes may be non-empty:
	// they are the cycle's last rows.
	Wrap bool
	// Outcomes holds one entry per row committed, in key order: the rows read, up to the first
	// one the external system could not be asked about (a rate limit, an outage), which with
	// the rows after it is the next batch's first.
	Outcomes []Outcome
}

// Unverifiable counts the outcomes whose verdict is Unverifiable, for monitoring.
func (c Commit) Unverifiable() int {
	n := 0
	for _, o := range c.Outcomes {
		if o.Decision.Verdict == Unverifiable {
			n++
		}
	}
	return n
}

// Outcome is what the reconciler concluded about one row.
type Outcome struct {
	RecordID   string
	ExternalID string
	// Local and External describe both sides' state as stored in findings and observations.
	// External is empty when the external state is unknown or the object does not exist.
	Local    string
	External string
	Decision Decision
	// Verified reports that the external system answered for this row: only then does the
	// row's last-verified time advance.
	Verified bool
	// VerifiedAt, for a Verified outcome, is when the call that obtained the answer began:
	// the answer reflects every change the external system made before it. The Sink records
	// the earlier of VerifiedAt and its own clock as the row's verified time; zero means the
	// commit's time. An outcome whose VerifiedAt is older than the row's stored verified time
	// is not recorded (see Sink): a newer answer was committed first.
	VerifiedAt time.Time
	// NotARow reports that RecordID names no local row but an external object (a
	// KindMissingLocally finding): the Sink records the finding without checking that a row
	// with that id still exists, as it does for the others.
	NotARow bool
	// Once asks the Sink to open the finding only if (job, record, kind) never had one: a
	// resolved one is not reopened. It is set on KindMissingLocally outcomes (see Lane).
	Once bool
	// Version is the row's Record.Version as read: the Sink records the outcome only if the
	// row is still at that version (see Sink). Empty means only that the row still exists.
	Version string
}

// Decides reports whether o is a verified judgment of a row's pair (Verified, InSync,
// Repairable or NeedsReview), which decides the record's findings: its other open findings are
// closed when it commits (see Sink).
func (o Outcome) Decides() bool {
	switch o.Decision.Verdict {
	case InSync, Repairable, NeedsReview:
		return o.Verified && !o.NotARow
	}
	return false
}

// CommitResult says what a commit added.
type CommitResult struct {
	// Findings is the number of findings opened (already open ones are not counted).
	Findings int
	// Commands is the number of repair commands queued.
	Commands int
	// Changed counts the outcomes not recorded because their row changed, or was deleted,
	// since it was read (see Sink).
	Changed int
}

// DefaultBatchSize and DefaultGrace are the values a zero Config gets.
const (
	DefaultBatchSize = 200
	DefaultGrace     = 10 * time.Minute
)

// Config describes one job: where its rows come from, whom to ask, how to judge.
type Config[L, E any] struct {
	// Job names the job; its cursor, findings and observations are kept under this name.
	// Required.
	Job string
	// Source reads the local rows. Required.
	Source Source[L]
	// Sink records the results. Required; usually the same store as Source.
	Sink Sink
	// Gateway asks the external system. Required.
	Gateway Gateway[E]
	// Classifier judges each pair. Required.
	Classifier Classifier[L, E]
	// BatchSize is the number of rows per batch. Zero means DefaultBatchSize.
	BatchSize int
	// Grace: rows changed more recently than this are InFlight and not sent to the gateway.
	// Zero means DefaultGrace; a negative value turns the grace period off.
	Grace time.Duration
	// Limiter paces gateway calls; nil means no pacing beyond Concurrency. Share one among
	// the jobs that call the same external account: its budget is the account's.
	Limiter Limiter
	// Concurrency is the number of gateway calls in flight at once. Zero means 1.
	Concurrency int
	// LocalState and ExternalState describe each side's state for findings and observations.
	// Nil means the Classifier's own, if it is a StateNamer (as a RuleTable is), else
	// fmt.Sprint for types that print as a plain value (strings, numbers, fmt.Stringers); for
	// other types they are required, so that no struct is recorded whole, secrets and all.
	LocalState    func(L) string
	ExternalState func(E) string
	// Logger receives one line per batch and one per gateway failure. Nil means no logging.
	Logger *slog.Logger
	// Observer, if set, is told of every gateway call and batch, for metrics and tracing;
	// Observers combines several.
	Observer Observer
}

// Reconciler runs batches of one job. It is safe for concurrent use, though two batches of one
// job at once only make one of them fail with ErrConcurrentRun.
type Reconciler[L, E any] struct {
	cfg   Config[L, E]
	p     pipeline[L, E]
	name  stepName
	cycle cycleStart
}

// New checks cfg and returns a Reconciler.
func New[L, E any](cfg Config[L, E]) (*Reconciler[L, E], error) {
	switch {
	case cfg.Job == "":
		return nil, errors.New("reconcile: config: Job is empty")
	case cfg.Source == nil:
		return nil, errors.New("reconcile: config: Source is nil")
	case cfg.Sink == nil:
		return nil, errors.New("reconcile: config: Sink is nil")
	case cfg.Gateway == nil:
		return nil, errors.New("reconcile: config: Gateway is nil")
	case cfg.Classifier == nil:
		return nil, errors.New("reconcile: config: Classifier is nil")
	case cfg.BatchSize < 0:
		return nil, fmt.Errorf("reconcile: config: BatchSize %d is negative", cfg.BatchSize)
	case cfg.Concurrency < 0:
		return nil, fmt.Errorf("reconcile: config: Concurrency %d is negative", cfg.Concurrency)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	} else if cfg.Grace < 0 {
		cfg.Grace = 0
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	p, err := newPipeline("config", cfg.Classifier, cfg.Limiter, cfg.LocalState, cfg.ExternalState, cfg.Logger, cfg.Observer)
	if err != nil {
		return nil, err
	}
	return &Reconciler[L, E]{cfg: cfg, p: p, name: stepName{job: cfg.Job}}, nil
}

// stateNames completes the functions that describe each side's state: the given ones, else the
// classifier's own if it is a StateNamer, else defaultState's.
func stateNames[L, E any](c Classifier[L, E], local func(L) string, ext func(E) string) (func(L) string, func(E) string, error) {
	if n, ok := c.(StateNamer[L, E]); ok {
		if local == nil {
			local = n.LocalState
		}
		if ext == nil {
			ext = n.ExternalState
		}
	}
	local, err := defaultState(local, "LocalState")
	if err != nil {
		return nil, nil, err
	}
	ext, err = defaultState(ext, "ExternalState")
	return local, ext, err
}

// defaultState returns f, or fmt.Sprint for a T that prints as a plain value: a string, number,
// bool or fmt.Stringer. For anything else, such as a struct or a pointer to one, fmt.Sprint
// would store every field in findings and observations, secrets included (a PaymentIntent's
// client_secret), so the host must say what to record.
func defaultState[T any](f func(T) string, field string) (func(T) string, error) {
	if f != nil {
		return f, nil
	}
	t := reflect.TypeFor[T]()
	plain := t.Implements(reflect.TypeFor[fmt.Stringer]())
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		plain = true
	}
	if !plain {
		return nil, fmt.Errorf("reconcile: config: %s is nil and %v is not a string, number or fmt.Stringer: "+
			"say which part of it findings and observations should record", field, t)
	}
	return func(v T) string { return fmt.Sprint(v) }, nil
}

// RunBatch checks cfg and runs one batch; see (*Reconciler).RunBatch.
func RunBatch[L, E any](ctx context.Context, cfg Config[L, E]) (Report, error) {
	r, err := New(cfg)
	if err != nil {
		return Report{}, err
	}
	return r.RunBatch(ctx)
}

// Report describes one batch.
type Report struct {
	Job string
	// Lane is the lane's name for a Lane's step, empty for a sweep batch.
	Lane string
	// Scanned is the number of rows read.
	Scanned int
	// Verdicts counts rows per verdict.
	Verdicts map[Verdict]int
	// Wrapped reports that the batch completed its BatchRunner's cycle, and so the scheduler
	// waits for the next one (AfterCycle). It means only that, whoever sets it: for a sweep,
	// the read came back short (fewer rows than BatchSize, none at all included) and every row
	// of it was asked; for a Lane, the feed reported End (a pass complete, an event log caught
	// up); for a FanOut, every account completed its cycle (the round); for a sharded sweep,
	// the job's cycle completed, not only the shard's.
	Wrapped bool
	// GatewayCalls is the number of external calls made.
	GatewayCalls int
	// RateLimited reports that the external system asked us to slow down, or the Limiter
	// could not grant a call in time. The cursor stops before the first row not asked.
	RateLimited bool
	// Unavailable reports that the batch's first two calls (a bulk list counts as one) failed
	// and none answered, so the rest was not asked; the cursor stops as after a rate limit.
	Unavailable bool
	// RetryAfter is the longest wait a rate-limit answer (or a limiter paused by one) asked for;
	// zero if none named one. A scheduler should not run the job again sooner.
	RetryAfter time.Duration
	// Deferred reports that the batch (or a Lane's step) did nothing: it wrote nothing, and
	// Scanned and Verdicts are zero. It means only that; RateLimited or Unavailable says why
	// when the external system could not be asked (its first call refused, or down: the
	// feed's, for a Lane), and neither is set when the BatchRunner had nothing it could do
	// now (a sharded job with no shard free, or its next cycle not due). Run the job again no
	// sooner than RetryAfter; AfterBatch says how.
	Deferred bool
	// NewFindings and NewCommands are what the commit added.
	NewFindings int
	NewCommands int
	// Changed counts the rows the commit left alone because they changed (or were deleted)
	// since they were read: nothing of them was recorded, as for a row in grace, and the next
	// cycle judges them again. Verdicts counts them as they were judged.
	Changed int
	// Duration is the wall time of the batch, failed ones included.
	Duration time.Duration
}

// UnverifiableRatio is the share of scanned rows that could not be checked; 0 for an empty batch.
func (r Report) UnverifiableRatio() float64 {
	if r.Scanned == 0 {
		return 0
	}
	return float64(r.Verdicts[Unverifiable]) / float64(r.Scanned)
}

// RunBatch reads the next batch of rows after the job's cursor, asks the gateway about each row
// outside any transaction, classifies every pair, and commits observations, findings, repair
// commands and the cursor advance together. A read shorter than BatchSize whose rows were all
// asked wraps the cursor and completes the cycle. After a rate limit or an outage the cursor
// stops before the first row not asked. On any error nothing of the batch is written and the
// next run redoes it.
func (r *Reconciler[L, E]) RunBatch(ctx context.Context) (Report, error) {
	var record func(context.Context, error) error
	if fr, ok := r.cfg.Sink.(FailureRecorder); ok {
		record = func(ctx context.Context, cause error) error { return fr.RecordFailure(ctx, r.cfg.Job, cause) }
	}
	return r.p.runStep(ctx, r.name, record, r.runBatch)
}

func (r *Reconciler[L, E]) runBatch(ctx context.Context) (Report, error) {
	cfg := &r.cfg
	rep := Report{Job: cfg.Job, Verdicts: make(map[Verdict]int, len(Verdicts))}
	start := time.Now()
	batch, err := cfg.Source.Read(ctx, ReadRequest{Job: cfg.Job, Limit: cfg.BatchSize, Grace: cfg.Grace})
	if err != nil {
		return rep, err
	}
	if len(batch.Records) > cfg.BatchSize {
		return rep, fmt.Errorf("source returned %d rows for a limit of %d", len(batch.Records), cfg.BatchSize)
	}
	commit := Commit{Job: cfg.Job, Cursor: batch.Cursor}
	// A short read is the cycle's end: the Source returns fewer rows than asked for only when
	// no row of the cycle lies after them.
	commit.Wrap = len(batch.Records) < cfg.BatchSize
	since := r.cycle.since(batch.Cursor, start)
	if len(batch.Records) > 0 {
		j, err := r.judge(ctx, batch.Records, since)
		rep.GatewayCalls = j.calls
		if err != nil {
			return rep, err
		}
		rep.RateLimited, rep.Unavailable, rep.RetryAfter = j.stopped, j.down, j.retryAfter
		// Commit up to the first row not asked, and stop the cursor there: a rate limit or an
		// outage delays rows, it never skips them.
		commit.Outcomes = j.outcomes[:j.done]
		if j.done < len(batch.Records) {
			commit.Wrap = false
			if j.done == 0 {
				rep.Deferred = true
				return rep, nil
			}
		}
		commit.Next = batch.Records[j.done-1].Key
	}
	rep.Wrapped = commit.Wrap
	for _, o := range commit.Outcomes {
		rep.Verdicts[o.Decision.Verdict]++
	}
	rep.Scanned = len(commit.Outcomes)
	storableOutcomes(commit.Outcomes)
	res, err := cfg.Sink.Commit(ctx, commit)
	if err != nil {
		return rep, err
	}
	r.cycle.committed(commit, since)
	rep.NewFindings, rep.NewCommands, rep.Changed = res.Findings, res.Commands, res.Changed
	return rep, nil
}

// cycleStart remembers when the job's current cycle started, as far as this Reconciler can
// tell: the start of the batch that began it, if this Reconciler committed every batch of the
// cycle since (the cursor is the one its last commit left). Otherwise (another process ran the
// job meanwhile, or this Reconciler is new) the batch's own start stands in: answers kept from
// before it are then not used, which costs calls, never a stale verification.
type cycleStart struct {
	mu    sync.Mutex
	left  Cursor    // the cursor the last commit left
	at    time.Time // when that commit's cycle started; zero if none is known
	known bool
}

// since is the earliest moment an answer may come from for a batch that started at start and
// read cur: the start of the cycle cur is in, or start.
func (c *cycleStart) since(cur Cursor, start time.Time) time.Time {
	if cur.Position == "" {
		return start // the batch starts a cycle
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known && cur.Position == c.left.Position && cur.Version == c.left.Version {
		return c.at
	}
	return start
}

// committed records that cm was committed in the cycle that started at since. The version a
// commit leaves is the one it read plus one (Cursor.Version counts the advances); a Sink that
// counts otherwise only makes since fall back to each batch's start.
func (c *cycleStart) committed(cm Commit, since time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known = !cm.Wrap
	c.left, c.at = Cursor{Position: cm.Next, Version: cm.Cursor.Version + 1}, since
}

// judgement is what judge concluded about a batch.
type judgement struct {
	outcomes []Outcome
	// done counts the outcomes before the first row that was not asked; outcomes[done:] are
	// not to be committed.
	done int
	paceState
}

// judge turns records into outcomes, calling the gateway for every row not changed within the
// grace period: first in bulk if the gateway is a BatchGateway, then one call per row not yet
// answered. No answer obtained before since is used. No database work happens here. Calls run
// on cfg.Concurrency goroutines, all of which have returned when judge returns.
func (r *Reconciler[L, E]) judge(ctx context.Context, recs []Record[L], since time.Time) (judgement, error) {
	cfg := &r.cfg
	out := make([]Outcome, len(recs))
	var ask []int
	checker, _ := cfg.Gateway.(IDChecker)
	for i, rec := range recs {
		var decided bool
		out[i], decided = r.p.start(rec)
		switch {
		case decided:
		case rec.Recent:
			out[i].Decision = Decision{Verdict: InFlight}
		case rec.ExternalID == "":
			// Nothing to ask about: never send an empty id to the external system.
			out[i].Decision = Decision{Verdict: NeedsReview, Kind: KindInvalidExternalID, Detail: "the row has no external id"}
		case checker != nil:
			if err := checker.CheckID(rec.ExternalID); err != nil {
				var zero E
				if err := r.decide(ctx, nil, &out[i], rec.Local, zero, time.Time{}, err); err != nil {
					return judgement{}, err
				}
				continue
			}
			ask = append(ask, i)
		default:
			ask = append(ask, i)
		}
	}
	if len(ask) == 0 {
		return judgement{outcomes: out, done: len(out)}, nil
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := r.p.newPacer()
	unasked := make([]bool, len(recs)) // rows the calls stopped before
	result := func() judgement { return judgement{paceState: p.state()} }
	if bg, ok := cfg.Gateway.(BatchGateway[E]); ok {
		var err error
		if ask, err = r.fetchBatch(ctx, bg, p, recs, out, ask, since); err != nil {
			return result(), err
		}
	}

	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	// askOne makes one call for out[i]; it reports false when the batch must stop.
	askOne := func(i int) (ok bool) {
		o := &out[i]
		defer func() {
			// A panicking gateway or classifier must not take the host process down with it.
			if v := recover(); v != nil {
				cancel(fmt.Errorf("record %s: panic: %v", o.RecordID, v))
				ok = false
			}
		}()
		if err := p.wait(ctx); err != nil {
			switch {
			case ctx.Err() != nil:
				return false // judge reports the cause
			case errors.Is(err, ErrAbortBatch):
				cancel(err) // the limiter failed: fail the batch
				return false
			}
			o.Decision, unasked[i] = Decision{Verdict: Unverifiable}, true
			return true
		}
		ext, at, err := r.p.fetch(ctx, r.name, p, cfg.Gateway, o.ExternalID)
		if errors.Is(err, ErrRateLimited) {
			// The row was not answered: it is asked again first thing next batch.
			o.Decision, unasked[i] = Decision{Verdict: Unverifiable}, true
			r.p.logger.LogAttrs(ctx, slog.LevelWarn, "reconcile gateway rate limited; the batch stops before this row",
				slog.String("job", cfg.Job), slog.String("record", o.RecordID), slog.String("error", err.Error()))
			return true
		}
		if err := r.decide(ctx, p, o, recs[i].Local, ext, at, err); err != nil {
			cancel(err)
			return false
		}
		p.answered(err == nil || !isFailure(err))
		return true
	}
	if p.failed() && len(ask) > 1 {
		// The bulk call failed: one row alone tells whether the system is down before the
		// others are sent.
		if !askOne(ask[0]) {
			return result(), context.Cause(ctx)
		}
		ask = ask[1:]
	}
	for range min(cfg.Concurrency, len(ask)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= len(ask) || ctx.Err() != nil || !askOne(ask[n]) {
					return
				}
			}
		}()
	}
	wg.Wait()
	j := result()
	if err := context.Cause(ctx); err != nil {
		return j, err
	}
	j.outcomes = out
	j.done = len(out)
	if k := slices.Index(unasked, true); k >= 0 {
		j.done = k
	}
	return j, nil
}

// notFoundDetail is the detail of a missing_externally finding (whose one diff is the object
// the row names, "not found" externally): what the external system
// answered about id, as the gateway's error says it (the Stripe adapter's names the 404 and
// the request), with anything that looks like a key redacted, and the id if the error does
// not name it.
func notFoundDetail(id string, err error) string {
	msg := redact.Keys(err.Error())
	if !strings.Contains(msg, id) {
		msg = strconv.Quote(id) + ": " + msg
	}
	return storable(msg, maxNotFoundDetail)
}

// maxNotFoundDetail bounds a missing_externally finding's detail: the error's text comes from
// the external system, or whatever stands in between.
const maxNotFoundDetail = 500

// isFailure reports whether a gateway error means the external system could not answer (as
// opposed to an answer: not found, a rejected request).
func isFailure(err error) bool {
	var review *ReviewError
	return !errors.Is(err, ErrNotFound) && !errors.As(err, &review)
}

// fetchBatch asks bg about the rows ask indexes, decides the rows it answered and returns the
// rest, to be asked one by one. Answers obtained before since are not used.
func (r *Reconciler[L, E]) fetchBatch(ctx context.Context, bg BatchGateway[E], p *pacer, recs []Record[L], out []Outcome, ask []int,
	since time.Time) (rest []int, err error) {
	defer func() {
		if v := recover(); v != nil {
			rest, err = nil, fmt.Errorf("batch fetch: panic: %v", v)
		}
	}()
	lookups := make([]Lookup, len(ask))
	for k, i := range ask {
		lookups[k] = Lookup{ExternalID: recs[i].ExternalID, CreatedAt: recs[i].CreatedAt}
	}
	batchStart := time.Now()
	found, err := fetchAnswers(ctx, bg, lookups, since, p.wait)
	returned := time.Now()
	calls := p.state().calls
	r.p.observeCalls(r.name, calls, returned.Sub(batchStart), err)
	// Only an answer obtained by this call is news that the external system is up: one kept
	// from an earlier batch says nothing about it now.
	fresh := false
	for id, a := range found {
		switch {
		case a.At.IsZero():
			a.At = batchStart
		case a.At.Before(since):
			delete(found, id) // the gateway broke its contract: ask again
			continue
		case a.At.After(returned):
			a.At = returned // it cannot have been obtained later
		}
		found[id] = a
		fresh = fresh || !a.At.Before(batchStart)
	}
	if aerr := p.aborted(); aerr != nil && ctx.Err() == nil {
		return nil, aerr // the limiter failed, whatever the gateway made of its error
	}
	switch {
	case err == nil:
		if calls > 0 {
			p.answered(true)
		}
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case errors.Is(err, ErrAbortBatch):
		return nil, err
	case errors.Is(err, ErrRateLimited):
		p.limited(err)
		if pe := (*paceError)(nil); !errors.As(err, &pe) { // our own limiter's refusal is not news
			r.p.logger.LogAttrs(ctx, slog.LevelWarn, "reconcile batch fetch rate limited",
				slog.String("job", r.cfg.Job), slog.String("error", err.Error()))
		}
	default:
		p.answered(fresh) // some objects came back now: the system is up
		r.p.logger.LogAttrs(ctx, slog.LevelWarn, "reconcile batch fetch failure; asking one by one",
			slog.String("job", r.cfg.Job), slog.Int("rows", len(ask)), slog.String("error", err.Error()))
	}
	for _, i := range ask {
		a, ok := found[recs[i].ExternalID]
		if !ok {
			rest = append(rest, i)
			continue
		}
		if err := r.decide(ctx, p, &out[i], recs[i].Local, a.Object, a.At, nil); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// fetchAnswers asks bg about lookups with answers since since: through FetchBatchSince if bg
// is a DatedBatchGateway, else through FetchBatch, whose answers are the call's (zero At).
func fetchAnswers[E any](ctx context.Context, bg BatchGateway[E], lookups []Lookup, since time.Time,
	wait func(context.Context) error) (map[string]Answer[E], error) {
	if dg, ok := bg.(DatedBatchGateway[E]); ok {
		found, err := dg.FetchBatchSince(ctx, lookups, since, wait)
		if found == nil {
			found = map[string]Answer[E]{}
		}
		return found, err
	}
	objs, err := bg.FetchBatch(ctx, lookups, wait)
	found := make(map[string]Answer[E], len(objs))
	for id, v := range objs {
		found[id] = Answer[E]{Object: v}
	}
	return found, err
}

// decide fills in o from one gateway answer, obtained by a call that began at at. It returns an
// error only when the batch must stop. p, the batch's pacer, may be nil before any call.
func (r *Reconciler[L, E]) decide(ctx context.Context, p *pacer, o *Outcome, local L, ext E, at time.Time, err error) error {
	cfg := &r.cfg
	var review *ReviewError
	switch {
	case err == nil:
		return r.p.judgePair(o, local, ext, at)
	case errors.Is(err, ErrAbortBatch):
		return err
	case ctx.Err() != nil:
		// Our own deadline or cancellation, not the external system's: abandon the batch
		// rather than record a wave of false Unverifiables.
		return context.Cause(ctx)
	case errors.Is(err, ErrNotFound):
		o.Decision = Decision{Verdict: NeedsReview, Kind: KindMissingExternally, Detail: notFoundDetail(o.ExternalID, err),
			Diffs: []Diff{{Field: "object", Local: o.ExternalID, External: "not found"}}}
		o.Verified, o.VerifiedAt = true, at
	case errors.As(err, &review):
		kind := review.Kind
		if kind == "" {
			kind = KindRejected
		}
		o.Decision = Decision{Verdict: NeedsReview, Kind: kind, Detail: review.Detail}
	default:
		o.Decision = Decision{Verdict: Unverifiable}
		// The first failure of a batch is a warning; the rest, often the same, are detail.
		level := slog.LevelDebug
		if p.firstFailure() {
			level = slog.LevelWarn
		}
		r.p.logger.LogAttrs(ctx, level, "reconcile gateway failure",
			slog.String("job", cfg.Job), slog.String("record", o.RecordID), slog.String("error", err.Error()))
	}
	return nil
}
