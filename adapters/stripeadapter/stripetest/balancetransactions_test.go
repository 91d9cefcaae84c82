package stripetest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// txnsOf lists balance transactions through stripe-go's iterator.
func (f *fixture) txnsOf(t testing.TB, params *stripe.BalanceTransactionListParams) []*stripe.BalanceTransaction {
	t.Helper()
	var out []*stripe.BalanceTransaction
	for bt, err := range f.sc.V1BalanceTransactions.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing balance transactions: %v", err)
		}
		out = append(out, bt)
	}
	return out
}

// txnOf returns the one transaction of the type with the source, read over HTTP.
func (f *fixture) txnOf(t testing.TB, account, typ, source string) *stripe.BalanceTransaction {
	t.Helper()
	p := &stripe.BalanceTransactionListParams{Type: stripe.String(typ), Source: stripe.String(source)}
	if account != "" {
		p.StripeAccount = stripe.String(account)
	}
	got := f.txnsOf(t, p)
	if len(got) != 1 {
		t.Fatalf("%d %s transactions of %s, want 1", len(got), typ, source)
	}
	return got[0]
}

func TestBalanceTransactionsFollowTheMoney(t *testing.T) {
	f, now := newClockFixture(t)
	ctx := context.Background()
	pi := f.charged(t, "", 10000, "usd")
	chID := f.latestCharge(t, pi, "")

	t.Run("a captured charge settles, pending for two days, less Stripe's fee", func(t *testing.T) {
		bt := f.txnOf(t, "", "charge", chID)
		want := stripe.BalanceTransaction{
			Amount: 10000, Fee: 320, Net: 9680, Currency: "usd", Type: "charge", ReportingCategory: "charge",
			Status: "pending", Created: t0.Add(-time.Hour).Unix(), AvailableOn: t0.Add(47 * time.Hour).Unix(), BalanceType: "payments",
		}
		if bt.Amount != want.Amount || bt.Fee != want.Fee || bt.Net != want.Net || bt.Currency != want.Currency ||
			bt.Type != want.Type || bt.ReportingCategory != want.ReportingCategory || bt.Status != want.Status ||
			bt.Created != want.Created || bt.AvailableOn != want.AvailableOn || bt.BalanceType != want.BalanceType ||
			bt.ExchangeRate != 0 || bt.Source.ID != chID || bt.Object != "balance_transaction" {
			t.Errorf("got %+v", bt)
		}
		if len(bt.FeeDetails) != 1 || bt.FeeDetails[0].Amount != 320 || bt.FeeDetails[0].Type != "stripe_fee" {
			t.Errorf("fee details %+v", bt.FeeDetails)
		}
		if ch := f.retrieveCharge(t, chID, ""); ch.BalanceTransaction == nil || ch.BalanceTransaction.ID != bt.ID {
			t.Errorf("the charge's balance_transaction is %+v, want %s", ch.BalanceTransaction, bt.ID)
		}
		*now = t0.Add(47 * time.Hour) // the charge was captured at t0-1h
		if got, err := f.sc.V1BalanceTransactions.Retrieve(ctx, bt.ID, nil); err != nil || got.Status != "available" {
			t.Errorf("after two days: %+v, %v", got, err)
		}
		*now = t0
	})
	t.Run("a refund takes money out, and gives it back when it fails", func(t *testing.T) {
		reID, err := f.srv.Refund(pi, 2500)
		if err != nil {
			t.Fatal(err)
		}
		out := f.txnOf(t, "", "refund", reID)
		if out.Amount != -2500 || out.Fee != 0 || out.Net != -2500 || out.ReportingCategory != "refund" || out.Status != "available" {
			t.Errorf("refund transaction %+v", out)
		}
		if err := f.srv.SetRefundStatus(reID, stripe.RefundStatusFailed, ""); err != nil {
			t.Fatal(err)
		}
		back := f.txnOf(t, "", "refund_failure", reID)
		if back.Amount != 2500 || back.Net != 2500 || back.ReportingCategory != "refund_failure" {
			t.Errorf("refund_failure transaction %+v", back)
		}
		r, err := f.sc.V1Refunds.Retrieve(ctx, reID, nil)
		if err != nil || r.BalanceTransaction == nil || r.BalanceTransaction.ID != out.ID ||
			r.FailureBalanceTransaction == nil || r.FailureBalanceTransaction.ID != back.ID {
			t.Errorf("refund %+v, %v", r, err)
		}
	})
	t.Run("a chargeback withdraws the amount and the dispute fee, and a won one reinstates the amount", func(t *testing.T) {
		dpID, err := f.srv.Dispute(pi, 4000, stripe.DisputeStatusNeedsResponse, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SetDisputeStatus(dpID, stripe.DisputeStatusWon); err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SetDisputeStatus(dpID, stripe.DisputeStatusWon); err != nil { // again: no more money
			t.Fatal(err)
		}
		got := f.txnsOf(t, &stripe.BalanceTransactionListParams{Source: stripe.String(dpID)})
		if len(got) != 2 {
			t.Fatalf("%d transactions of the dispute, want 2", len(got))
		}
		back, out := got[0], got[1] // newest first
		if out.Type != "adjustment" || out.Amount != -4000 || out.Fee != 1500 || out.Net != -5500 || out.ReportingCategory != "dispute" {
			t.Errorf("funds withdrawn: %+v", out)
		}
		if back.Type != "adjustment" || back.Amount != 4000 || back.Fee != 0 || back.ReportingCategory != "dispute_reversal" {
			t.Errorf("funds reinstated: %+v", back)
		}
		d, err := f.sc.V1Disputes.Retrieve(ctx, dpID, nil)
		if err != nil || len(d.BalanceTransactions) != 2 || d.BalanceTransactions[0].ID != out.ID || d.BalanceTransactions[1].ID != back.ID {
			t.Errorf("dispute's balance_transactions %+v, %v", d.BalanceTransactions, err)
		}
	})
	t.Run("an inquiry moves no money until it escalates", func(t *testing.T) {
		pi2 := f.charged(t, "", 3000, "usd")
		dpID, err := f.srv.Dispute(pi2, 0, stripe.DisputeStatusWarningNeedsResponse, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.txnsOf(t, &stripe.BalanceTransactionListParams{Source: stripe.String(dpID)}); len(got) != 0 {
			t.Errorf("an inquiry moved money: %+v", got)
		}
		if err := f.srv.SetDisputeStatus(dpID, stripe.DisputeStatusNeedsResponse); err != nil {
			t.Fatal(err)
		}
		if bt := f.txnOf(t, "", "adjustment", dpID); bt.Amount != -3000 {
			t.Errorf("escalated: %+v", bt)
		}
	})
	t.Run("a bank debit that fails after succeeding is refunded by payment_failure_refund", func(t *testing.T) {
		pi3 := f.charged(t, "", 5000, "usd")
		ch3 := f.latestCharge(t, pi3, "")
		if err := f.srv.FailPayment(pi3, ""); err != nil {
			t.Fatal(err)
		}
		bt := f.txnOf(t, "", "payment_failure_refund", ch3)
		if bt.Amount != -5000 || bt.Fee != 0 || bt.ReportingCategory != "charge_failure" {
			t.Errorf("got %+v", bt)
		}
		ch := f.retrieveCharge(t, ch3, "")
		if ch.Status != "failed" || ch.FailureCode != "debit_not_authorized" || ch.FailureBalanceTransaction == nil || ch.FailureBalanceTransaction.ID != bt.ID {
			t.Errorf("charge %s %s", ch.Status, ch.FailureCode)
		}
		if got := eventTypesOf(f.eventsOf(t, "*failed"))[:2]; !slices.Equal(got, []string{"payment_intent.payment_failed", "charge.failed"}) {
			t.Errorf("events %v", got)
		}
		if err := f.srv.FailPayment(pi3, ""); err == nil {
			t.Error("a payment failed twice")
		}
	})
}

func TestBalanceTransactionsSettleInTheAccountsCurrency(t *testing.T) {
	now := t0
	srv := NewServer(Options{Now: func() time.Time { return now }, SettlementCurrency: "USD",
		Fee: func(amount int64, currency string) int64 { return amount / 100 }})
	t.Cleanup(srv.Close)
	sc, b := newClient(srv, srv.Key(), nil)
	f := &fixture{srv: srv, sc: sc, backend: b}
	srv.SetExchangeRate("eur", "usd", 1.234)
	srv.AddAccount(Account{ID: "acct_EU", DefaultCurrency: "eur", ChargesEnabled: true})

	pi := f.charged(t, "", 1000, "eur")
	bt := f.txnOf(t, "", "charge", f.latestCharge(t, pi, ""))
	if bt.Currency != "usd" || bt.Amount != 1234 || bt.ExchangeRate != 1.234 || bt.Fee != 12 || bt.Net != 1222 {
		t.Errorf("a EUR charge on a USD account: %+v", bt)
	}
	euro := f.charged(t, "acct_EU", 1000, "eur")
	bt = f.txnOf(t, "acct_EU", "charge", f.latestCharge(t, euro, "acct_EU"))
	if bt.Currency != "eur" || bt.Amount != 1000 || bt.ExchangeRate != 0 {
		t.Errorf("a EUR charge on a EUR account: %+v", bt)
	}
	gbp := f.charged(t, "", 1000, "gbp")
	bt = f.txnOf(t, "", "charge", f.latestCharge(t, gbp, ""))
	if bt.Currency != "usd" || bt.Amount != 1000 || bt.ExchangeRate != 1 {
		t.Errorf("a pair without a rate converts at 1: %+v", bt)
	}
	if _, body := rawGet(t, srv, "/v1/accounts/acct_EU", srv.Key()); !strings.Contains(body, `"default_currency":"eur"`) {
		t.Errorf("account %s", body)
	}
}

func TestBalanceTransactionListFiltersAndPages(t *testing.T) {
	f := newFixture(t)
	const n = 250
	bts := make([]BalanceTransaction, n)
	for i := range bts {
		bts[i] = BalanceTransaction{Type: "charge", Amount: int64(100 + i), Created: t0.Add(time.Duration(i-n) * time.Hour)}
	}
	bts[7].Type, bts[7].Source, bts[7].Currency = "mystery_type", "ch_planted", "eur"
	ids := f.srv.AddBalanceTransactions(bts)
	po := f.srv.AddPayout(Payout{Created: t0})

	t.Run("a payout's 250 transactions and its own, newest first, in three pages of 100", func(t *testing.T) {
		f.srv.ResetLog()
		p := &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}
		p.Limit = stripe.Int64(100)
		got := f.txnsOf(t, p)
		// The payout's own transaction (created with it, at t0) is the newest.
		want := append([]string{mustPayout(t, f.srv, po).BalanceTransaction}, reversed(slices.Delete(slices.Clone(ids), 7, 8))...)
		if gotIDs := idsOf(got, func(bt *stripe.BalanceTransaction) string { return bt.ID }); !slices.Equal(gotIDs, want) {
			t.Fatalf("got %d transactions, want the %d usd ones and the payout's", len(gotIDs), len(want))
		}
		if calls := f.srv.Requests(ListBalanceTransactions); calls != 3 {
			t.Errorf("%d calls, want 3", calls)
		}
	})
	t.Run("ending_before pages back towards the newest", func(t *testing.T) {
		list := &stripe.BalanceTransactionList{}
		p := &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}
		p.Limit, p.EndingBefore = stripe.Int64(3), stripe.String(ids[100])
		if err := f.call("/v1/balance_transactions", p, "", list); err != nil {
			t.Fatal(err)
		}
		got := idsOf(list.Data, func(bt *stripe.BalanceTransaction) string { return bt.ID })
		if !slices.Equal(got, []string{ids[103], ids[102], ids[101]}) || !list.HasMore {
			t.Errorf("got %v (has_more %v)", got, list.HasMore)
		}
	})
	t.Run("more than 100 a page is refused", func(t *testing.T) {
		p := &stripe.BalanceTransactionListParams{}
		p.Limit = stripe.Int64(101)
		stripeError(t, f.call("/v1/balance_transactions", p, "", &stripe.BalanceTransactionList{}), http.StatusBadRequest)
	})
	t.Run("by type, source, currency and created", func(t *testing.T) {
		for name, tc := range map[string]struct {
			p    *stripe.BalanceTransactionListParams
			want []string
		}{
			"a type no policy knows": {&stripe.BalanceTransactionListParams{Type: stripe.String("mystery_type")}, []string{ids[7]}},
			"a source":               {&stripe.BalanceTransactionListParams{Source: stripe.String("ch_planted")}, []string{ids[7]}},
			"a currency":             {&stripe.BalanceTransactionListParams{Currency: stripe.String("eur")}, []string{ids[7]}},
			"created in a window": {&stripe.BalanceTransactionListParams{CreatedRange: &stripe.RangeQueryParams{
				GreaterThanOrEqual: t0.Add(-2 * time.Hour).Unix(), LesserThan: t0.Unix()}}, []string{ids[249], ids[248]}},
		} {
			got := idsOf(f.txnsOf(t, tc.p), func(bt *stripe.BalanceTransaction) string { return bt.ID })
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: got %v, want %v", name, got, tc.want)
			}
		}
	})
	t.Run("data.source expands to the object the fake has, and stays an id otherwise", func(t *testing.T) {
		pi := f.charged(t, "", 700, "usd")
		reID, err := f.srv.Refund(pi, 100)
		if err != nil {
			t.Fatal(err)
		}
		p := &stripe.BalanceTransactionListParams{}
		p.AddExpand("data.source")
		p.Limit = stripe.Int64(100)
		list := &stripe.BalanceTransactionList{}
		if err := f.call("/v1/balance_transactions", p, "", list); err != nil {
			t.Fatal(err)
		}
		bySource := map[string]*stripe.BalanceTransactionSource{}
		for _, bt := range list.Data {
			if bt.Source != nil {
				bySource[bt.Source.ID] = bt.Source
			}
		}
		chID := f.latestCharge(t, pi, "")
		if s := bySource[chID]; s == nil || s.Type != "charge" || s.Charge == nil || s.Charge.PaymentIntent.ID != pi {
			t.Errorf("charge source %+v", s)
		}
		if s := bySource[reID]; s == nil || s.Refund == nil || s.Refund.Amount != 100 {
			t.Errorf("refund source %+v", s)
		}
		if s := bySource[po]; s == nil || s.Payout == nil || !s.Payout.Automatic {
			t.Errorf("payout source %+v", s)
		}
		retrieve := &stripe.BalanceTransactionRetrieveParams{}
		retrieve.AddExpand("source")
		if bt, err := f.sc.V1BalanceTransactions.Retrieve(context.Background(), ids[7], retrieve); err != nil || bt.Source.ID != "ch_planted" || bt.Source.Charge != nil {
			t.Errorf("a source the fake does not have: %+v, %v", bt, err)
		}
		bad := &stripe.BalanceTransactionListParams{}
		bad.AddExpand("source")
		stripeError(t, f.call("/v1/balance_transactions", bad, "", &stripe.BalanceTransactionList{}), http.StatusBadRequest)
	})
	t.Run("an unknown id is Stripe's 404", func(t *testing.T) {
		se := stripeError(t, f.call("/v1/balance_transactions/txn_nope", nil, "", &stripe.BalanceTransaction{}), http.StatusNotFound)
		if se.Msg != "No such balance_transaction: 'txn_nope'" {
			t.Errorf("message %q", se.Msg)
		}
	})
}

func mustPayout(t testing.TB, srv *Server, id string) Payout {
	t.Helper()
	po, ok := srv.Payout(id)
	if !ok {
		t.Fatalf("no payout %s", id)
	}
	return po
}

func TestAddBalanceTransactionPlantsDrift(t *testing.T) {
	f := newFixture(t)
	po := f.srv.AddPayout(Payout{Amount: 500, Created: t0.Add(-time.Hour), Currency: "usd"})
	planted := f.srv.AddBalanceTransaction(BalanceTransaction{Type: "mystery_type", Amount: 42, Payout: po, Created: t0.Add(-time.Hour)})
	if got := mustPayout(t, f.srv, po); got.Amount != 500 {
		t.Errorf("planting changed the payout's amount: %d", got.Amount)
	}
	bt, ok := f.srv.BalanceTransaction(planted)
	if !ok || bt.Payout != po || bt.ReportingCategory != "other_adjustment" || bt.Net != 42 || bt.Status != "available" || bt.Currency != "usd" {
		t.Errorf("read back %+v", bt)
	}
	got := f.txnsOf(t, &stripe.BalanceTransactionListParams{Payout: stripe.String(po)})
	var sum int64
	for _, bt := range got {
		sum += bt.Net
	}
	if len(got) != 2 || sum != 42-500 {
		t.Errorf("the payout lists %d transactions netting %d; want its own and the planted one, 42 − 500", len(got), sum)
	}
	for name, bt := range map[string]BalanceTransaction{
		"no type":                  {},
		"a net":                    {Type: "charge", Net: 1},
		"a status":                 {Type: "charge", Status: "available"},
		"an id of another shape":   {ID: "ch_1", Type: "charge"},
		"a used id":                {ID: planted, Type: "charge"},
		"an unknown payout":        {Type: "charge", Payout: "po_nope"},
		"another account's payout": {Type: "charge", Payout: po, Account: "acct_other"},
		"a negative rate":          {Type: "charge", ExchangeRate: -1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f.srv.AddBalanceTransaction(bt)
		}()
	}
}

// Values Stripe stores as given (descriptions, metadata) come back JSON-escaped, whatever bytes
// they hold.
func TestHostileValuesAreServedEscaped(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("é\"\\<", 2600) // over 10 KB
	for name, v := range map[string]string{
		"a NUL":              "before\x00after",
		"control characters": "\x01\x1f\n\r\t",
		"invalid UTF-8":      "bad\xff\xfebytes",
		"10 KB":              big,
	} {
		t.Run(name, func(t *testing.T) {
			txnID := f.srv.AddBalanceTransaction(BalanceTransaction{Type: "adjustment", Amount: 1, Description: v})
			poID := f.srv.AddPayout(Payout{Manual: true, Amount: 1, Description: v, Metadata: map[string]string{v: v}})
			for _, path := range []string{"/v1/balance_transactions/" + txnID, "/v1/payouts/" + poID} {
				res, body := rawGet(t, f.srv, path, f.srv.Key())
				if res.StatusCode != 200 || !json.Valid([]byte(body)) {
					t.Fatalf("%s: %d, valid JSON %v", path, res.StatusCode, json.Valid([]byte(body)))
				}
			}
			var sb strings.Builder
			for _, r := range v { // each invalid byte becomes U+FFFD, as encoding/json does
				sb.WriteRune(r)
			}
			want := sb.String()
			bt, err := f.sc.V1BalanceTransactions.Retrieve(context.Background(), txnID, nil)
			if err != nil || bt.Description != want {
				t.Errorf("description %q, %v", bt.Description, err)
			}
			po, err := f.sc.V1Payouts.Retrieve(context.Background(), poID, nil)
			if err != nil || po.Description != want || po.Metadata[want] != want {
				t.Errorf("payout %q %v, %v", po.Description, po.Metadata, err)
			}
		})
	}
}
