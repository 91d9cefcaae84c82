package tieout

import (
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

// FuzzClassify feeds Classify hostile lines (NUL, invalid UTF-8, 10 KB values, huge and
// negative amounts, sums that overflow, odd rates) and checks what must hold whatever they
// are: no panic, valid decisions, every finding recorded under an id a store keeps whole, and
// a sum mismatch exactly when the lines, summed without overflow, are not the payout.
func FuzzClassify(f *testing.F) {
	f.Add("txn_1", "charge", "ch_1", int64(1000), int64(59), int64(941), "usd", int64(1000), "eur", 1.234, int64(941), int64(1000), "usd", true, uint8(0))
	f.Add("txn_\x00", "\xff", strings.Repeat("s", 10_000), int64(math.MaxInt64), int64(math.MinInt64), int64(-1), "USD\x00", int64(math.MinInt64), "", math.Inf(1), int64(math.MinInt64), int64(math.MaxInt64), "\xfe", false, uint8(3))
	f.Add(strings.Repeat("t", 10_000), "payout", "po_1", int64(-5), int64(0), int64(-5), "usd", int64(5), "usd", math.NaN(), int64(5), int64(-5), "usd", true, uint8(7))
	f.Fuzz(func(t *testing.T, id, typ, src string, amount, fee, net int64, cur string, srcAmount int64, srcCur string, rate float64,
		groupAmount, bookedAmount int64, bookedCur string, settlement bool, kindSel uint8) {
		kinds := []string{"", KindPayment, KindRefund, KindDispute, KindFee, KindGroup, KindGroupFailure, KindOther}
		kind := kinds[int(kindSel)%len(kinds)]
		m := Member{ID: id, Type: typ, Kind: kind, SourceID: src, Amount: amount, Fee: fee, Net: net, Currency: cur,
			SourceAmount: srcAmount, SourceCurrency: srcCur, ExchangeRate: rate}
		g := Group{ID: "po_1", Status: "paid", State: GroupPaid, Amount: groupAmount, Currency: "usd", Itemized: true}
		basis := Presentment
		if settlement {
			basis = Settlement
		}
		b := Booked{Kind: kind, ID: src, Amount: bookedAmount, Currency: bookedCur, Basis: basis, Fee: fee, HasFee: true}
		members := []Member{m, m, {ID: "txn_2", Type: "transfer", Kind: KindOther, SourceID: "tr", Amount: net, Net: net, Currency: "usd"}}
		fs := Policy{Fees: true}.Classify(g, members, []Booked{b})
		for _, o := range Outcomes(fs) {
			if err := o.Decision.Validate(); err != nil {
				t.Fatalf("invalid decision %+v: %v", o.Decision, err)
			}
			if o.RecordID == "" || !utf8.ValidString(o.RecordID) || strings.IndexByte(o.RecordID, 0) >= 0 || len(o.RecordID) > reconcile.MaxExternalID {
				t.Fatalf("record id %q is not kept whole", o.RecordID)
			}
		}
		// The sum as Classify must count it: the lines it keeps, the group's own line aside.
		sum := new(big.Int)
		seen := map[string]bool{}
		for _, m := range members {
			if !validID(m.ID) || !strings.EqualFold(m.Currency, g.Currency) || seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			if m.Kind == KindGroup && m.SourceID == g.ID && invalid(Policy{Fees: true}, g, m) == "" {
				continue
			}
			sum.Add(sum, big.NewInt(m.Net))
		}
		holds := sum.IsInt64() && sum.Int64() == g.Amount
		mismatch := slices.ContainsFunc(fs, func(f Finding) bool {
			return f.Decision.Kind == KindSumMismatch && f.Decision.Diffs[0].Field == "amount"
		})
		if holds == mismatch {
			t.Fatalf("sum %s, payout %d: mismatch reported %v", sum, g.Amount, mismatch)
		}
		// The payout's record says what the findings say: its lines' sum when known, held
		// exactly when no sum finding was made, every finding counted.
		got, tl := Policy{Fees: true}.classify(g, members, []Booked{b})
		rec := reconcile.StorableGroupRecord(tiedRecord(g, len(members), tl, got))
		if err := reconcile.CheckGroupRecord(rec); err != nil {
			t.Fatalf("record %+v: %v", rec, err)
		}
		if rec.ExpectedKnown && (!sum.IsInt64() || rec.Expected != sum.Int64()) {
			t.Fatalf("record says the lines sum to %d; they sum to %s", rec.Expected, sum)
		}
		anySum := slices.ContainsFunc(got, func(f Finding) bool { return f.Decision.Kind == KindSumMismatch })
		if rec.Held == anySum || rec.Findings != len(got) || rec.Unmatched > rec.Findings {
			t.Fatalf("record %+v for findings %v", rec, summary(got))
		}
	})
}
