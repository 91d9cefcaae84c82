package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"
)

// The sweep starts from local rows, so it cannot see external objects that have no row, and it
// finds a missed webhook only when its cycle reaches that row. Lanes start from the external
// side instead: a Feed lists external objects a page at a time (a reverse scan of recently
// created objects, or the external system's event log), a Matcher finds the local rows with
// those external ids in one query, and each pair is classified and recorded exactly as the
// sweep does, under the sweep's job, so the open-finding deduplication covers lanes and sweep
// together.

// KindMissingLocally is the finding kind of an external object that no local row refers to,
// reported by a lane with ReportMissing (the reverse scan): a PaymentIntent created at Stripe
// whose local transaction rolled back, say. Such findings are NeedsReview, and their RecordID
// is the external id, since there is no local row.
const KindMissingLocally = "missing_locally"

// DefaultLaneGrace is the Grace of a lane whose LaneConfig.Grace is zero and whose Feed is not
// a LaneGracer: an events lane's. It is shorter than the sweep's DefaultGrace, since an events
// lane is how a missed webhook is found within minutes, and it reads an event only once the
// event's webhook has had time to be applied (stripeadapter's EventsOptions.Settle).
const DefaultLaneGrace = time.Minute

// LaneGracer is an optional ability of a Feed: the Grace a lane over it gives the rows when
// LaneConfig.Grace is zero. A feed that lists objects whatever happened to them lately, such as
// a reverse scan, returns the sweep's DefaultGrace, so that its lane does not judge the rows the
// sweep leaves in flight (a webhook being applied).
type LaneGracer interface {
	LaneGrace() time.Duration
}

// Feed lists external objects a page at a time, from a position the lane keeps.
type Feed[E any] interface {
	// Next returns the objects after position pos; "" means the feed has no position yet (a
	// first run, or a new pass). wait must be called before every external call: it paces the
	// calls with the lane's Limiter and counts them; its error (a rate limit, a limiter out of
	// time, ctx done) ends the step. On an error Next returns it and the lane writes nothing:
	// the step is done again from pos next time. A rate limit is an ErrRateLimited, ideally a
	// *RateLimitError, so that the lane backs off for as long as the answer asked; a feed that
	// had read some pages before it may return them, with a Next after them, together with
	// the rate-limit error, and the lane commits them.
	Next(ctx context.Context, pos string, wait func(context.Context) error) (FeedPage[E], error)
}

// FeedPage is one step of a Feed.
type FeedPage[E any] struct {
	// Objects are the external objects of the step, at most one per external id.
	Objects []FeedObject[E]
	// Next is the position to resume from. The lane stores it in the transaction that records
	// the step's results, so a step is either recorded whole or done again.
	Next string
	// End reports that the feed has nothing more for now: a reverse scan's pass is complete, an
	// event log is caught up.
	End bool
	// Gap, if not empty, says why the feed could not resume from pos (a checkpoint lost, or
	// older than the external system keeps its log) and started again from Next. What changed
	// in between is left to the sweep; health reports the gap until a sweep cycle covers it.
	Gap string
}

// FeedObject is one external object of a FeedPage.
type FeedObject[E any] struct {
	ExternalID string
	Object     E
	// CreatedAt is when the external object was created, if known.
	CreatedAt time.Time
	// ObservedAt is when Object was the object's state, for a state taken from an event; zero
	// means it is the current state. A local row changed at or after ObservedAt has moved on
	// since and is judged InFlight rather than against the older state, and a pair judged from
	// such a state opens findings but does not count as a verification of the row.
	ObservedAt time.Time
}

// Matcher finds local rows by external id: a lane's view of the local side.
type Matcher[L any] interface {
	Match(ctx context.Context, req MatchRequest) (MatchResult[L], error)
}

// MatchResult is what a Matcher found.
type MatchResult[L any] struct {
	// Rows are the rows in the Matcher's scope (a tier's filter) with one of the external ids.
	Rows []Record[L]
	// Elsewhere lists external ids that only rows outside that scope have: another tier's
	// rows. They are neither judged nor reported missing.
	Elsewhere []string
}

// MatchRequest asks a Matcher for the rows whose external id is one of ExternalIDs.
type MatchRequest struct {
	Job         string
	ExternalIDs []string
	// Since, if not nil, has one entry per external id: a row changed at or after Since[i]
	// comes back Recent, as does any row changed within Grace (by the store's clock). A zero
	// entry adds nothing.
	Since []time.Time
	Grace time.Duration
}

// LaneSink records a lane's steps.
type LaneSink interface {
	// ReadLane returns the lane's position and version; the zero Cursor if it has none.
	ReadLane(ctx context.Context, job, lane string) (Cursor, error)
	// CommitLane writes observations, findings, repair commands and the lane's new position in
	// one transaction, compare-and-set on LaneCommit.Cursor (ErrConcurrentRun if it moved), by
	// the rules of Sink.Commit: a finding already open for (job, record, kind), whoever opened
	// it, is not recorded again and queues no command; a row changed since the Matcher read it
	// is left alone; a verified judgment closes the record's other open findings.
	CommitLane(ctx context.Context, c LaneCommit) (CommitResult, error)
}

// LaneFailureRecorder is an optional ability of a LaneSink: remembering that a step of a lane
// failed, so that health reports a lane that keeps failing. RunBatch calls it after a step
// that AfterBatch finds AfterFailure (one that missed its context's deadline included), not
// after a lost race, a cancelled context (the host stopping) or a deferred step.
type LaneFailureRecorder interface {
	RecordLaneFailure(ctx context.Context, job, lane string, cause error) error
}

// LaneCommit is one lane step's results.
type LaneCommit struct {
	Job, Lane string
	// Cursor is the lane's cursor as read; the commit applies only if it is unchanged.
	Cursor Cursor
	// Next, End and Gap are the FeedPage's.
	Next string
	End  bool
	Gap  string
	// Outcomes holds one entry per object (more if several rows share an external id).
	Outcomes []Outcome
}

// LaneConfig describes one lane of a job.
type LaneConfig[L, E any] struct {
	// Job is the sweep's job: findings and observations are recorded under it, so that a drift
	// found by a lane and by the sweep is one finding with one command. Required.
	Job string
	// Lane names the lane within the job, such as "events" or "reverse"; its position is kept
	// under (Job, Lane). Required.
	Lane string
	// Feed lists the external objects. Required.
	Feed Feed[E]
	// Matcher finds the local rows. Required.
	Matcher Matcher[L]
	// Sink records the results. Required.
	Sink LaneSink
	// Classifier judges each pair; usually the sweep's. Required.
	Classifier Classifier[L, E]
	// ReportMissing makes an object that no local row refers to a NeedsReview finding of kind
	// KindMissingLocally. Without it such objects are skipped (an event log also carries objects
	// created by other systems).
	ReportMissing bool
	// Grace: local rows changed more recently than this (by the store's clock) are judged
	// InFlight, as Config.Grace does for the sweep. It is about the rows, not the external
	// objects: which objects a feed lists is the feed's own option (a reverse scan leaves out
	// the objects created in its last minutes: stripeadapter.ObjectReverseOptions.MinAge).
	// Zero means the Feed's LaneGrace if it is a LaneGracer (a reverse scan's is the sweep's
	// DefaultGrace), else DefaultLaneGrace (an events lane's). A negative value turns it off.
	Grace time.Duration
	// Current, if set, is asked for the present state of an object whose row changed after the
	// state the feed gave (FeedObject.ObservedAt) but not within Grace, and disagrees with that
	// state: an unrelated write to a row soon after a missed webhook would otherwise leave the
	// drift to the sweep. A row that agrees with the event (its webhook was applied) costs
	// nothing. One call per such row, paced by the Limiter; the sweep's Gateway fits.
	Current Gateway[E]
	// Limiter paces the Feed's and Current's calls; share the sweep's.
	Limiter Limiter
	// LocalState, ExternalState, Logger and Observer are as in Config. The Observer's job name
	// is Job + "/" + Lane.
	LocalState    func(L) string
	ExternalState func(E) string
	Logger        *slog.Logger
	Observer      Observer
}

// Lane runs the steps of one lane. It is a BatchRunner, so a Runner or RunTick can schedule it
// like a sweep. It is safe for concurrent use, though two steps at once only make one of them
// fail with ErrConcurrentRun.
type Lane[L, E any] struct {
	cfg  LaneConfig[L, E]
	p    pipeline[L, E]
	name stepName
}

// NewLane checks cfg and returns a Lane.
func NewLane[L, E any](cfg LaneConfig[L, E]) (*Lane[L, E], error) {
	switch {
	case cfg.Job == "":
		return nil, errors.New("reconcile: lane config: Job is empty")
	case cfg.Lane == "":
		return nil, errors.New("reconcile: lane config: Lane is empty")
	case cfg.Feed == nil:
		return nil, errors.New("reconcile: lane config: Feed is nil")
	case cfg.Matcher == nil:
		return nil, errors.New("reconcile: lane config: Matcher is nil")
	case cfg.Sink == nil:
		return nil, errors.New("reconcile: lane config: Sink is nil")
	case cfg.Classifier == nil:
		return nil, errors.New("reconcile: lane config: Classifier is nil")
	case cfg.Current != nil && isNilPointer(cfg.Current):
		return nil, fmt.Errorf("reconcile: lane config: Current is a nil %T; leave it nil for none", cfg.Current)
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultLaneGrace
		if g, ok := cfg.Feed.(LaneGracer); ok && g.LaneGrace() != 0 {
			cfg.Grace = g.LaneGrace()
		}
	}
	if cfg.Grace < 0 {
		cfg.Grace = 0
	}
	p, err := newPipeline("lane config", cfg.Classifier, cfg.Limiter, cfg.LocalState, cfg.ExternalState, cfg.Logger, cfg.Observer)
	if err != nil {
		return nil, err
	}
	return &Lane[L, E]{cfg: cfg, p: p, name: stepName{job: cfg.Job, lane: cfg.Lane}}, nil
}

// RunBatch runs one step: it reads the lane's position, asks the Feed for the next objects
// (outside any transaction), finds their local rows in one query, classifies each pair and
// commits the results with the new position. On any error nothing is written and the next run
// redoes the step. Report.Wrapped reports the feed's End; Scanned counts the outcomes.
func (l *Lane[L, E]) RunBatch(ctx context.Context) (Report, error) {
	var record func(context.Context, error) error
	if fr, ok := l.cfg.Sink.(LaneFailureRecorder); ok {
		record = func(ctx context.Context, cause error) error {
			return fr.RecordLaneFailure(ctx, l.cfg.Job, l.cfg.Lane, cause)
		}
	}
	return l.p.runStep(ctx, l.name, record, l.step)
}

func (l *Lane[L, E]) step(ctx context.Context) (Report, error) {
	cfg := &l.cfg
	rep := Report{Job: cfg.Job, Lane: cfg.Lane, Verdicts: make(map[Verdict]int, len(Verdicts))}
	cur, err := cfg.Sink.ReadLane(ctx, cfg.Job, cfg.Lane)
	if err != nil {
		return rep, err
	}
	p := l.p.newPacer()
	callStart := time.Now()
	page, err := l.next(ctx, cur.Position, p.wait)
	if errors.Is(err, ErrRateLimited) {
		p.limited(err)
	}
	ps := p.state()
	rep.GatewayCalls, rep.RateLimited, rep.RetryAfter = ps.calls, ps.stopped, ps.retryAfter
	l.p.observeCalls(l.name, rep.GatewayCalls, time.Since(callStart), err)
	switch {
	case err != nil && rep.RateLimited && ctx.Err() == nil && page.Next != "":
		// The feed read some pages before the rate limit: keep them, and let the scheduler
		// wait RetryAfter before the rest.
	case err != nil && rep.RateLimited && ctx.Err() == nil:
		// Nothing was learned: write nothing, like a sweep batch whose first call was refused,
		// and let the scheduler wait RetryAfter.
		rep.Deferred = true
		return rep, nil
	case err != nil:
		return rep, err
	}

	c := LaneCommit{Job: cfg.Job, Lane: cfg.Lane, Cursor: cur, Next: page.Next, End: page.End, Gap: page.Gap}
	if len(page.Objects) > 0 {
		c.Outcomes, err = l.judge(ctx, page.Objects, callStart, p)
		ps := p.state() // with the calls for rows' present states
		rep.GatewayCalls, rep.RateLimited, rep.RetryAfter = ps.calls, ps.stopped, ps.retryAfter
		if err != nil {
			return rep, err
		}
	}
	for _, o := range c.Outcomes {
		rep.Verdicts[o.Decision.Verdict]++
	}
	rep.Scanned, rep.Wrapped = len(c.Outcomes), page.End
	if page.Gap != "" {
		l.p.logger.LogAttrs(ctx, slog.LevelWarn, "reconcile lane restarted without replay; the sweep covers the gap",
			slog.String("job", cfg.Job), slog.String("lane", cfg.Lane), slog.String("reason", page.Gap))
	}
	storableOutcomes(c.Outcomes)
	res, err := cfg.Sink.CommitLane(ctx, c)
	if err != nil {
		return rep, err
	}
	rep.NewFindings, rep.NewCommands, rep.Changed = res.Findings, res.Commands, res.Changed
	return rep, nil
}

// current asks LaneConfig.Current for the present state of the rows that came back Recent only
// because they changed after the state the feed gave (ObservedAt), not within the grace: such a
// row has moved on since the event, and the event's state says nothing about it any more. It
// returns the answers by record id; a row whose call fails (or is not made: a rate limit) is
// left out and stays InFlight, for the sweep.
func (l *Lane[L, E]) current(ctx context.Context, objs []FeedObject[E], byID map[string]int, rows []Record[L], p *pacer) (map[string]Answer[E], error) {
	cfg := &l.cfg
	if cfg.Current == nil {
		return nil, nil
	}
	var ids []string
	for _, rec := range rows {
		i, ok := byID[rec.ExternalID]
		if !ok || !rec.Recent || rec.Invalid != "" || objs[i].ObservedAt.IsZero() || slices.Contains(ids, rec.ExternalID) {
			continue // an Invalid row is decided without a call (judge)
		}
		// Only a row that disagrees with the event is worth a call: one that agrees (its
		// webhook arrived and was applied, the usual case) is left alone.
		if v := l.p.classifier.Classify(rec.Local, objs[i].Object).Verdict; v == Repairable || v == NeedsReview {
			ids = append(ids, rec.ExternalID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// The same rows without the Since rule: only those not changed within the grace qualify.
	again, err := cfg.Matcher.Match(ctx, MatchRequest{Job: cfg.Job, ExternalIDs: ids, Grace: cfg.Grace})
	if err != nil {
		return nil, err
	}
	out := make(map[string]Answer[E])
	fetched := make(map[string]*Answer[E])
	for _, rec := range again.Rows {
		if rec.Recent || !slices.Contains(ids, rec.ExternalID) {
			continue
		}
		ext, ok := fetched[rec.ExternalID]
		if !ok {
			if err := p.wait(ctx); err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrAbortBatch) {
					return nil, err
				}
				break // out of budget: the rest stay InFlight
			}
			v, at, err := l.p.fetch(ctx, l.name, p, cfg.Current, rec.ExternalID)
			switch {
			case errors.Is(err, ErrRateLimited):
				// Not asked: the row stays InFlight, for the sweep.
			case ctx.Err() != nil:
				return nil, context.Cause(ctx)
			case errors.Is(err, ErrAbortBatch):
				return nil, err
			}
			if err == nil {
				ext = &Answer[E]{Object: v, At: at}
			}
			fetched[rec.ExternalID] = ext
		}
		if ext != nil {
			out[rec.ID] = *ext
		}
	}
	return out, nil
}

// isNilPointer reports whether v holds a nil pointer: a typed nil that != nil misses.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// next calls the feed, turning a panic into an error.
func (l *Lane[L, E]) next(ctx context.Context, pos string, wait func(context.Context) error) (page FeedPage[E], err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("feed: panic: %v", v)
		}
	}()
	return l.cfg.Feed.Next(ctx, pos, wait)
}

// judge matches objects to local rows and classifies each pair. listed is when the feed's call
// began: the moment of its current states.
func (l *Lane[L, E]) judge(ctx context.Context, objs []FeedObject[E], listed time.Time, p *pacer) (out []Outcome, err error) {
	cfg := &l.cfg
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("panic: %v", v)
		}
	}()
	req := MatchRequest{Job: cfg.Job, Grace: cfg.Grace, ExternalIDs: make([]string, 0, len(objs))}
	byID := make(map[string]int, len(objs))
	since, anySince := make([]time.Time, 0, len(objs)), false
	for i, o := range objs {
		if o.ExternalID == "" {
			return nil, fmt.Errorf("feed returned an object without an external id")
		}
		if _, dup := byID[o.ExternalID]; dup {
			return nil, fmt.Errorf("feed returned %s twice in one step", o.ExternalID)
		}
		byID[o.ExternalID] = i
		if storable(o.ExternalID, 0) != o.ExternalID {
			// An id with NUL or bytes that are not UTF-8 is no row's (a database's text cannot
			// hold it), and asking a store about it would fail this step and every later one.
			continue
		}
		req.ExternalIDs = append(req.ExternalIDs, o.ExternalID)
		since = append(since, o.ObservedAt)
		anySince = anySince || !o.ObservedAt.IsZero()
	}
	if anySince {
		req.Since = since
	}
	res, err := cfg.Matcher.Match(ctx, req)
	if err != nil {
		return nil, err
	}
	current, err := l.current(ctx, objs, byID, res.Rows, p)
	if err != nil {
		return nil, err
	}
	matched := make([]bool, len(objs))
	for _, id := range res.Elsewhere {
		if i, ok := byID[id]; ok {
			matched[i] = true
		}
	}
	for _, rec := range res.Rows {
		i, ok := byID[rec.ExternalID]
		if !ok {
			return nil, fmt.Errorf("match returned row %s for external id %q, which was not asked for", rec.ID, rec.ExternalID)
		}
		matched[i] = true
		o, decided := l.p.start(rec)
		if a, ok := current[rec.ID]; ok && !decided {
			// The row changed after the event's state, but not recently: judged against the
			// present state, which is a verification.
			err = l.p.judgePair(&o, rec.Local, a.Object, a.At)
		} else if rec.Recent && !decided {
			o.Decision = Decision{Verdict: InFlight}
		} else if !decided {
			// A state taken from an event may be older than what the sweep last saw: it decides
			// findings, but is not recorded as a verification of the row.
			at := listed
			if !objs[i].ObservedAt.IsZero() {
				at = time.Time{}
			}
			err = l.p.judgePair(&o, rec.Local, objs[i].Object, at)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if cfg.ReportMissing {
		for i, obj := range objs {
			if matched[i] {
				continue
			}
			detail := "no local row has this external id"
			if !obj.CreatedAt.IsZero() {
				detail += "; created " + obj.CreatedAt.UTC().Format(time.RFC3339)
			}
			if storable(obj.ExternalID, MaxExternalID) != obj.ExternalID {
				detail += "; the id as sent is not text a store keeps whole: invalid bytes are recorded as U+FFFD, and it is cut to MaxExternalID bytes"
			}
			// The finding names an external object, not a row. A person who resolved it decided
			// about an object that still exists: later passes that see it again do not reopen it.
			out = append(out, Outcome{RecordID: obj.ExternalID, ExternalID: obj.ExternalID,
				External: l.p.externalState(obj.Object), NotARow: true, Once: true,
				Decision: Decision{Verdict: NeedsReview, Kind: KindMissingLocally, Detail: detail}})
		}
	}
	return out, nil
}
