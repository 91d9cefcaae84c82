package tieout

// What a step does when the lister is refused: a rate limit delays the step (reported, never a
// failure), and a payout whose lines Stripe refuses to list is a finding, not a walk stopped
// for ever.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// groupsFailing is a pagedLister whose Groups call fails with err.
type groupsFailing struct {
	*pagedLister
	err error
}

func (l groupsFailing) Groups(ctx context.Context, pos string) (GroupPage, error) {
	return GroupPage{}, l.err
}

func TestAStepThatMeetsARateLimitIsDeferredNotFailed(t *testing.T) {
	ctx := context.Background()
	g, ms, _ := refunds(3)
	limits := map[string]error{
		"Stripe's 429":          &reconcile.RateLimitError{RetryAfter: 3 * time.Second},
		"a limiter out of time": fmt.Errorf("stripepayouts: wait for the limiter: %w: %v", reconcile.ErrRateLimited, "deadline"),
	}
	for name, limit := range limits {
		for _, where := range []string{"groups", "members"} {
			t.Run(name+" on "+where, func(t *testing.T) {
				pl := &pagedLister{groups: []Group{g}, members: map[string][]Member{g.ID: ms}, perPage: 100}
				var lister Lister = pl
				if where == "groups" {
					lister = groupsFailing{pl, limit}
				} else {
					pl.fail = limit
				}
				store := memstore.New[string, string](memstore.Options{})
				step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &MemoryLedger{}, Sink: store})
				if err != nil {
					t.Fatal(err)
				}
				rep, err := step.RunBatch(ctx)
				if err != nil {
					t.Fatalf("err = %v; a rate limit delays a step, it does not fail it", err)
				}
				var want time.Duration
				var rl *reconcile.RateLimitError
				if errors.As(limit, &rl) {
					want = rl.RetryAfter
				}
				if !rep.RateLimited || !rep.Deferred || rep.RetryAfter != want || rep.Scanned != 0 || rep.Wrapped {
					t.Errorf("report = %+v; want RateLimited, Deferred, RetryAfter %v", rep, want)
				}
				if got := reconcile.AfterBatch(ctx, rep, err); got != reconcile.AfterDeferred {
					t.Errorf("AfterBatch = %v, want AfterDeferred", got)
				}
				if got := findingsOf(t, store, reconcile.FindingsAll); len(got) != 0 {
					t.Errorf("findings = %v", got)
				}
				if cur, _ := store.ReadLane(ctx, "payouts", "tieout"); cur.Position != "" {
					t.Errorf("position moved to %q", cur.Position)
				}
			})
		}
	}
}

func TestAPayoutWhoseLinesAreRefusedIsAFindingAndTheWalkMovesOn(t *testing.T) {
	ctx := context.Background()
	g1, ms, _ := refunds(3)
	g2 := g1
	g2.ID = "po_2"
	refusals := map[string]error{
		"a 400": &reconcile.ReviewError{Kind: reconcile.KindRejected,
			Detail: "stripe answered 400 invalid_request_error: payout po_1 cannot be listed\x00 \xff" + strings.Repeat("x", 10_000)},
		"a 404": fmt.Errorf("stripeadapter: list balance transactions of po_1: stripe answered 404: %w", reconcile.ErrNotFound),
	}
	for name, refusal := range refusals {
		t.Run(name, func(t *testing.T) {
			lister := &pagedLister{groups: []Group{g1, g2}, members: map[string][]Member{g1.ID: ms, g2.ID: ms}, perPage: 100, fail: refusal}
			store := memstore.New[string, string](memstore.Options{})
			step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &MemoryLedger{}, Sink: store})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := step.RunBatch(ctx)
			if err != nil {
				t.Fatalf("err = %v; a refused payout is a finding, the walk goes on", err)
			}
			if rep.Scanned != 2 || !rep.Wrapped || rep.NewFindings != 2 {
				t.Errorf("report = %+v", rep)
			}
			if got := findingsOf(t, store, ""); !slices.Equal(got, []string{"po_1 " + KindLinesRefused, "po_2 " + KindLinesRefused}) {
				t.Errorf("findings = %v", got)
			}
			fs, _ := store.ListFindings(ctx, reconcile.FindingQuery{})
			for _, f := range fs {
				if f.Command != "" || !strings.Contains(f.Detail, "could not list its lines") {
					t.Errorf("finding %+v", f)
				}
			}
			if cur, _ := store.ReadLane(ctx, "payouts", "tieout"); cur.Position != "g2" {
				t.Errorf("position = %q, want past both payouts", cur.Position)
			}
			recs, err := store.ListGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
			if err != nil || len(recs) != 2 {
				t.Fatalf("records = %+v, %v", recs, err)
			}
			for _, r := range recs {
				if r.Held || r.ExpectedKnown || r.Findings != 1 {
					t.Errorf("record %+v: a payout whose lines were not read holds nothing", r)
				}
			}
		})
	}
}

// positionedLister is a pagedLister that gives the position after each group, and whose
// Members calls are rate limited from the group named limitAt on.
type positionedLister struct {
	*pagedLister
	limitAt string
	limited bool
}

func (l *positionedLister) Groups(ctx context.Context, pos string) (GroupPage, error) {
	var page GroupPage
	start := 0
	if pos != "" {
		start, _ = strconv.Atoi(pos)
	}
	for i := start; i < len(l.groups); i++ {
		page.Groups = append(page.Groups, l.groups[i])
		page.Positions = append(page.Positions, strconv.Itoa(i+1))
	}
	page.Next, page.End = strconv.Itoa(len(l.groups)), true
	return page, nil
}

func (l *positionedLister) Members(ctx context.Context, g Group, after string) (MemberPage, error) {
	if g.ID == l.limitAt && !l.limited {
		l.limited = true
		return MemberPage{}, &reconcile.RateLimitError{RetryAfter: 2 * time.Second}
	}
	return l.pagedLister.Members(ctx, g, after)
}

// A rate limit met after some groups of the page were tied out commits those, with the
// position after the last of them, as a sweep batch commits the rows asked before its 429: the
// step reports RateLimited (progress made, not Deferred), and the next step starts at the group
// that met it. Without positions the step writes nothing (Deferred), as before.
func TestARateLimitAfterSomeGroupsCommitsThoseAndStopsBeforeTheRest(t *testing.T) {
	ctx := context.Background()
	var groups []Group
	members := map[string][]Member{}
	for i := range 4 {
		g := payout(-100)
		g.ID = "po_" + strconv.Itoa(i)
		groups = append(groups, g)
		members[g.ID] = []Member{{ID: "txn_r" + strconv.Itoa(i), Type: "refund", Kind: KindRefund, SourceID: "re_" + strconv.Itoa(i),
			Amount: -100, Net: -100, Currency: "usd", SourceAmount: -100, SourceCurrency: "usd"},
			{ID: "txn_po" + strconv.Itoa(i), Type: "payout", Kind: KindGroup, SourceID: g.ID, Amount: 100, Net: 100, Currency: "usd"}}
	}
	lister := &positionedLister{pagedLister: &pagedLister{groups: groups, members: members, perPage: 100}, limitAt: "po_2"}
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &MemoryLedger{}, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := step.RunBatch(ctx)
	if err != nil || !rep.RateLimited || rep.Deferred || rep.Wrapped || rep.Scanned != 2 || rep.RetryAfter != 2*time.Second {
		t.Fatalf("report %+v, %v; want po_0 and po_1 committed, RateLimited for 2s", rep, err)
	}
	if got := reconcile.AfterBatch(ctx, rep, err); got != reconcile.AfterRateLimit {
		t.Errorf("AfterBatch = %v, want AfterRateLimit", got)
	}
	if cur, _ := store.ReadLane(ctx, "payouts", "tieout"); cur.Position != "2" {
		t.Fatalf("position %q, want after po_1", cur.Position)
	}
	if got := findingsOf(t, store, ""); !slices.Equal(got, []string{"txn_r0 unbooked_refund", "txn_r1 unbooked_refund"}) {
		t.Fatalf("findings %v, want those of po_0 and po_1 only", got)
	}
	rep, err = step.RunBatch(ctx)
	if err != nil || rep.RateLimited || !rep.Wrapped || rep.Scanned != 2 {
		t.Fatalf("the next step: %+v, %v; want po_2 and po_3", rep, err)
	}
	if got := findingsOf(t, store, ""); len(got) != 4 {
		t.Errorf("findings %v, want one per payout", got)
	}
	recs, _ := store.ListGroups(ctx, reconcile.GroupQuery{})
	var tied []string
	for _, r := range recs {
		if r.TiedOut {
			tied = append(tied, r.ID)
		}
	}
	slices.Sort(tied)
	if !slices.Equal(tied, []string{"po_0", "po_1", "po_2", "po_3"}) {
		t.Errorf("tied out %v, want every payout once", tied)
	}
}
