package tieout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Lister lists groups and their members at the external system (a Stripe adapter lists
// payouts and ?payout=po_... balance transactions). Its calls are made outside any
// transaction; it paces them itself.
type Lister interface {
	// Groups returns the page of groups after position pos ("" for the start): only groups
	// whose members are final (Stripe: a payout whose reconciliation_status is completed), or
	// a listing still moving gives findings that are not. Those it saw that are not final yet
	// it may report in GroupPage.Pending, for the record of payouts not tied out yet. One Step
	// per connected account (a reconcile.FanOut builds them) covers Connect.
	Groups(ctx context.Context, pos string) (GroupPage, error)
	// Members returns the page of g's members after position after ("" for the first).
	Members(ctx context.Context, g Group, after string) (MemberPage, error)
}

// GroupPage is one page of groups.
type GroupPage struct {
	Groups []Group
	// Pending are groups the lister saw whose members are not final yet (Stripe: a payout
	// whose reconciliation_status is not completed, the one a walk waits before). They are not
	// tied out; a Sink that is a reconcile.GroupSink records them as seen, so that a page can
	// list the payouts not tied out yet. The lister returns each again in Groups once final.
	Pending []Group
	// Next is the position after the page; End reports that there is nothing after it for
	// now (the walk starts again from Next, or from the start if Next is empty).
	Next string
	End  bool
	// Positions, if the lister gives them, holds the position just after each of Groups
	// (Positions[i] after Groups[i]). A step that meets a rate limit after tying out some of
	// the page then commits those with the position after the last of them, as a sweep batch
	// commits the rows it asked before a 429; without them, it commits nothing and the page is
	// tied out again whole. Nil, or of another length than Groups, means none.
	Positions []string
}

// MemberPage is one page of a group's members.
type MemberPage struct {
	Members []Member
	// Next is the position after the page; More reports that there are more.
	Next string
	More bool
}

// DefaultMaxMembers bounds the members read of one group by a StepConfig whose MaxMembers is
// zero.
const DefaultMaxMembers = 1_000_000

// StepConfig describes a tie-out: which groups, against which ledger, recorded where.
type StepConfig struct {
	// Job and Lane name where findings and the walk's position are kept: the findings under
	// Job (its own, such as "payouts"), the position under (Job, Lane). Required.
	Job, Lane string
	// Lister lists the groups and their members. Required.
	Lister Lister
	// Ledger is the host's ledger. Required.
	Ledger Ledger
	// Sink records findings and the position in one transaction (pgstore.Store,
	// memstore.Store). Required. If it is a reconcile.GroupSink (both are), each group tied
	// out or seen pending is recorded in that transaction too (a reconcile.GroupRecord).
	Sink reconcile.LaneSink
	// Policy says what the host books.
	Policy Policy
	// MaxMembers bounds the members read of one group; a group with more is not tied out
	// (the step fails, naming it). Zero means DefaultMaxMembers.
	MaxMembers int
}

// Step ties out one page of groups per RunBatch, like a lane's step: it reads its position,
// lists the next groups and each one's members (outside any transaction), asks the ledger
// once per page of members, classifies, and commits the findings with the new position. On
// any error nothing is written and the step is redone. It is a reconcile.BatchRunner.
type Step struct{ cfg StepConfig }

// NewStep checks cfg and returns a Step.
func NewStep(cfg StepConfig) (*Step, error) {
	switch {
	case cfg.Job == "" || cfg.Lane == "":
		return nil, errors.New("tieout: step config: Job or Lane is empty")
	case cfg.Lister == nil:
		return nil, errors.New("tieout: step config: Lister is nil")
	case cfg.Ledger == nil:
		return nil, errors.New("tieout: step config: Ledger is nil")
	case cfg.Sink == nil:
		return nil, errors.New("tieout: step config: Sink is nil")
	case cfg.MaxMembers < 0:
		return nil, fmt.Errorf("tieout: step config: MaxMembers %d is negative", cfg.MaxMembers)
	}
	if cfg.MaxMembers == 0 {
		cfg.MaxMembers = DefaultMaxMembers
	}
	return &Step{cfg: cfg}, nil
}

// RunBatch ties out the next page of groups. Report.Scanned counts the groups, Verdicts the
// findings by verdict, GatewayCalls the lister's calls, Wrapped the lister's End.
func (s *Step) RunBatch(ctx context.Context) (reconcile.Report, error) {
	start := time.Now()
	rep := reconcile.Report{Job: s.cfg.Job, Lane: s.cfg.Lane, Verdicts: map[reconcile.Verdict]int{}}
	err := s.run(ctx, &rep)
	rep.Duration = time.Since(start)
	if err != nil {
		return rep, fmt.Errorf("tieout: %s/%s: %w", s.cfg.Job, s.cfg.Lane, err)
	}
	return rep, nil
}

func (s *Step) run(ctx context.Context, rep *reconcile.Report) error {
	cur, err := s.cfg.Sink.ReadLane(ctx, s.cfg.Job, s.cfg.Lane)
	if err != nil {
		return err
	}
	page, err := s.cfg.Lister.Groups(ctx, cur.Position)
	rep.GatewayCalls++
	if err != nil {
		return deferred(ctx, rep, err)
	}
	var findings []Finding
	records := make([]reconcile.GroupRecord, 0, len(page.Pending)+len(page.Groups))
	for _, g := range page.Pending {
		records = append(records, pendingRecord(g))
	}
	for i, g := range page.Groups {
		f, rec, calls, err := s.tie(ctx, g)
		rep.GatewayCalls += calls
		if err != nil {
			if err := deferred(ctx, rep, fmt.Errorf("group %s: %w", g.ID, err)); err != nil {
				return err // not a rate limit
			}
			if i == 0 || len(page.Positions) != len(page.Groups) || page.Positions[i-1] == "" {
				return nil // deferred: nothing tied out, or no position to stop at
			}
			// A rate limit after i groups: commit those, and stop before g. The pending
			// groups, seen after g, are reported again by the next step.
			rep.Deferred = false
			records = records[len(page.Pending):]
			page = GroupPage{Groups: page.Groups[:i], Next: page.Positions[i-1]}
			break
		}
		findings = append(findings, f...)
		records = append(records, rec)
	}
	rep.Scanned = len(page.Groups)
	for _, f := range findings {
		rep.Verdicts[f.Decision.Verdict]++
	}
	next := page.Next
	if page.End {
		rep.Wrapped = true
	}
	c := reconcile.LaneCommit{Job: s.cfg.Job, Lane: s.cfg.Lane, Cursor: cur, Next: next, End: page.End, Outcomes: Outcomes(findings)}
	var res reconcile.CommitResult
	if gs, ok := s.cfg.Sink.(reconcile.GroupSink); ok {
		res, err = gs.CommitGroups(ctx, c, storableRecords(records))
	} else {
		res, err = s.cfg.Sink.CommitLane(ctx, c)
	}
	rep.NewFindings, rep.NewCommands = res.Findings, res.Commands
	return err
}

// deferred returns err, unless it is a rate limit (Stripe's 429, or a limiter that cannot grant
// a call in time): then the step is reported Deferred and RateLimited, with the wait asked for,
// and nothing is written, as a sweep batch or a lane step whose calls were refused; a
// scheduler waits and runs it again. A rate limit delays a payout; it is not a failure to back
// off from, and nothing is skipped.
func deferred(ctx context.Context, rep *reconcile.Report, err error) error {
	if !errors.Is(err, reconcile.ErrRateLimited) || ctx.Err() != nil {
		return err
	}
	rep.RateLimited, rep.Deferred = true, true
	var rl *reconcile.RateLimitError
	if errors.As(err, &rl) {
		rep.RetryAfter = rl.RetryAfter
	}
	return nil
}

// refused reports whether err is the external system refusing to list a group's members for
// good (a bad request, or not found): asking again gets the same answer, so the group is a
// finding rather than a step that fails for ever.
func refused(err error) (string, bool) {
	var review *reconcile.ReviewError
	switch {
	case errors.As(err, &review):
		return review.Detail, true
	case errors.Is(err, reconcile.ErrNotFound):
		return err.Error(), true
	}
	return "", false
}

// tie lists g's members and classifies them against what the ledger booked: one ledger call
// per page of members (and one for the group's own booking, if the host books payouts). It
// returns the findings and g's record.
func (s *Step) tie(ctx context.Context, g Group) ([]Finding, reconcile.GroupRecord, int, error) {
	var members []Member
	var booked []Booked
	calls := 0
	asked := make(map[Key]bool) // a key on two pages is asked once: its records once
	if g.Itemized {
		after := ""
		for {
			mp, err := s.cfg.Lister.Members(ctx, g, after)
			calls++
			if why, ok := refused(err); ok {
				// What was listed before is dropped: a partial listing says nothing.
				f := []Finding{{Group: g.ID, Account: g.Account, Record: g.ID, ExternalID: g.ID, External: g.Status,
					Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindLinesRefused,
						Detail: fmt.Sprintf("payout %s of %s was not tied out: could not list its lines: %s", g.ID,
							reconcile.FormatAmount(g.Amount, g.Currency), why)}}}
				return f, tiedRecord(g, 0, tally{}, f), calls, nil
			}
			if err != nil {
				return nil, reconcile.GroupRecord{}, calls, err
			}
			if len(members)+len(mp.Members) > s.cfg.MaxMembers {
				return nil, reconcile.GroupRecord{}, calls, fmt.Errorf("more than %d members", s.cfg.MaxMembers)
			}
			members = append(members, mp.Members...)
			keys := s.cfg.Policy.Keys(mp.Members)
			keys = slices.DeleteFunc(keys, func(k Key) bool { return asked[k] })
			for _, k := range keys {
				asked[k] = true
			}
			if len(keys) > 0 {
				b, err := s.cfg.Ledger.Booked(ctx, keys)
				if err != nil {
					return nil, reconcile.GroupRecord{}, calls, err
				}
				booked = append(booked, b...)
			}
			if !mp.More {
				break
			}
			if mp.Next == "" || mp.Next == after {
				return nil, reconcile.GroupRecord{}, calls, errors.New("the member listing does not advance")
			}
			after = mp.Next
		}
	}
	if s.cfg.Policy.books(KindGroup) {
		b, err := s.cfg.Ledger.Booked(ctx, []Key{{KindGroup, g.ID}})
		if err != nil {
			return nil, reconcile.GroupRecord{}, calls, err
		}
		booked = append(booked, b...)
	}
	findings, t := s.cfg.Policy.classify(g, members, booked)
	return findings, tiedRecord(g, len(members), t, findings), calls, nil
}
