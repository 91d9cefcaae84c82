package console

import (
	"math"
	"testing"

	"github.com/reconcilekit/reconcile"
)

func TestAPayoutsAmountsAreMoneyAndItsDifferenceNeverWraps(t *testing.T) {
	tied := func(amount, expected int64, known bool) reconcile.GroupRecord {
		return reconcile.GroupRecord{Amount: amount, Expected: expected, ExpectedKnown: known, TiedOut: true, Currency: "jpy"}
	}
	for _, tt := range []struct {
		name                  string
		g                     reconcile.GroupRecord
		paid, expected, diffs string
	}{
		{"held", tied(1000, 1000, true), "JPY 1,000", "JPY 1,000", "JPY 0"},
		{"short", tied(1000, 950, true), "JPY 1,000", "JPY 950", "JPY -50"},
		{"over", tied(-10, 5, true), "JPY -10", "JPY 5", "JPY 15"},
		{"unknown sum", tied(1000, 0, false), "JPY 1,000", "", ""},
		{"pending", reconcile.GroupRecord{Amount: 7, Currency: "usd", Expected: 7, ExpectedKnown: true}, "USD 0.07", "", ""},
		{"a difference past int64 above", tied(math.MinInt64, math.MaxInt64, true), "JPY -9,223,372,036,854,775,808", "JPY 9,223,372,036,854,775,807", "overflow"},
		{"a difference past int64 below", tied(1, math.MinInt64, true), "JPY 1", "JPY -9,223,372,036,854,775,808", "overflow"},
		{"the largest difference that fits", tied(-1, math.MaxInt64-1, true), "JPY -1", "JPY 9,223,372,036,854,775,806", "JPY 9,223,372,036,854,775,807"},
	} {
		p, e, d := amounts(tt.g)
		if p != tt.paid || e != tt.expected || d != tt.diffs {
			t.Errorf("%s: amounts = %q, %q, %q; want %q, %q, %q", tt.name, p, e, d, tt.paid, tt.expected, tt.diffs)
		}
	}
}

func TestAPayoutsStateIsNamedForPeople(t *testing.T) {
	for _, tt := range []struct {
		g    reconcile.GroupRecord
		want string
	}{
		{reconcile.GroupRecord{}, "not tied out yet"},
		{reconcile.GroupRecord{TiedOut: true}, "cannot be itemized"},
		{reconcile.GroupRecord{TiedOut: true, Itemized: true, Held: true}, "held"},
		{reconcile.GroupRecord{TiedOut: true, Itemized: true, Held: true, Findings: 1}, "held, with findings"},
		{reconcile.GroupRecord{TiedOut: true, Itemized: true}, "does not hold"},
	} {
		if got := groupState(tt.g); got != tt.want {
			t.Errorf("groupState(%+v) = %q; want %q", tt.g, got, tt.want)
		}
	}
}
