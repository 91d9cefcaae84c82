package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// A sweep batch and a lane step are one pipeline fed from two ends: read → judge → commit.
// They differ in where records come from (a keyset cursor over local rows, a Feed of external
// objects); they share what follows here: how a pair is judged, how a step is timed, observed,
// logged and recorded when it fails, and (pacer.go) how calls are paced and stopped.

// pipeline is what a Reconciler and a Lane share.
type pipeline[L, E any] struct {
	classifier    Classifier[L, E]
	localState    func(L) string
	externalState func(E) string
	limiter       Limiter
	logger        *slog.Logger
	observer      Observer
}

// newPipeline checks and completes the parts of a config both entry points have; what names
// the config in errors ("config", "lane config").
func newPipeline[L, E any](what string, c Classifier[L, E], lim Limiter, local func(L) string, ext func(E) string,
	logger *slog.Logger, obs Observer) (pipeline[L, E], error) {
	if isNilLimiter(lim) {
		return pipeline[L, E]{}, fmt.Errorf("reconcile: %s: Limiter is a nil %T; leave it nil for no pacing", what, lim)
	}
	local, ext, err := stateNames(c, local, ext)
	if err != nil {
		return pipeline[L, E]{}, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return pipeline[L, E]{classifier: c, localState: local, externalState: ext, limiter: lim, logger: logger, observer: obs}, nil
}

// newPacer returns a pacer for one step's calls.
func (p *pipeline[L, E]) newPacer() *pacer { return &pacer{limiter: p.limiter} }

// start begins a row's outcome. A row its Source or Matcher could not read or judge is decided
// at once, NeedsReview invalid_row, without a call; decided reports that.
func (p *pipeline[L, E]) start(rec Record[L]) (o Outcome, decided bool) {
	o = Outcome{RecordID: rec.ID, ExternalID: rec.ExternalID, Local: p.localState(rec.Local), Version: rec.Version}
	if rec.Invalid != "" {
		o.Decision = Decision{Verdict: NeedsReview, Kind: KindInvalidRow, Detail: rec.Invalid}
		return o, true
	}
	return o, false
}

// judgePair classifies a row against an external state and fills in o: the decision, the
// external state, and whether and as of when the row counts as verified. at is when the call
// that obtained ext began; zero for a state that is not current (taken from an event, older
// than what the sweep may have seen), which decides findings but verifies nothing. An
// Unverifiable verdict verifies nothing either.
func (p *pipeline[L, E]) judgePair(o *Outcome, local L, ext E, at time.Time) error {
	d := p.classifier.Classify(local, ext)
	if err := d.Validate(); err != nil {
		return fmt.Errorf("classifier on record %s: %w", o.RecordID, err)
	}
	o.Decision, o.External = d, p.externalState(ext)
	if !at.IsZero() && d.Verdict != Unverifiable {
		o.Verified, o.VerifiedAt = true, at
	}
	return nil
}

// storableOutcomes makes what outcomes record storable in place: external id, kind, states,
// detail and diffs (and the record id of an outcome that names an external object, NotARow)
// valid UTF-8 without NUL characters and bounded (MaxExternalID, MaxKind, MaxState, MaxDetail,
// storableDiffs), the kind printable (kindText). A classifier's or a server's text must not
// fail a whole commit, and with it every later run of the job.
func storableOutcomes(outcomes []Outcome) { StorableOutcomes(outcomes) }

// StorableOutcomes makes outcomes storable in place, as RunBatch and lanes do before they
// commit: external id, kind, states, detail and diffs (and the record id of an outcome that
// names an external object, NotARow) valid UTF-8 without NUL characters and bounded
// (MaxExternalID, MaxKind, MaxState, MaxDetail, MaxDiffs, MaxDiffValue), the kind printable.
// A driver that commits outcomes of its own through a Sink or a LaneSink (package tieout's
// Step) calls it first.
func StorableOutcomes(outcomes []Outcome) {
	for i := range outcomes {
		o := &outcomes[i]
		if o.NotARow {
			// The record is an external object, named by its id as the external side gave it.
			o.RecordID = storable(o.RecordID, MaxExternalID)
		}
		o.ExternalID = storable(o.ExternalID, MaxExternalID)
		o.Local, o.External = storable(o.Local, MaxState), storable(o.External, MaxState)
		o.Decision.Kind = kindText(o.Decision.Kind, MaxKind)
		o.Decision.Detail = storable(o.Decision.Detail, MaxDetail)
		o.Decision.Diffs = storableDiffs(o.Decision.Diffs)
	}
}

// fetch makes one call of gw about id, after the pacer's wait: timed for the Observer, and a
// rate-limit answer handled by the pacer (see limited) before it is returned, for the caller to
// leave the row unasked. It returns when the call began, the moment of its answer.
func (p *pipeline[L, E]) fetch(ctx context.Context, name stepName, pc *pacer, gw Gateway[E], id string) (E, time.Time, error) {
	start := time.Now()
	ext, err := gw.Fetch(ctx, id)
	p.observeCalls(name, 1, time.Since(start), err)
	if errors.Is(err, ErrRateLimited) {
		pc.limited(err)
	}
	return ext, start, err
}

// observeCalls tells the Observer of n calls that took d and ended with err.
func (p *pipeline[L, E]) observeCalls(name stepName, n int, d time.Duration, err error) {
	if p.observer != nil && n > 0 {
		p.observer.GatewayCalls(name.String(), n, d, ErrorClass(err))
	}
}

// stepName names a job's sweep (lane empty) or one of its lanes.
type stepName struct{ job, lane string }

// String is the name the Observer gets: the job, or job/lane.
func (n stepName) String() string {
	if n.lane == "" {
		return n.job
	}
	return n.job + "/" + n.lane
}

// attrs are the log attributes naming the step.
func (n stepName) attrs() []slog.Attr {
	if n.lane == "" {
		return []slog.Attr{slog.String("job", n.job)}
	}
	return []slog.Attr{slog.String("job", n.job), slog.String("lane", n.lane)}
}

// wrap names the step once in an error of the step: the layers below name only their own
// operation.
func (n stepName) wrap(err error) error {
	if n.lane == "" {
		return fmt.Errorf("reconcile: job %s: %w", n.job, err)
	}
	return fmt.Errorf("reconcile: lane %s: %w", n, err)
}

// runStep runs one step of the pipeline: it times it, names it in its error, tells the
// Observer, has a failure recorded (record, if not nil), and logs a line for a step that
// succeeded.
func (p *pipeline[L, E]) runStep(ctx context.Context, name stepName, record func(context.Context, error) error,
	step func(context.Context) (Report, error)) (Report, error) {
	start := time.Now()
	rep, err := step(ctx)
	if err != nil {
		err = name.wrap(err)
	}
	rep.Duration = time.Since(start)
	if p.observer != nil {
		p.observer.BatchDone(name.String(), rep, err)
	}
	if cause := failureCause(ctx, rep, err); record != nil && cause != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if rerr := record(rctx, cause); rerr != nil {
			p.logger.LogAttrs(ctx, slog.LevelWarn, "reconcile: recording a failed batch failed",
				append(name.attrs(), slog.String("error", rerr.Error()))...)
		}
	}
	if err != nil {
		return rep, err
	}
	msg := "reconcile batch"
	if name.lane != "" {
		msg = "reconcile lane"
	}
	p.logger.LogAttrs(ctx, slog.LevelInfo, msg, append(name.attrs(),
		slog.Int("scanned", rep.Scanned), slog.Bool("wrapped", rep.Wrapped),
		slog.Int("in_sync", rep.Verdicts[InSync]), slog.Int("in_flight", rep.Verdicts[InFlight]),
		slog.Int("repairable", rep.Verdicts[Repairable]), slog.Int("needs_review", rep.Verdicts[NeedsReview]),
		slog.Int("unverifiable", rep.Verdicts[Unverifiable]), slog.Int("gateway_calls", rep.GatewayCalls),
		slog.Int("new_findings", rep.NewFindings), slog.Int("new_commands", rep.NewCommands), slog.Int("changed", rep.Changed),
		slog.Bool("rate_limited", rep.RateLimited), slog.Bool("deferred", rep.Deferred),
		slog.Duration("retry_after", rep.RetryAfter), slog.Duration("duration", rep.Duration))...)
	return rep, nil
}

// failureCause is what a failure recorder is told about a step, nil if nothing, by what
// AfterBatch decides: a failed step's error (one that missed its context's deadline included:
// whatever held it up, a lock or a hung call, holds up every step), or for a sweep batch that
// was deferred or stopped by an outage, why. A lane step is recorded only when it failed (see
// LaneFailureRecorder).
func failureCause(ctx context.Context, rep Report, err error) error {
	switch AfterBatch(ctx, rep, err) {
	case AfterFailure:
		return err
	case AfterDeferred:
		switch {
		case rep.Lane != "":
		case rep.Unavailable:
			return errors.New("deferred: the external system is unavailable")
		default:
			return errors.New("deferred: the limiter (or a rate limit) refused the batch's first call")
		}
	case AfterOutage:
		if rep.Lane == "" {
			return errors.New("stopped: the external system is unavailable")
		}
	}
	return nil
}
