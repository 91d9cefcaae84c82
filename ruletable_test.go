package reconcile_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// detailedRules are paymentRules' shape with a Detail on two rules and the amount compared in
// the table's diffs, so that what a rule writes and what the table adds can be told apart.
func detailedRules(t *testing.T) *reconcile.RuleTable[payment, charge] {
	t.Helper()
	amounts := func(l payment, e charge) string { return fmt.Sprintf("ours %d, theirs %d", l.Amount, e.Amount) }
	rt, err := reconcile.NewRuleTable(paymentStatus, chargeStatus,
		reconcile.Rule[payment, charge]{Local: []string{"paid"}, External: []string{"succeeded"},
			When: func(l payment, e charge) bool { return l.Amount != e.Amount }, Decision: amountDiff, Detail: amounts},
		reconcile.Rule[payment, charge]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: inSync},
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, External: []string{"processing"}, Decision: inFlight, Detail: amounts},
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, External: []string{"succeeded"}, Decision: missed},
		reconcile.Rule[payment, charge]{Local: []string{"failed"}, External: []string{"succeeded"}, Decision: missed},
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, External: []string{"canceled"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_cancel", Command: "ApplyPaymentCanceled"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func amountDiffs(l payment, e charge) []reconcile.Diff {
	if l.Amount == e.Amount {
		return nil
	}
	return []reconcile.Diff{{Field: "amount", Local: fmt.Sprint(l.Amount), External: fmt.Sprint(e.Amount)}}
}

func TestRuleTableDetailAndDiffs(t *testing.T) {
	t.Parallel()
	plain := detailedRules(t)
	diffed := plain.WithDiffs(amountDiffs)
	diffs := []reconcile.Diff{{Field: "amount", Local: "100", External: "90"}}
	with := func(d reconcile.Decision, detail string, diffs []reconcile.Diff) reconcile.Decision {
		d.Detail, d.Diffs = detail, diffs
		return d
	}
	tests := []struct {
		name       string
		local      payment
		ext        charge
		want       reconcile.Decision // from the table without diffs
		wantDiffed reconcile.Decision // from WithDiffs
	}{
		{"a finding's rule writes its detail, and the table adds the diffs", payment{"paid", 100}, charge{"succeeded", 90},
			with(amountDiff, "ours 100, theirs 90", nil), with(amountDiff, "ours 100, theirs 90", diffs)},
		{"a pair in sync carries neither", payment{"paid", 100}, charge{"succeeded", 100}, inSync, inSync},
		{"a rule without Detail leaves the finding's detail empty", payment{"pending", 100}, charge{"succeeded", 90},
			missed, with(missed, "", []reconcile.Diff{{Field: "amount", Local: "100", External: "90"}})},
		{"a decision in flight gets its rule's detail but no diffs: it is no finding", payment{"pending", 100}, charge{"processing", 90},
			with(inFlight, "ours 100, theirs 90", nil), with(inFlight, "ours 100, theirs 90", nil)},
		{"an unexpected pair is a finding and carries the diffs too", payment{"failed", 100}, charge{"canceled", 90},
			reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:failed->canceled"},
			reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:failed->canceled", Diffs: diffs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := plain.Classify(tt.local, tt.ext); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("without diffs: Classify(%+v, %+v) = %+v, want %+v", tt.local, tt.ext, got, tt.want)
			}
			got := diffed.Classify(tt.local, tt.ext)
			if !reflect.DeepEqual(got, tt.wantDiffed) {
				t.Errorf("WithDiffs: Classify(%+v, %+v) = %+v, want %+v", tt.local, tt.ext, got, tt.wantDiffed)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Classify returned an invalid decision %+v: %v", got, err)
			}
		})
	}
}

func TestRuleTableKindsRepairedBy(t *testing.T) {
	t.Parallel()
	rt := detailedRules(t)
	tests := []struct {
		name    string
		command string
		want    []string
	}{
		{"a command two rules queue names its kind once", "ApplyPaymentSucceeded", []string{"missed_success"}},
		{"another command names its own kind", "ApplyPaymentCanceled", []string{"missed_cancel"}},
		{"a command no rule queues repairs nothing", "Refund", nil},
		{"the empty command is no command: a review or in-sync rule is repaired by nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := rt.KindsRepairedBy(tt.command); !slices.Equal(got, tt.want) {
				t.Errorf("KindsRepairedBy(%q) = %q, want %q", tt.command, got, tt.want)
			}
			if got := rt.WithDiffs(amountDiffs).KindsRepairedBy(tt.command); !slices.Equal(got, tt.want) {
				t.Errorf("WithDiffs: KindsRepairedBy(%q) = %q, want %q", tt.command, got, tt.want)
			}
		})
	}
	// Kinds come in the order of the rules that decide them.
	two, err := reconcile.NewRuleTable(paymentStatus, chargeStatus,
		reconcile.Rule[payment, charge]{Local: []string{"paid"}, Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "b", Command: "C"}},
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "x"}},
		reconcile.Rule[payment, charge]{Local: []string{"failed"}, Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "a", Command: "C"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := two.KindsRepairedBy("C"); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("KindsRepairedBy = %q, want [b a]: the rules' order, and no review kind", got)
	}
}

func TestRuleTableWithDiffsLeavesTheTableAsItWas(t *testing.T) {
	t.Parallel()
	rt := detailedRules(t)
	_ = rt.WithDiffs(amountDiffs)
	if got := rt.Classify(payment{"paid", 100}, charge{"succeeded", 90}); got.Diffs != nil {
		t.Fatalf("the table WithDiffs was called on gives diffs %+v, want none: WithDiffs returns a copy", got.Diffs)
	}
}
