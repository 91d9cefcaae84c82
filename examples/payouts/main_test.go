package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// The run plants every finding of the story and finds each exactly once, and nothing else, in
// its own schema; its report shows each payout and each kind found.
func TestRunFindsEachPlantedFindingOnce(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: pgtest.URL(t), DatabaseSource: "the test's", Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"Check: each of the 14 planted findings was found exactly once, and nothing else.",
		"failed  paid USD 421.26", "lines not itemizable", "held", "Report runs: 1 (",
		tieout.KindUnbookedPayment, tieout.KindUnbookedRefund, tieout.KindUnbookedDispute + " (2)",
		tieout.KindUnbookedRefundFailure, tieout.KindUnbookedPaymentFailureRefund, tieout.KindUnbookedPayoutFailure,
		tieout.KindAmountDiffers + " (2)", "amount USD 30.00 -> USD 33.00", tieout.KindUnknownType, tieout.KindSumMismatch,
		tieout.KindNotItemizable, tieout.KindPayoutFailed, tieout.KindNeverPaidOut,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
}

// The check fails on a planted finding missing or found twice, and on one not planted.
func TestCheckFailsUnlessEachIsFoundOnceAndNothingElse(t *testing.T) {
	want := []planted{{"txn_1", tieout.KindUnbookedRefund, "a"}, {"po_1", tieout.KindPayoutFailed, "b"}}
	for _, c := range []struct {
		name  string
		found map[[2]string]int
		ok    bool
	}{
		{"each once", map[[2]string]int{{"txn_1", tieout.KindUnbookedRefund}: 1, {"po_1", tieout.KindPayoutFailed}: 1}, true},
		{"one missing", map[[2]string]int{{"txn_1", tieout.KindUnbookedRefund}: 1}, false},
		{"one twice", map[[2]string]int{{"txn_1", tieout.KindUnbookedRefund}: 2, {"po_1", tieout.KindPayoutFailed}: 1}, false},
		{"another kind", map[[2]string]int{{"txn_1", tieout.KindUnbookedDispute}: 1, {"po_1", tieout.KindPayoutFailed}: 1}, false},
		{"one more", map[[2]string]int{{"txn_1", tieout.KindUnbookedRefund}: 1, {"po_1", tieout.KindPayoutFailed}: 1,
			{"txn_2", tieout.KindUnknownType}: 1}, false},
	} {
		var out bytes.Buffer
		if err := check(&out, want, c.found); (err == nil) != c.ok {
			t.Errorf("%s: check %v, want ok %v\n%s", c.name, err, c.ok, out.String())
		}
	}
}

// A schema that is not a plain identifier is refused before anything is dropped.
func TestRunRefusesASchemaThatIsNotAnIdentifier(t *testing.T) {
	for _, s := range []string{"a;DROP SCHEMA public", "Payouts", "a\x00b", strings.Repeat("a", 64)} {
		if err := run(t.Context(), &bytes.Buffer{}, options{DatabaseURL: "postgres://127.0.0.1:1/x", Schema: s}); err == nil ||
			!strings.Contains(err.Error(), "plain lower-case SQL identifier") {
			t.Errorf("schema %q: %v", s, err)
		}
	}
}
