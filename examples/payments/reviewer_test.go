package main

import (
	"io"
	"slices"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// disputeNeedsResponse is a story no run plants before its sweep: a dispute awaiting evidence
// that the row does not know of.
var disputeNeedsResponse = story{name: "dispute needs a response, unknown here", local: paid, external: stripe.PaymentIntentStatusSucceeded,
	money:   money{dispute: stripe.DisputeStatusNeedsResponse},
	verdict: reconcile.NeedsReview, kind: stripepolicy.KindDisputeNeedsResponse}

// telling returns the first planted story of kind.
func telling(t *testing.T, kind string) *story {
	t.Helper()
	i := slices.IndexFunc(stories, func(s story) bool { return s.kind == kind && !s.money.afterSweep })
	if i < 0 {
		t.Fatalf("no story finds %s", kind)
	}
	return &stories[i]
}

func TestAPersonsDecisionOnADisputeIsRecordedWithItsResolution(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		story *story
		as    string
		// dispute is what the row records after the resolution; refound, whether the next
		// sweep finds the dispute again.
		dispute string
		refound bool
	}{
		{"a dispute lost, accepted", telling(t, stripepolicy.KindDisputeLost), reconcile.ResolutionAccepted, "lost", false},
		{"a dispute needing a response, answered", &disputeNeedsResponse, reconcile.ResolutionFixed, "needs_response", false},
		// Not the payment's fault: nothing is recorded, and the sweep finds the dispute again.
		{"a false positive", telling(t, stripepolicy.KindDisputeLost), reconcile.ResolutionFalsePositive, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureOf(t, tc.story, 1)
			pay := f.p.payments[0]
			rv := newReviewer(f.pool, f.store, f.gateway)
			finding := f.state(t, pay.externalID).findings[0]

			r := reconcile.Resolution{As: tc.as, By: "alice", Note: "decided in the Dashboard"}
			if err := rv.ResolveFinding(t.Context(), finding.ID, r); err != nil {
				t.Fatalf("ResolveFinding: %v", err)
			}
			st := f.state(t, pay.externalID)
			if st.dispute != tc.dispute || st.status != paid || len(st.ledger) != 0 {
				t.Errorf("after the resolution: %+v, want paid, dispute %q, no ledger row", st, tc.dispute)
			}
			if got := st.findings[0]; got.Open() || got.Resolution != tc.as || got.ResolvedBy != "alice" {
				t.Errorf("finding open %v, resolved as %q by %q; want resolved as %q by alice", got.Open(), got.Resolution, got.ResolvedBy, tc.as)
			}

			if _, err := runCycle(t.Context(), io.Discard, f.rec); err != nil {
				t.Fatal(err)
			}
			st = f.state(t, pay.externalID)
			open := slices.ContainsFunc(st.findings, reconcile.Finding.Open)
			if open != tc.refound {
				t.Errorf("the next sweep left an open finding: %v, want %v: %+v", open, tc.refound, st.findings)
			}
		})
	}
}
