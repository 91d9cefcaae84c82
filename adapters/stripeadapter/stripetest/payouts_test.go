package stripetest

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// payoutTxnIDs lists the ids of a payout's balance transactions, newest first.
func (f *fixture) payoutTxnIDs(t testing.TB, account, po string) []string {
	t.Helper()
	p := &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}
	if account != "" {
		p.StripeAccount = stripe.String(account)
	}
	return idsOf(f.txnsOf(t, p), func(bt *stripe.BalanceTransaction) string { return bt.ID })
}

func TestAutomaticPayoutsGroupTheAvailableBalance(t *testing.T) {
	f, now := newClockFixture(t)
	ctx := context.Background()
	// Two charges captured three days ago are available; one captured now is pending.
	*now = t0.Add(-72 * time.Hour)
	old1 := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 10000})
	old2 := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 2000})
	reID, err := f.srv.Refund(old2, 500)
	if err != nil {
		t.Fatal(err)
	}
	*now = t0
	recent := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 3000})
	chOld1, chOld2, chRecent := f.latestCharge(t, old1, ""), f.latestCharge(t, old2, ""), f.latestCharge(t, recent, "")
	txnOld1, txnOld2 := f.txnOf(t, "", "charge", chOld1), f.txnOf(t, "", "charge", chOld2)
	txnRefund := f.txnOf(t, "", "refund", reID)

	po := f.srv.AddPayout(Payout{})
	got := mustPayout(t, f.srv, po)
	wantAmount := txnOld1.Net + txnOld2.Net + txnRefund.Net // 9680 + 1912 − 500
	if got.Amount != wantAmount || got.Amount != 11092 || got.Status != stripe.PayoutStatusPending || got.Manual ||
		got.ReconciliationStatus != stripe.PayoutReconciliationStatusInProgress || got.Currency != "usd" ||
		!got.ArrivalDate.Equal(t0.Add(48*time.Hour)) {
		t.Errorf("payout %+v, want amount %d", got, wantAmount)
	}
	own := f.txnOf(t, "", "payout", po)
	if own.ID != got.BalanceTransaction || own.Amount != -wantAmount || own.ReportingCategory != "payout" || own.Status != "available" {
		t.Errorf("the payout's own transaction %+v", own)
	}
	ids := f.payoutTxnIDs(t, "", po)
	if want := []string{own.ID, txnRefund.ID, txnOld2.ID, txnOld1.ID}; !slices.Equal(ids, want) {
		t.Errorf("payout=%s lists %v, want %v", po, ids, want)
	}
	for _, id := range ids {
		if bt, _ := f.srv.BalanceTransaction(id); bt.Payout != po {
			t.Errorf("%s is linked to %q", id, bt.Payout)
		}
	}
	var sum int64
	for _, bt := range f.txnsOf(t, &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}) {
		sum += bt.Net
	}
	if sum != 0 {
		t.Errorf("a payout's transactions, its own included, net %d, want 0", sum)
	}

	t.Run("the next payout takes what became available since, and nothing twice", func(t *testing.T) {
		if _, ok := f.srv.BalanceTransaction(f.txnOf(t, "", "charge", chRecent).ID); !ok {
			t.Fatal("no charge transaction")
		}
		*now = t0.Add(48 * time.Hour)
		next := f.srv.AddPayout(Payout{})
		if got := f.payoutTxnIDs(t, "", next); len(got) != 2 || got[1] != f.txnOf(t, "", "charge", chRecent).ID {
			t.Errorf("next payout lists %v", got)
		}
		if p := mustPayout(t, f.srv, next); p.Amount != 3000-117 {
			t.Errorf("next payout's amount %d", p.Amount)
		}
		defer func() {
			if recover() == nil {
				t.Error("an automatic payout with nothing to pay out did not panic")
			}
		}()
		f.srv.AddPayout(Payout{})
	})
	t.Run("GET /v1/payouts/{id} and its expansions", func(t *testing.T) {
		p := &stripe.PayoutRetrieveParams{}
		p.AddExpand("balance_transaction")
		p.AddExpand("destination")
		got, err := f.sc.V1Payouts.Retrieve(ctx, po, p)
		if err != nil || got.ID != po || !got.Automatic || got.Amount != wantAmount || got.BalanceTransaction == nil ||
			got.BalanceTransaction.Amount != -wantAmount || got.ReconciliationStatus != "in_progress" || got.FailureBalanceTransaction != nil {
			t.Errorf("got %+v, %v", got, err)
		}
		se := stripeError(t, f.call("/v1/payouts/po_nope", nil, "", &stripe.Payout{}), http.StatusNotFound)
		if se.Msg != "No such payout: 'po_nope'" {
			t.Errorf("message %q", se.Msg)
		}
	})
}

func TestManualPayoutsCannotBeItemized(t *testing.T) {
	f := newFixture(t)
	f.charged(t, "", 10000, "usd")
	po := f.srv.AddPayout(Payout{Manual: true, Amount: 4000})
	got := mustPayout(t, f.srv, po)
	if !got.Manual || got.ReconciliationStatus != stripe.PayoutReconciliationStatusNotApplicable || got.Amount != 4000 {
		t.Errorf("payout %+v", got)
	}
	err := f.call("/v1/balance_transactions", &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}, "", &stripe.BalanceTransactionList{})
	se := stripeError(t, err, http.StatusBadRequest)
	if se.Type != stripe.ErrorTypeInvalidRequest || se.Param != "payout" ||
		se.Msg != "Balance transaction history can only be filtered on automatic transfers, not manual." {
		t.Errorf("got %+v", se)
	}
	if bt := f.txnOf(t, "", "payout", po); bt.Amount != -4000 {
		t.Errorf("the manual payout's transaction %+v", bt)
	}
	// The charge it did not itemize is still there for an automatic payout to take.
	if bt := f.txnsOf(t, &stripe.BalanceTransactionListParams{Type: stripe.String("charge")}); len(bt) != 1 {
		t.Fatalf("%d charges", len(bt))
	} else if b, _ := f.srv.BalanceTransaction(bt[0].ID); b.Payout != "" {
		t.Errorf("a manual payout took %s", bt[0].ID)
	}
	for name, p := range map[string]Payout{"no amount": {Manual: true}, "a negative amount": {Manual: true, Amount: -1}, "added failed": {Manual: true, Amount: 1, Status: stripe.PayoutStatusFailed}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f.srv.AddPayout(p)
		}()
	}
}

func TestPayoutStatusesAndEvents(t *testing.T) {
	f, now := newClockFixture(t)
	f.srv.AddBalanceTransaction(BalanceTransaction{Type: "charge", Amount: 5000, Created: t0.Add(-time.Hour)})
	po := f.srv.AddPayout(Payout{})

	t.Run("paid is not final: a payout can fail after it showed paid", func(t *testing.T) {
		*now = t0.Add(time.Hour)
		if err := f.srv.SetPayoutStatus(po, stripe.PayoutStatusInTransit); err != nil {
			t.Fatal(err)
		}
		*now = t0.Add(2 * time.Hour)
		if err := f.srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
			t.Fatal(err)
		}
		if p := mustPayout(t, f.srv, po); p.ReconciliationStatus != stripe.PayoutReconciliationStatusCompleted {
			t.Errorf("a paid automatic payout's reconciliation is %s", p.ReconciliationStatus)
		}
		*now = t0.Add(72 * time.Hour)
		if err := f.srv.FailPayout(po, stripe.PayoutFailureCodeAccountClosed, "The bank account has been closed."); err != nil {
			t.Fatal(err)
		}
		got, err := f.sc.V1Payouts.Retrieve(context.Background(), po, nil)
		if err != nil || got.Status != "failed" || got.FailureCode != "account_closed" || got.FailureMessage != "The bank account has been closed." ||
			got.FailureBalanceTransaction == nil || got.ReconciliationStatus != "completed" {
			t.Fatalf("got %+v, %v", got, err)
		}
		back := f.txnOf(t, "", "payout_failure", po)
		if back.ID != got.FailureBalanceTransaction.ID || back.Amount != 5000 || back.ReportingCategory != "payout_reversal" {
			t.Errorf("payout_failure %+v", back)
		}
		// The money is back in the balance: the next automatic payout pays it out again.
		again := f.srv.AddPayout(Payout{})
		if ids := f.payoutTxnIDs(t, "", again); len(ids) != 2 || ids[1] != back.ID {
			t.Errorf("the next payout lists %v", ids)
		}
		if ids := f.payoutTxnIDs(t, "", po); len(ids) != 2 {
			t.Errorf("the failed payout keeps its transactions, got %v", ids)
		}
		events := f.listEvents(t, &stripe.EventListParams{Type: stripe.String("payout.*")})
		slices.Reverse(events)
		want := []string{"payout.created", "payout.updated", "payout.updated", "payout.paid", "payout.reconciliation_completed",
			"payout.updated", "payout.failed", "payout.created"}
		if got := eventTypesOf(events); !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		var p stripe.Payout
		if err := p.UnmarshalJSON(events[6].Data.Raw); err != nil || p.ID != po || p.Status != "failed" || p.FailureCode != "account_closed" {
			t.Errorf("payout.failed holds %+v, %v", p, err)
		}
	})
	t.Run("failed and canceled are final, and Stripe's moves only", func(t *testing.T) {
		fresh := f.srv.AddPayout(Payout{Manual: true, Amount: 10})
		for _, err := range []error{
			f.srv.FailPayout(po, "", ""),
			f.srv.SetPayoutStatus(po, stripe.PayoutStatusPaid),
			f.srv.CancelPayout(po),
			f.srv.SetPayoutStatus(fresh, stripe.PayoutStatusPending),
			f.srv.SetPayoutStatus(fresh, stripe.PayoutStatusFailed),
			f.srv.SetPayoutStatus("po_nope", stripe.PayoutStatusPaid),
		} {
			if err == nil {
				t.Error("a move Stripe does not make was made")
			}
		}
		if err := f.srv.SetPayoutStatus(fresh, stripe.PayoutStatusInTransit); err != nil {
			t.Fatal(err)
		}
		if err := f.srv.CancelPayout(fresh); err == nil {
			t.Error("an in-transit payout was canceled")
		}
		if err := f.srv.SetPayoutStatus(fresh, stripe.PayoutStatusPaid); err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SetPayoutStatus(fresh, stripe.PayoutStatusInTransit); err == nil {
			t.Error("a paid payout went back in transit")
		}
		if p := mustPayout(t, f.srv, fresh); p.ReconciliationStatus != stripe.PayoutReconciliationStatusNotApplicable {
			t.Errorf("a manual payout's reconciliation is %s", p.ReconciliationStatus)
		}
	})
	t.Run("a pending payout can be canceled, and its money comes back", func(t *testing.T) {
		pending := f.srv.AddPayout(Payout{Manual: true, Amount: 77})
		if err := f.srv.CancelPayout(pending); err != nil {
			t.Fatal(err)
		}
		p := mustPayout(t, f.srv, pending)
		back := f.txnOf(t, "", "payout_cancel", pending)
		if p.Status != stripe.PayoutStatusCanceled || p.FailureBalanceTransaction != back.ID || back.Amount != 77 {
			t.Errorf("payout %+v, transaction %+v", p, back)
		}
		if got := eventTypesOf(f.eventsOf(t, "payout.canceled")); len(got) != 1 {
			t.Errorf("events %v", got)
		}
	})
}

func TestPayoutListFilters(t *testing.T) {
	f := newFixture(t)
	day := int64(24 * 60 * 60)
	a := f.srv.AddPayout(Payout{Manual: true, Amount: 1, Created: t0.Add(-72 * time.Hour)})
	b := f.srv.AddPayout(Payout{Manual: true, Amount: 2, Created: t0.Add(-48 * time.Hour), ArrivalDate: t0})
	c := f.srv.AddPayout(Payout{Manual: true, Amount: 3, Created: t0.Add(-24 * time.Hour), Status: stripe.PayoutStatusPaid})
	list := func(p *stripe.PayoutListParams) []string {
		var ids []string
		for po, err := range f.sc.V1Payouts.List(context.Background(), p) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, po.ID)
		}
		return ids
	}
	for name, tc := range map[string]struct {
		p    *stripe.PayoutListParams
		want []string
	}{
		"all, newest first": {&stripe.PayoutListParams{}, []string{c, b, a}},
		"by status":         {&stripe.PayoutListParams{Status: stripe.String("paid")}, []string{c}},
		"by status pending": {&stripe.PayoutListParams{Status: stripe.String("pending")}, []string{b, a}},
		"by arrival date":   {&stripe.PayoutListParams{ArrivalDate: stripe.Int64(t0.Unix())}, []string{b}},
		"by arrival range": {&stripe.PayoutListParams{ArrivalDateRange: &stripe.RangeQueryParams{
			GreaterThan: t0.Unix() - day}}, []string{c, b}},
		"by created": {&stripe.PayoutListParams{CreatedRange: &stripe.RangeQueryParams{LesserThanOrEqual: t0.Unix() - 2*day}}, []string{b, a}},
		"by destination, which the fake's payouts lack": {&stripe.PayoutListParams{Destination: stripe.String("ba_1")}, nil},
	} {
		if got := list(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
	for _, path := range []string{"/v1/payouts?status=bogus", "/v1/payouts?arrival_date[gt]=x", "/v1/payouts?payout=po_1"} {
		if res, body := rawGet(t, f.srv, path, f.srv.Key()); res.StatusCode != 400 {
			t.Errorf("%s: %d %s", path, res.StatusCode, body)
		}
	}
}

func TestPayoutsAndBalanceTransactionsPerConnectAccount(t *testing.T) {
	f := newFixture(t)
	f.srv.AddAccount(Account{ID: "acct_B", ChargesEnabled: true})
	pi := f.charged(t, "acct_A", 2000, "usd")
	chA := f.latestCharge(t, pi, "acct_A")
	f.srv.AddBalanceTransaction(BalanceTransaction{Account: "acct_A", Type: "charge", Amount: 100, Created: t0.Add(-time.Hour)})
	platformTxn := f.srv.AddBalanceTransaction(BalanceTransaction{Type: "charge", Amount: 100, Created: t0.Add(-time.Hour)})
	poA := f.srv.AddPayout(Payout{Account: "acct_A", Created: t0.Add(48 * time.Hour)})
	poPlatform := f.srv.AddPayout(Payout{})

	if ids := f.payoutTxnIDs(t, "acct_A", poA); len(ids) != 3 {
		t.Errorf("acct_A's payout lists %v, want its charge, the planted transaction and its own", ids)
	}
	if ids := f.payoutTxnIDs(t, "", poPlatform); len(ids) != 2 || ids[1] != platformTxn {
		t.Errorf("the platform's payout lists %v", ids)
	}
	for _, tc := range []struct {
		name, path, account string
		status              int
	}{
		{"acct_A's payout from the platform", "/v1/payouts/" + poA, "", 404},
		{"acct_A's payout from acct_B", "/v1/payouts/" + poA, "acct_B", 404},
		{"the platform's payout from acct_A", "/v1/payouts/" + poPlatform, "acct_A", 404},
		{"acct_A's transaction from the platform", "/v1/balance_transactions/" + mustPayout(t, f.srv, poA).BalanceTransaction, "", 404},
		{"acct_A's charge listed from acct_B", "/v1/charges/" + chA, "acct_B", 404},
	} {
		stripeError(t, f.call(tc.path, nil, tc.account, &stripe.Payout{}), tc.status)
	}
	err := f.call("/v1/balance_transactions", &stripe.BalanceTransactionListParams{Payout: stripe.String(poA)}, "acct_B", &stripe.BalanceTransactionList{})
	if se := stripeError(t, err, http.StatusBadRequest); !strings.Contains(se.Msg, "No such payout") {
		t.Errorf("another account's payout filter: %v", se)
	}
	for _, account := range []string{"", "acct_B"} {
		p := &stripe.PayoutListParams{}
		if account != "" {
			p.StripeAccount = stripe.String(account)
		}
		for po, err := range f.sc.V1Payouts.List(context.Background(), p) {
			if err != nil || po.ID == poA {
				t.Errorf("account %q lists %v, %v", account, po, err)
			}
		}
		if account == "acct_B" {
			if got := f.txnsOf(t, &stripe.BalanceTransactionListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String(account)}}); len(got) != 0 {
				t.Errorf("acct_B sees %d transactions", len(got))
			}
		}
	}
	events := &stripe.EventListParams{Type: stripe.String("payout.created")}
	events.StripeAccount = stripe.String("acct_A")
	if got := f.listEvents(t, events); len(got) != 1 || got[0].Account != "acct_A" {
		t.Errorf("acct_A's payout events: %+v", got)
	}
	if got := f.eventsOf(t, "payout.created"); len(got) != 1 {
		t.Errorf("the platform sees %d payout.created events, want its own one", len(got))
	}
	if n := f.srv.AccountRequests(ListBalanceTransactions, "acct_A"); n != 1 {
		t.Errorf("%d balance transaction lists counted for acct_A, want 1", n)
	}
}

func TestNewRoutesTakeFaults(t *testing.T) {
	f := newFixture(t)
	po := f.srv.AddPayout(Payout{Manual: true, Amount: 5})
	f.srv.Inject(ListBalanceTransactions, Fault{Status: 429, Times: 1})
	f.srv.Inject(RetrievePayout, Fault{Status: 500, ID: po, Times: 1})
	f.srv.Inject(ListCharges, Fault{Status: 503, Account: "acct_X", Times: 1})
	f.srv.AddAccount(Account{ID: "acct_X"})
	stripeError(t, f.call("/v1/balance_transactions", nil, "", &stripe.BalanceTransactionList{}), 429)
	stripeError(t, f.call("/v1/payouts/"+po, nil, "", &stripe.Payout{}), 500)
	stripeError(t, f.call("/v1/charges", nil, "acct_X", &stripe.ChargeList{}), 503)
	// Each fault was used up: the same requests answer now.
	for path, out := range map[string]stripe.LastResponseSetter{
		"/v1/balance_transactions": &stripe.BalanceTransactionList{}, "/v1/payouts/" + po: &stripe.Payout{},
		"/v1/payouts": &stripe.PayoutList{},
	} {
		if err := f.call(path, nil, "", out); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if err := f.call("/v1/charges", nil, "acct_X", &stripe.ChargeList{}); err != nil {
		t.Error(err)
	}
	for route, want := range map[Route]int{ListBalanceTransactions: 2, RetrievePayout: 2, ListCharges: 2, ListPayouts: 1, RetrieveBalanceTransaction: 0} {
		if got := f.srv.Requests(route); got != want {
			t.Errorf("%s counted %d, want %d", route, got, want)
		}
	}
}
