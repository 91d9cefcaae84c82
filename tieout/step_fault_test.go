package tieout

// What a step does when the lister is refused: a rate limit delays the step (reported, never a
// failure), and a payout whose lines Stripe refuses to list is a finding, not a walk stopped
// for ever.

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
