package tieout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reconcilekit/reconcile"
)

// DefaultUnpaidGrace and DefaultUnpaidLimit are the values a zero UnpaidConfig gets.
const (
	DefaultUnpaidGrace = 7 * 24 * time.Hour
	DefaultUnpaidLimit = 500
)

// UnpaidConfig describes the walk over the host's ledger for records never paid out.
type UnpaidConfig struct {
	// Job and Lane name where findings and the walk's position are kept. Required.
	Job, Lane string
	// Ledger is the host's ledger. Required.
	Ledger Ledger
	// Sink records findings and the position in one transaction. Required.
	Sink reconcile.LaneSink
	// Grace is how long after its availability a record may wait for a payout (the payout
	// schedule's delay and a weekend). Zero means DefaultUnpaidGrace.
	Grace time.Duration
	// Limit is the page size. Zero means DefaultUnpaidLimit.
	Limit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// UnpaidStep walks the host's ledger a page per RunBatch for settled records in no group
// past their availability and the grace, and records a KindNeverPaidOut finding for each (a
// KindSettledInFuture one for a record settled or available more than reconcile.MaxClockSkew
// ahead of the clock, which would otherwise never be checked), with the walk's position, in
// one transaction. A short page ends the pass (Report.Wrapped)
// and the next starts again from the beginning. It is a reconcile.BatchRunner.
type UnpaidStep struct{ cfg UnpaidConfig }

// NewUnpaidStep checks cfg and returns an UnpaidStep.
func NewUnpaidStep(cfg UnpaidConfig) (*UnpaidStep, error) {
	switch {
	case cfg.Job == "" || cfg.Lane == "":
		return nil, errors.New("tieout: unpaid config: Job or Lane is empty")
	case cfg.Ledger == nil:
		return nil, errors.New("tieout: unpaid config: Ledger is nil")
	case cfg.Sink == nil:
		return nil, errors.New("tieout: unpaid config: Sink is nil")
	case cfg.Grace < 0 || cfg.Limit < 0:
		return nil, errors.New("tieout: unpaid config: Grace or Limit is negative")
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultUnpaidGrace
	}
	if cfg.Limit == 0 {
		cfg.Limit = DefaultUnpaidLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &UnpaidStep{cfg: cfg}, nil
}

// RunBatch walks one page.
func (s *UnpaidStep) RunBatch(ctx context.Context) (reconcile.Report, error) {
	start := time.Now()
	rep := reconcile.Report{Job: s.cfg.Job, Lane: s.cfg.Lane, Verdicts: map[reconcile.Verdict]int{}}
	err := s.run(ctx, &rep)
	rep.Duration = time.Since(start)
	if err != nil {
		return rep, fmt.Errorf("tieout: %s/%s: %w", s.cfg.Job, s.cfg.Lane, err)
	}
	return rep, nil
}

func (s *UnpaidStep) run(ctx context.Context, rep *reconcile.Report) error {
	cur, err := s.cfg.Sink.ReadLane(ctx, s.cfg.Job, s.cfg.Lane)
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	ahead := now.Add(reconcile.MaxClockSkew)
	page, err := s.cfg.Ledger.Unpaid(ctx, UnpaidRequest{After: cur.Position, Before: now.Add(-s.cfg.Grace), Ahead: ahead, Limit: s.cfg.Limit})
	if err != nil {
		return err
	}
	findings := ClassifyUnpaid(page.Records, ahead)
	rep.Scanned = len(page.Records)
	rep.Verdicts[reconcile.NeedsReview] = len(findings)
	next, end := page.Next, len(page.Records) < s.cfg.Limit
	if end {
		next = ""
	}
	rep.Wrapped = end
	res, err := s.cfg.Sink.CommitLane(ctx, reconcile.LaneCommit{Job: s.cfg.Job, Lane: s.cfg.Lane, Cursor: cur,
		Next: next, End: end, Outcomes: Outcomes(findings)})
	rep.NewFindings, rep.NewCommands = res.Findings, res.Commands
	return err
}
