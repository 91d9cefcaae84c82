package reconcile_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

func TestDecisionValidate(t *testing.T) {
	tests := []struct {
		name    string
		d       reconcile.Decision
		wantErr string // empty: valid
	}{
		{"the zero decision is invalid so a forgotten verdict is caught", reconcile.Decision{}, "invalid verdict 0"},
		{"a verdict past the last one is invalid", reconcile.Decision{Verdict: reconcile.Unverifiable + 1}, "invalid verdict 6"},
		{"a negative verdict is invalid", reconcile.Decision{Verdict: -1}, "invalid verdict -1"},
		{"a repairable decision without a kind is invalid",
			reconcile.Decision{Verdict: reconcile.Repairable, Command: "ApplyPaymentSucceeded"}, "without a finding kind"},
		{"a repairable decision without a command is invalid",
			reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success"}, "without a repair command"},
		{"a needs-review decision without a kind is invalid",
			reconcile.Decision{Verdict: reconcile.NeedsReview}, "without a finding kind"},
		{"a needs-review decision carrying a command is invalid",
			reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally", Command: "Refund"}, "carries a repair command"},
		{"an in-sync decision carrying a command is invalid",
			reconcile.Decision{Verdict: reconcile.InSync, Command: "ApplyPaymentSucceeded"}, "carries a repair command"},
		{"an in-flight decision carrying a command is invalid",
			reconcile.Decision{Verdict: reconcile.InFlight, Command: "ApplyPaymentSucceeded"}, "carries a repair command"},
		{"an unverifiable decision carrying a command is invalid",
			reconcile.Decision{Verdict: reconcile.Unverifiable, Command: "ApplyPaymentSucceeded"}, "carries a repair command"},
		{"a bare in-sync decision is valid", reconcile.Decision{Verdict: reconcile.InSync}, ""},
		{"a bare in-flight decision is valid", reconcile.Decision{Verdict: reconcile.InFlight}, ""},
		{"a bare unverifiable decision is valid", reconcile.Decision{Verdict: reconcile.Unverifiable}, ""},
		{"a repairable decision with a kind and a command is valid",
			reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded", Detail: "webhook lost"}, ""},
		{"a needs-review decision with a kind is valid",
			reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally", Detail: "money taken?"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.d.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tt.d, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error containing %q", tt.d, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "reconcile: ") {
				t.Fatalf("Validate(%+v) = %q, want a reconcile: error containing %q", tt.d, err, tt.wantErr)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		name string
		v    reconcile.Verdict
		want string
	}{
		{"InSync is in_sync", reconcile.InSync, "in_sync"},
		{"InFlight is in_flight", reconcile.InFlight, "in_flight"},
		{"Repairable is repairable", reconcile.Repairable, "repairable"},
		{"NeedsReview is needs_review", reconcile.NeedsReview, "needs_review"},
		{"Unverifiable is unverifiable", reconcile.Unverifiable, "unverifiable"},
		{"the zero verdict shows its number", 0, "verdict(0)"},
		{"a verdict past the last shows its number", reconcile.Unverifiable + 1, "verdict(6)"},
		{"a negative verdict shows its number", -3, "verdict(-3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Fatalf("Verdict(%d).String() = %q, want %q", int(tt.v), got, tt.want)
			}
		})
	}
}

func TestVerdictsListsEveryVerdictInOrder(t *testing.T) {
	want := []reconcile.Verdict{reconcile.InSync, reconcile.InFlight, reconcile.Repairable, reconcile.NeedsReview, reconcile.Unverifiable}
	if len(reconcile.Verdicts) != len(want) {
		t.Fatalf("Verdicts = %v, want %v", reconcile.Verdicts, want)
	}
	for i := range want {
		if reconcile.Verdicts[i] != want[i] {
			t.Fatalf("Verdicts = %v, want %v", reconcile.Verdicts, want)
		}
	}
}

// payment and charge are the two sides the rule-table tests classify: states plus an amount, so
// that When can compare more than states.
type payment struct {
	Status string
	Amount int64
}

type charge struct {
	Status string
	Amount int64
}

func paymentStatus(p payment) string { return p.Status }
func chargeStatus(c charge) string   { return c.Status }

var (
	inSync      = reconcile.Decision{Verdict: reconcile.InSync}
	inFlight    = reconcile.Decision{Verdict: reconcile.InFlight}
	missed      = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
	amountDiff  = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch"}
	paidNotPaid = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}
	anyCanceled = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "canceled_externally"}
)

func paymentRules(t *testing.T) *reconcile.RuleTable[payment, charge] {
	t.Helper()
	rt, err := reconcile.NewRuleTable(paymentStatus, chargeStatus,
		// Amounts compared before states: a paid row whose amount differs is never InSync.
		reconcile.Rule[payment, charge]{Local: []string{"paid"}, External: []string{"succeeded"},
			When: func(l payment, e charge) bool { return l.Amount != e.Amount }, Decision: amountDiff},
		reconcile.Rule[payment, charge]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: inSync},
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, External: []string{"processing", "requires_capture"}, Decision: inFlight},
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, External: []string{"succeeded"}, Decision: missed},
		// Same pair as the rule above: it must never win, because the first match decides.
		reconcile.Rule[payment, charge]{Local: []string{"pending"}, External: []string{"succeeded"}, Decision: inSync},
		// Empty External: any external state.
		reconcile.Rule[payment, charge]{Local: []string{"paid"}, Decision: paidNotPaid},
		// Empty Local: any local state.
		reconcile.Rule[payment, charge]{External: []string{"canceled"}, Decision: anyCanceled},
	)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestRuleTableClassify(t *testing.T) {
	rt := paymentRules(t)
	tests := []struct {
		name  string
		local payment
		ext   charge
		want  reconcile.Decision
	}{
		{"paid with equal amounts is in sync", payment{"paid", 100}, charge{"succeeded", 100}, inSync},
		{"paid with different amounts matches the When rule listed first", payment{"paid", 100}, charge{"succeeded", 90}, amountDiff},
		{"pending while processing is in flight", payment{"pending", 100}, charge{"processing", 100}, inFlight},
		{"a second listed external state matches too", payment{"pending", 100}, charge{"requires_capture", 100}, inFlight},
		{"pending but succeeded takes the first of two matching rules", payment{"pending", 100}, charge{"succeeded", 100}, missed},
		{"paid with any other external state matches the rule with empty External", payment{"paid", 100}, charge{"requires_action", 100}, paidNotPaid},
		{"paid and canceled matches the earlier empty-External rule, not the later empty-Local one", payment{"paid", 100}, charge{"canceled", 100}, paidNotPaid},
		{"any local state and canceled matches the rule with empty Local", payment{"failed", 100}, charge{"canceled", 100}, anyCanceled},
		{"an empty local state still matches the rule with empty Local", payment{"", 100}, charge{"canceled", 100}, anyCanceled},
		{"an unmatched pair falls to needs review naming both states", payment{"failed", 100}, charge{"succeeded", 100},
			reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:failed->succeeded"}},
		{"an unmatched pair with an empty external state is still named", payment{"pending", 100}, charge{"", 100},
			reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:pending->"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rt.Classify(tt.local, tt.ext)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Classify(%+v, %+v) = %+v, want %+v", tt.local, tt.ext, got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("Classify returned an invalid decision %+v: %v", got, err)
			}
		})
	}
}

func TestRuleTableWithoutRulesSendsEverythingToReview(t *testing.T) {
	rt, err := reconcile.NewRuleTable(paymentStatus, chargeStatus)
	if err != nil {
		t.Fatal(err)
	}
	want := reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:paid->succeeded"}
	if got := rt.Classify(payment{"paid", 1}, charge{"succeeded", 1}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Classify = %+v, want %+v", got, want)
	}
}

func TestRuleTableKeepsItsOwnCopyOfTheRules(t *testing.T) {
	rules := []reconcile.Rule[payment, charge]{
		{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: inSync},
	}
	rt, err := reconcile.NewRuleTable(paymentStatus, chargeStatus, rules...)
	if err != nil {
		t.Fatal(err)
	}
	// Changing the caller's slice after validation must not smuggle in an unchecked decision.
	rules[0].Decision = reconcile.Decision{}
	if got := rt.Classify(payment{"paid", 1}, charge{"succeeded", 1}); !reflect.DeepEqual(got, inSync) {
		t.Fatalf("Classify after the caller changed its slice = %+v, want %+v", got, inSync)
	}
}

func TestNewRuleTableRejects(t *testing.T) {
	valid := reconcile.Rule[payment, charge]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: inSync}
	tests := []struct {
		name     string
		local    func(payment) string
		external func(charge) string
		rules    []reconcile.Rule[payment, charge]
		wantErr  string
	}{
		{"a nil local state function", nil, chargeStatus, []reconcile.Rule[payment, charge]{valid}, "naming the local and external state"},
		{"a nil external state function", paymentStatus, nil, []reconcile.Rule[payment, charge]{valid}, "naming the local and external state"},
		{"a rule whose decision has no verdict", paymentStatus, chargeStatus,
			[]reconcile.Rule[payment, charge]{valid, {Local: []string{"failed"}}}, "rule 1"},
		{"a repairable rule without a command", paymentStatus, chargeStatus,
			[]reconcile.Rule[payment, charge]{{Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success"}}}, "rule 0"},
		{"a needs-review rule without a kind", paymentStatus, chargeStatus,
			[]reconcile.Rule[payment, charge]{valid, valid, {Decision: reconcile.Decision{Verdict: reconcile.NeedsReview}}}, "rule 2"},
		{"an in-sync rule carrying a command", paymentStatus, chargeStatus,
			[]reconcile.Rule[payment, charge]{{Decision: reconcile.Decision{Verdict: reconcile.InSync, Command: "Refund"}}}, "rule 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := reconcile.NewRuleTable(tt.local, tt.external, tt.rules...)
			if err == nil {
				t.Fatalf("NewRuleTable accepted it and returned %v, want an error", rt)
			}
			if rt != nil {
				t.Fatalf("NewRuleTable returned a table %v with error %v, want nil", rt, err)
			}
			if !strings.HasPrefix(err.Error(), "reconcile: ") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q, want a reconcile: error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestClassifierFuncAdaptsAFunction(t *testing.T) {
	var gotLocal payment
	var gotExt charge
	f := reconcile.ClassifierFunc[payment, charge](func(l payment, e charge) reconcile.Decision {
		gotLocal, gotExt = l, e
		if l.Amount != e.Amount {
			return amountDiff
		}
		return inSync
	})
	var c reconcile.Classifier[payment, charge] = f
	tests := []struct {
		name  string
		local payment
		ext   charge
		want  reconcile.Decision
	}{
		{"equal amounts give the function's in-sync answer", payment{"paid", 5}, charge{"succeeded", 5}, inSync},
		{"different amounts give the function's review answer", payment{"paid", 5}, charge{"succeeded", 6}, amountDiff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Classify(tt.local, tt.ext); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Classify = %+v, want %+v", got, tt.want)
			}
			if gotLocal != tt.local || gotExt != tt.ext {
				t.Fatalf("the function saw (%+v, %+v), want (%+v, %+v)", gotLocal, gotExt, tt.local, tt.ext)
			}
		})
	}
}

func TestUnexpectedIsAValidReviewDecision(t *testing.T) {
	d := reconcile.Unexpected("paid", "requires_action")
	want := reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:paid->requires_action"}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Unexpected = %+v, want %+v", d, want)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("Unexpected returned an invalid decision: %v", err)
	}
}

func TestUnexpectedWritesEachStateAsAKindHoldsIt(t *testing.T) {
	long := strings.Repeat("é", 5000)
	for _, tc := range []struct {
		name, local, external, want string
	}{
		{"plain states are kept as they are", "failed", "requires_payment_method", "unexpected:failed->requires_payment_method"},
		{"an empty state stays empty", "pending", "", "unexpected:pending->"},
		{"a NUL becomes U+FFFD", "paid", "succeeded\x00", "unexpected:paid->succeeded\uFFFD"},
		{"bytes that are not UTF-8 become U+FFFD", "paid", "succ\xffeeded", "unexpected:paid->succ\uFFFDeeded"},
		{"a newline and an escape become U+FFFD", "paid\n", "\x1b[0m", "unexpected:paid\uFFFD->\uFFFD[0m"},
		{"a right-to-left override becomes U+FFFD", "paid", "\u202esucceeded", "unexpected:paid->\uFFFDsucceeded"},
		{"letters of any script are kept", "payé", "réussi", "unexpected:payé->réussi"},
		{"a long state is cut on a character boundary, marked",
			"paid", long, "unexpected:paid->" + strings.Repeat("é", 45) + "…"},
		{"two long states both fit", long, long,
			"unexpected:" + strings.Repeat("é", 45) + "…->" + strings.Repeat("é", 45) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := reconcile.Unexpected(tc.local, tc.external)
			if d.Kind != tc.want || d.Verdict != reconcile.NeedsReview {
				t.Fatalf("Unexpected(%.40q, %.40q) = %s %q, want needs_review %q", tc.local, tc.external, d.Verdict, d.Kind, tc.want)
			}
			if len(d.Kind) > reconcile.MaxKind || !utf8.ValidString(d.Kind) {
				t.Fatalf("kind of %d bytes (valid %v), want at most %d, valid", len(d.Kind), utf8.ValidString(d.Kind), reconcile.MaxKind)
			}
		})
	}
}
