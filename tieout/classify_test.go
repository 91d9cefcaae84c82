package tieout

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcile"
)

// payout is a paid USD payout of amount.
func payout(amount int64) Group {
	return Group{ID: "po_1", Status: "paid", State: GroupPaid, Amount: amount, Currency: "usd", Itemized: true}
}

// charge is a USD charge line of pi's, amount gross, fee fee, its source read.
func charge(id, pi string, amount, fee int64) Member {
	return Member{ID: id, Type: "charge", Kind: KindPayment, SourceID: "ch_" + id, BookedID: pi, Amount: amount, Fee: fee,
		Net: amount - fee, Currency: "usd", SourceAmount: amount, SourceCurrency: "usd", Status: "available"}
}

// line is a line of kind with net amount (no fee), its source id src.
func line(id, typ, kind, src string, amount int64) Member {
	return Member{ID: id, Type: typ, Kind: kind, SourceID: src, Amount: amount, Net: amount, Currency: "usd",
		SourceAmount: amount, SourceCurrency: "usd"}
}

func own(g Group) Member {
	return Member{ID: "txn_po", Type: "payout", Kind: KindGroup, SourceID: g.ID, Amount: -g.Amount, Net: -g.Amount, Currency: g.Currency}
}

func book(kind, id string, amount int64) Booked {
	return Booked{Kind: kind, ID: id, Amount: amount, Currency: "usd", Basis: Presentment}
}

// summary writes each finding as "record kind verdict".
func summary(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if err := f.Decision.Validate(); err != nil {
			out = append(out, "invalid decision: "+err.Error())
		}
		out = append(out, fmt.Sprintf("%s %s %s", f.Record, f.Decision.Kind, f.Decision.Verdict))
	}
	return out
}

func TestClassifyTiesAPayoutOut(t *testing.T) {
	g := payout(741)
	eur := Member{ID: "txn_eur", Type: "charge", Kind: KindPayment, SourceID: "ch_eur", BookedID: "pi_eur", Amount: 1234, Fee: 0, Net: 1234,
		Currency: "usd", ExchangeRate: 1.234}
	gEUR := payout(741 + 1234)
	tests := []struct {
		name    string
		policy  Policy
		group   Group
		members []Member
		booked  []Booked
		want    []string
	}{
		{name: "a payout whose lines are booked right and sum to it is in sync",
			group:   g,
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_2", "refund", KindRefund, "re_1", -200), own(g)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), book(KindRefund, "re_1", -200)}},
		{name: "the payout's own line may be left out of the listing",
			group:   g,
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_2", "refund", KindRefund, "re_1", -200)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), book(KindRefund, "re_1", -200)}},
		{name: "a payout's own line that is not the negative of its amount does not hold",
			group:   g,
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_2", "refund", KindRefund, "re_1", -200), own(payout(740))},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), book(KindRefund, "re_1", -200)},
			want:    []string{"po_1 payout_sum_mismatch needs_review"}},
		{name: "lines that do not sum to the payout do not hold",
			group:   payout(742),
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_2", "refund", KindRefund, "re_1", -200)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), book(KindRefund, "re_1", -200)},
			want:    []string{"po_1 payout_sum_mismatch needs_review"}},
		{name: "a EUR charge settled in USD and booked in EUR is in sync through its source",
			group: payout(1234),
			members: []Member{{ID: "txn_eur", Type: "charge", Kind: KindPayment, SourceID: "ch_eur", BookedID: "pi_eur", Amount: 1234, Net: 1234,
				Currency: "usd", SourceAmount: 1000, SourceCurrency: "eur", ExchangeRate: 1.234}},
			booked: []Booked{{Kind: KindPayment, ID: "pi_eur", Amount: 1000, Currency: "eur", Basis: Presentment}}},
		{name: "a EUR charge settled in USD and booked in EUR is in sync through the exchange rate",
			group:   gEUR,
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_2", "refund", KindRefund, "re_1", -200), eur},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), book(KindRefund, "re_1", -200), {Kind: KindPayment, ID: "pi_eur", Amount: 1000, Currency: "eur", Basis: Presentment}}},
		{name: "a large EUR charge is in sync through a rate rounded to a few digits",
			group: payout(123_456_789),
			members: []Member{{ID: "txn_big", Type: "charge", Kind: KindPayment, SourceID: "ch_big", BookedID: "pi_big", Amount: 123_456_789, Net: 123_456_789,
				Currency: "usd", ExchangeRate: 1.234568}},
			booked: []Booked{{Kind: KindPayment, ID: "pi_big", Amount: 100_000_000, Currency: "eur", Basis: Presentment}}},
		{name: "a large EUR charge booked 1% off differs through the rate",
			group: payout(123_456_789),
			members: []Member{{ID: "txn_big", Type: "charge", Kind: KindPayment, SourceID: "ch_big", BookedID: "pi_big", Amount: 123_456_789, Net: 123_456_789,
				Currency: "usd", ExchangeRate: 1.234568}},
			booked: []Booked{{Kind: KindPayment, ID: "pi_big", Amount: 101_000_000, Currency: "eur", Basis: Presentment}},
			want:   []string{"txn_big booked_amount_differs needs_review"}},
		{name: "a payout the host booked paid and then failed is in sync once failed",
			policy:  Policy{Books: append(slices.Clone(DefaultBooks), KindGroup)},
			group:   Group{ID: "po_1", Status: "failed", State: GroupFailed, Terminal: true, Amount: 941, Currency: "usd", Itemized: true},
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), {Kind: KindGroup, ID: "po_1", Status: "paid"}, {Kind: KindGroup, ID: "po_1", Status: "failed"}}},
		{name: "a EUR charge booked at another amount differs through the exchange rate",
			group:   payout(1234),
			members: []Member{eur},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_eur", Amount: 1100, Currency: "eur", Basis: Presentment}},
			want:    []string{"txn_eur booked_amount_differs needs_review"}},
		{name: "a EUR charge whose source was not read and that has no rate cannot be compared in EUR",
			group:   payout(1234),
			members: []Member{{ID: "txn_eur", Type: "charge", Kind: KindPayment, SourceID: "ch_eur", BookedID: "pi_eur", Amount: 1234, Net: 1234, Currency: "usd"}},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_eur", Amount: 1000, Currency: "eur", Basis: Presentment}},
			want:    []string{"txn_eur source_unread needs_review"}},
		{name: "a settlement booking is compared with the line's amount",
			group:   payout(1234),
			members: []Member{eur},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_eur", Amount: 1234, Currency: "usd", Basis: Settlement}}},
		{name: "a settlement booking of another amount differs",
			group:   payout(1234),
			members: []Member{eur},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_eur", Amount: 1230, Currency: "usd", Basis: Settlement}},
			want:    []string{"txn_eur booked_amount_differs needs_review"}},
		{name: "a booking in another currency differs",
			group:   payout(941),
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_1", Amount: 1000, Currency: "gbp", Basis: Presentment}},
			want:    []string{"txn_1 booked_amount_differs needs_review"}},
		{name: "a payment the host never booked goes to a person",
			group:   payout(941),
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			want:    []string{"txn_1 unbooked_payment needs_review"}},
		{name: "a refund, a dispute adjustment and a payout failure the host never booked are repaired",
			group: payout(-200 - 1500 + 5000),
			members: []Member{line("txn_2", "refund", KindRefund, "re_1", -200), line("txn_3", "adjustment", KindDispute, "du_1", -1500),
				line("txn_4", "payout_failure", KindGroupFailure, "po_0", 5000)},
			want: []string{"txn_2 unbooked_refund repairable", "txn_3 unbooked_dispute repairable", "txn_4 unbooked_payout_failure repairable"}},
		{name: "a refund failure and a payment failure refund the host never booked go to a person",
			group:   payout(200 - 1000),
			members: []Member{line("txn_5", "refund_failure", KindRefundFailure, "re_2", 200), line("txn_6", "payment_failure_refund", KindPaymentFailureRefund, "py_1", -1000)},
			want:    []string{"txn_5 unbooked_refund_failure needs_review", "txn_6 unbooked_payment_failure_refund needs_review"}},
		{name: "fees are compared when the host books them",
			policy:  Policy{Fees: true},
			group:   payout(941),
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_1", Amount: 1000, Currency: "usd", Basis: Presentment, Fee: 50, HasFee: true}},
			want:    []string{"txn_1 booked_fee_differs needs_review"}},
		{name: "fees are not compared when the host does not book them",
			group:   payout(941),
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{{Kind: KindPayment, ID: "pi_1", Amount: 1000, Currency: "usd", Basis: Presentment, Fee: 50, HasFee: true}}},
		{name: "a fee line counts in the sum only when the host does not book fees",
			group:   payout(941 - 30),
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_f", "stripe_fee", KindFee, "", -30)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000)}},
		{name: "a fee line the host books fees for and did not book is repaired",
			policy:  Policy{Fees: true},
			group:   payout(-30),
			members: []Member{line("txn_f", "stripe_fee", KindFee, "fee_1", -30)},
			want:    []string{"txn_f unbooked_fee repairable"}},
		{name: "a line of a known type the host does not book counts in the sum only",
			group:   payout(-300),
			members: []Member{line("txn_t", "transfer", KindOther, "tr_1", -300)}},
		{name: "a line of a type the policy does not know is a finding and still counts in the sum",
			group:   payout(941 + 77),
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_x", "climate_order_purchase", "", "clim_1", 77)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000)},
			want:    []string{"txn_x unknown_line_type needs_review"}},
		{name: "a manual payout is reported as not itemizable, never as a sum that does not hold",
			group: Group{ID: "po_m", Status: "paid", State: GroupPaid, Amount: 5000, Currency: "usd"},
			want:  []string{"po_m payout_not_itemizable needs_review"}},
		{name: "a failed payout is repaired when the host does not book payouts",
			group:   Group{ID: "po_1", Status: "failed", State: GroupFailed, Terminal: true, Amount: 941, Currency: "usd", Itemized: true},
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000)},
			want:    []string{"po_1 payout_failed repairable"}},
		{name: "a payout that failed after the host booked it paid is repaired",
			policy:  Policy{Books: append(slices.Clone(DefaultBooks), KindGroup)},
			group:   Group{ID: "po_1", Status: "failed", State: GroupFailed, Terminal: true, Amount: 941, Currency: "usd", Itemized: true},
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), {Kind: KindGroup, ID: "po_1", Status: "paid"}},
			want:    []string{"po_1 payout_failed repairable"}},
		{name: "a failed payout the host booked as failed is in sync",
			policy:  Policy{Books: append(slices.Clone(DefaultBooks), KindGroup)},
			group:   Group{ID: "po_1", Status: "failed", State: GroupFailed, Terminal: true, Amount: 941, Currency: "usd", Itemized: true},
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000), {Kind: KindGroup, ID: "po_1", Status: "failed"}}},
		{name: "a payout of a status the policy does not know is a finding, and still tied out",
			group:   Group{ID: "po_1", Status: "teleported", Amount: 941, Currency: "usd", Itemized: true},
			members: []Member{charge("txn_1", "pi_1", 1000, 59)},
			want:    []string{"po_1 payout_status_unknown needs_review", "txn_1 unbooked_payment needs_review"}},
		{name: "two refunds booked under one payment pair with their own bookings",
			group: payout(-300),
			members: []Member{{ID: "txn_a", Type: "refund", Kind: KindRefund, SourceID: "re_a", BookedID: "pi_1", Amount: -100, Net: -100, Currency: "usd"},
				{ID: "txn_b", Type: "refund", Kind: KindRefund, SourceID: "re_b", BookedID: "pi_1", Amount: -200, Net: -200, Currency: "usd"}},
			booked: []Booked{book(KindRefund, "pi_1", -200), book(KindRefund, "pi_1", -100)}},
		{name: "a line listed twice is counted once",
			group:   payout(941),
			members: []Member{charge("txn_1", "pi_1", 1000, 59), charge("txn_1", "pi_1", 1000, 59)},
			booked:  []Booked{book(KindPayment, "pi_1", 1000)},
			want:    []string{"txn_1 duplicate_line needs_review"}},
		{name: "a line in another currency is invalid and not summed",
			group:   payout(941),
			members: []Member{charge("txn_1", "pi_1", 1000, 59), {ID: "txn_g", Type: "charge", Kind: KindPayment, SourceID: "ch_g", Amount: 5, Net: 5, Currency: "gbp"}},
			booked:  []Booked{book(KindPayment, "pi_1", 1000)},
			want:    []string{"txn_g invalid_line needs_review"}},
		{name: "a line whose net is not amount minus fee is invalid, and summed as listed",
			group:   payout(941),
			members: []Member{{ID: "txn_1", Type: "charge", Kind: KindPayment, SourceID: "ch_1", BookedID: "pi_1", Amount: 1000, Fee: 50, Net: 941, Currency: "usd"}},
			booked:  []Booked{book(KindPayment, "pi_1", 1000)},
			want:    []string{"txn_1 invalid_line needs_review"}},
		{name: "a line without an id is recorded under the payout and its place",
			group:   payout(0),
			members: []Member{{Type: "charge", Kind: KindPayment, SourceID: "ch_1", Currency: "usd"}},
			want:    []string{"po_1#0 invalid_line needs_review"}},
		{name: "lines whose sum overflows do not hold, even where it wraps to the payout's amount",
			group: payout(0),
			members: []Member{line("txn_a", "transfer", KindOther, "tr_a", math.MaxInt64), line("txn_b", "transfer", KindOther, "tr_b", math.MaxInt64),
				line("txn_c", "transfer", KindOther, "tr_c", 2)},
			want: []string{"po_1 payout_sum_mismatch needs_review"}},
		{name: "findings come in the lines' order, the group's first",
			group:   payout(0),
			members: []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_x", "mystery", "", "x_1", 1), line("txn_2", "refund", KindRefund, "re_1", -200)},
			want: []string{"po_1 payout_sum_mismatch needs_review", "txn_1 unbooked_payment needs_review",
				"txn_x unknown_line_type needs_review", "txn_2 unbooked_refund repairable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(tt.policy.Classify(tt.group, tt.members, tt.booked))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAFindingSaysWhatDiffersAsMoney(t *testing.T) {
	g := payout(941)
	fs := Policy{Fees: true}.Classify(g, []Member{charge("txn_1", "pi_1", 1000, 59)},
		[]Booked{{Kind: KindPayment, ID: "pi_1", Amount: 1200, Currency: "usd", Basis: Presentment, Fee: 50, HasFee: true}})
	if len(fs) != 1 {
		t.Fatalf("findings: %v", summary(fs))
	}
	f := fs[0]
	want := []reconcile.Diff{{Field: "amount", Local: "USD 12.00", External: "USD 10.00"}, {Field: "fee", Local: "USD 0.50", External: "USD 0.59"}}
	if diff := cmp.Diff(want, f.Decision.Diffs); diff != "" {
		t.Errorf("diffs (-want +got):\n%s", diff)
	}
	if f.Group != "po_1" || f.ExternalID != "ch_txn_1" || f.Local != "booked payment" || f.External != "charge available" {
		t.Errorf("finding = %+v", f)
	}
	if f.Decision.Detail != "charge ch_txn_1 in payout po_1" {
		t.Errorf("detail = %q", f.Decision.Detail)
	}
}

func TestKeysAsksForEachBookedKeyOnce(t *testing.T) {
	members := []Member{charge("txn_1", "pi_1", 1000, 59), line("txn_2", "refund", KindRefund, "re_1", -200),
		{ID: "txn_3", Type: "refund", Kind: KindRefund, SourceID: "re_1", Amount: -1, Net: -1, Currency: "usd"},
		line("txn_t", "transfer", KindOther, "tr_1", -300), line("txn_x", "mystery", "", "x_1", 1), line("txn_f", "stripe_fee", KindFee, "fee_1", -3)}
	want := []Key{{KindPayment, "pi_1"}, {KindRefund, "re_1"}}
	if diff := cmp.Diff(want, Policy{}.Keys(members)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	want = append(want, Key{KindFee, "fee_1"})
	if diff := cmp.Diff(want, Policy{Fees: true}.Keys(members)); diff != "" {
		t.Errorf("keys with fees (-want +got):\n%s", diff)
	}
}

func TestEveryKindHasAMeaningAndEveryDecisionIsValid(t *testing.T) {
	known := map[string]reconcile.KindInfo{}
	for _, k := range Kinds() {
		if k.Meaning == "" || known[k.Kind].Kind != "" {
			t.Errorf("kind %q: empty or repeated", k.Kind)
		}
		known[k.Kind] = k
	}
	for kind, d := range unbooked {
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		if _, ok := known[d.Kind]; !ok {
			t.Errorf("%s: kind %q has no meaning", kind, d.Kind)
		}
	}
	for _, k := range []string{KindUnbooked, KindAmountDiffers, KindFeeDiffers, KindSourceUnread, KindUnknownType, KindInvalidLine,
		KindDuplicateLine, KindSumMismatch, KindUnknownStatus, KindNotItemizable, KindPayoutFailed, KindNeverPaidOut} {
		if _, ok := known[k]; !ok {
			t.Errorf("kind %q has no meaning", k)
		}
	}
}

func TestCheckedArithmetic(t *testing.T) {
	for _, tt := range []struct {
		a, b     int64
		add, sub bool
	}{
		{1, 2, true, true}, {math.MaxInt64, 1, false, true}, {math.MinInt64, -1, false, true},
		{math.MinInt64, 1, true, false}, {math.MaxInt64, -1, true, false}, {0, math.MinInt64, true, false},
	} {
		if _, ok := add(tt.a, tt.b); ok != tt.add {
			t.Errorf("add(%d, %d) ok = %v", tt.a, tt.b, ok)
		}
		if _, ok := sub(tt.a, tt.b); ok != tt.sub {
			t.Errorf("sub(%d, %d) ok = %v", tt.a, tt.b, ok)
		}
	}
	if _, ok := negate(math.MinInt64); ok {
		t.Error("negate(MinInt64) ok")
	}
}

func TestConvertGoesThroughMajorUnits(t *testing.T) {
	for _, tt := range []struct {
		amount   int64
		from, to string
		rate     float64
		want     int64
		ok       bool
	}{
		{1000, "eur", "usd", 1.234, 1234, true},
		{1000, "jpy", "usd", 0.0067, 670, true},
		{1000, "usd", "jpy", 150, 1500, true},
		{math.MaxInt64, "eur", "usd", 2, 0, false},
		{1000, "eur", "usd", math.NaN(), 0, false},
	} {
		got, ok := convert(tt.amount, tt.from, tt.to, tt.rate)
		if got != tt.want || ok != tt.ok {
			t.Errorf("convert(%d %s -> %s at %v) = %d, %v; want %d, %v", tt.amount, tt.from, tt.to, tt.rate, got, ok, tt.want, tt.ok)
		}
	}
}

func TestClassifyUnpaid(t *testing.T) {
	fs := ClassifyUnpaid([]Booked{book(KindPayment, "pi_9", 500)}, time.Time{})
	if got := summary(fs); !slices.Equal(got, []string{"pi_9 never_paid_out needs_review"}) {
		t.Errorf("findings = %v", got)
	}
	ahead := time.Date(2026, 5, 1, 0, 5, 0, 0, time.UTC)
	at := func(id string, settled, avail time.Time) Booked {
		b := book(KindPayment, id, 500)
		b.SettledAt, b.AvailableOn = settled, avail
		return b
	}
	past := ahead.Add(-30 * 24 * time.Hour)
	fs = ClassifyUnpaid([]Booked{at("pi_at", ahead, time.Time{}), at("pi_ns", ahead.Add(1), time.Time{}), at("pi_avail", past, ahead.Add(time.Hour)),
		at("pi_past", past, past)}, ahead)
	want := []string{"pi_at never_paid_out needs_review", "pi_ns settled_in_future needs_review", "pi_avail settled_in_future needs_review",
		"pi_past never_paid_out needs_review"}
	if got := summary(fs); !slices.Equal(got, want) {
		t.Errorf("findings = %v, want %v", got, want)
	}
}
