package main

// plant.go is the demo's machinery: it makes Stripe's side (stripetest, a fake Stripe API
// served over HTTP in-process), books the host's side through the writer, and remembers what
// the tie-out must find. A host has none of it.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// clock is the fake Stripe's and the lanes' clock: the story spans ten days in a moment.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// t0 is when the story's first payments are made.
var t0 = time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)

// planted is one finding the run must find: its record (a balance transaction txn_..., a
// payout po_..., or a booked id) and kind, with the story that made it.
type planted struct {
	record, kind, story string
}

// world is the fake Stripe account, the writer booking the host's side, and what was planted.
type world struct {
	ctx  context.Context
	clk  *clock
	srv  *stripetest.Server
	book writer
	want []planted
	err  error // the first error; each step after it does nothing
	// p1 is paid, then fails; p2 carries p1's failure and a line that breaks its sum; p3 is
	// manual; p4 stays pending until the story pays it.
	p1, p2, p3, p4 string
	// carried are the PaymentIntents booked since the last payout: the next one carries them.
	carried []string
}

// newWorld starts the fake Stripe, its EUR settling in USD at 1.1.
func newWorld(ctx context.Context, book writer) *world {
	clk := &clock{t: t0}
	srv := stripetest.NewServer(stripetest.Options{Now: clk.now})
	srv.SetExchangeRate("eur", "usd", 1.1)
	return &world{ctx: ctx, clk: clk, srv: srv, book: book}
}

func (w *world) fail(err error) {
	if w.err == nil && err != nil {
		w.err = err
	}
}

// pi makes a succeeded payment at Stripe.
func (w *world) pi(amount int64, currency string) string {
	id := w.srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: amount, Currency: currency})
	w.carried = append(w.carried, id)
	return id
}

// payment makes a payment at Stripe and books it as charged.
func (w *world) payment(amount int64, currency string) string {
	id := w.pi(amount, currency)
	if w.err == nil {
		w.fail(w.book.bookPayment(w.ctx, id, amount, currency, w.clk.now()))
	}
	return id
}

// payout makes an automatic payout of everything available, paid unless pending, and records
// it as the host learns of it.
func (w *world) payout(status stripe.PayoutStatus) string {
	po := w.srv.AddPayout(stripetest.Payout{})
	if status != stripe.PayoutStatusPending {
		w.fail(w.srv.SetPayoutStatus(po, status))
	}
	w.recordPayout(po, string(status))
	w.carried = nil
	return po
}

func (w *world) recordPayout(po, status string) {
	p, _ := w.srv.Payout(po)
	if w.err == nil {
		w.fail(w.book.recordPayout(w.ctx, po, p.Amount, p.Currency, status, w.carried...))
	}
}

// line is a planted line: the balance transaction of a payout that match picks.
type line struct {
	match func(bt *stripe.BalanceTransaction) bool
	kind  string
	story string
}

// plantFirst plants everything the first payout, p1, carries, and pays p1.
func (w *world) plantFirst() {
	srv, clk := w.srv, w.clk
	var lines []line
	plant := func(match func(*stripe.BalanceTransaction) bool, kind, story string) {
		lines = append(lines, line{match, kind, story})
	}
	// Booked right: USD; EUR booked as charged; EUR booked (an invoice) as the USD it settled
	// as, through the exchange rate 1.1. None is a finding.
	w.payment(10000, "usd")
	w.payment(1000, "eur")
	inv := w.pi(2000, "eur")
	w.fail(w.book.bookInvoice(w.ctx, inv, 2200, "usd", clk.now()))
	// An amount that differs as charged, and one that differs as settled.
	bad := w.pi(5000, "usd")
	w.fail(w.book.bookPayment(w.ctx, bad, 4000, "usd", clk.now()))
	plant(chargeOf("charge", bad), tieout.KindAmountDiffers, "USD 50.00 charged, USD 40.00 booked")
	badSettled := w.pi(3000, "eur")
	w.fail(w.book.bookInvoice(w.ctx, badSettled, 3000, "usd", clk.now()))
	plant(chargeOf("charge", badSettled), tieout.KindAmountDiffers, "EUR 30.00 settled as USD 33.00, invoice booked USD 30.00")
	// A charge never booked.
	plant(chargeOf("charge", w.pi(7000, "usd")), tieout.KindUnbookedPayment, "a payment the service never booked")

	clk.add(time.Hour)
	// A refund made in the Dashboard, never booked.
	refunded := w.payment(8000, "usd")
	re, err := srv.Refund(refunded, 3000)
	w.fail(err)
	plant(source("refund", re, false), tieout.KindUnbookedRefund, "a Dashboard refund never booked")
	// A refund booked that failed: its money came back, and that is not booked.
	refundFails := w.payment(9000, "usd")
	reFail, err := srv.Refund(refundFails, 1000)
	w.fail(err)
	w.fail(w.book.bookRefund(w.ctx, reFail, 1000, "usd"))
	w.fail(srv.SetRefundStatus(reFail, stripe.RefundStatusFailed, "expired_or_canceled_card"))
	plant(source("refund_failure", reFail, true), tieout.KindUnbookedRefundFailure, "a booked refund that failed")
	// A bank debit returned after it succeeded.
	debit := w.payment(6000, "usd")
	w.fail(srv.FailPayment(debit, ""))
	plant(chargeOf("payment_failure_refund", debit), tieout.KindUnbookedPaymentFailureRefund, "a bank debit returned after it succeeded")
	// A chargeback never booked; a chargeback booked and then won, its reinstatement not booked.
	disputed := w.payment(4000, "usd")
	du, err := srv.Dispute(disputed, 0, stripe.DisputeStatusNeedsResponse, time.Time{})
	w.fail(err)
	plant(source("adjustment", du, false), tieout.KindUnbookedDispute, "a chargeback never booked")
	won := w.payment(4500, "usd")
	duWon, err := srv.Dispute(won, 0, stripe.DisputeStatusUnderReview, time.Time{})
	w.fail(err)
	w.fail(w.book.bookDispute(w.ctx, duWon, 4500, "usd"))
	w.fail(srv.SetDisputeStatus(duWon, stripe.DisputeStatusWon))
	plant(source("adjustment", duWon, true), tieout.KindUnbookedDispute, "a dispute won, its money back not booked")
	// A line of a type the policy does not know.
	mystery := srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "mystery_credit", Amount: 100})
	w.want = append(w.want, planted{mystery, tieout.KindUnknownType, "a line of a type Stripe added later"})
	// Money the service counts as settled that never reached Stripe, so no payout carries it.
	w.fail(w.book.bookPayment(w.ctx, "pi_never_paid_out", 1234, "usd", t0))
	w.want = append(w.want, planted{"pi_never_paid_out", tieout.KindNeverPaidOut, "booked as settled, in no payout"})

	// p1 pays all of it out three days later.
	clk.add(3 * 24 * time.Hour)
	w.p1 = w.payout(stripe.PayoutStatusPaid)
	for _, l := range lines {
		w.want = append(w.want, planted{w.line(w.p1, l.match), l.kind, l.story})
	}
}

// plantLater plants what follows p1's tie-out: p1 fails after it was paid; p2 carries its
// payout_failure (not booked) and a transfer added after it was made (its sum no longer
// holds); p3 is a manual payout; p4 an automatic one still pending.
func (w *world) plantLater() {
	srv, clk := w.srv, w.clk
	clk.add(12 * time.Hour)
	w.fail(srv.FailPayout(w.p1, stripe.PayoutFailureCodeAccountClosed, ""))
	w.want = append(w.want, planted{w.p1, tieout.KindPayoutFailed, "paid, then failed: the bank account closed"})
	clk.add(time.Hour)
	w.payment(20000, "usd")
	clk.add(2*24*time.Hour + time.Hour)
	w.p2 = srv.AddPayout(stripetest.Payout{})
	srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "transfer", Amount: 250, Payout: w.p2})
	w.fail(srv.SetPayoutStatus(w.p2, stripe.PayoutStatusPaid))
	w.recordPayout(w.p2, "paid")
	w.carried = nil
	w.want = append(w.want, planted{w.line(w.p2, source("payout_failure", w.p1, true)), tieout.KindUnbookedPayoutFailure, "the failed payout's money back, not booked"},
		planted{w.p2, tieout.KindSumMismatch, "a line added after the payout was made"})

	clk.add(time.Hour)
	w.p3 = srv.AddPayout(stripetest.Payout{Manual: true, Amount: 500, Status: stripe.PayoutStatusPaid})
	w.recordPayout(w.p3, "paid")
	w.want = append(w.want, planted{w.p3, tieout.KindNotItemizable, "a manual payout"})

	clk.add(time.Hour)
	w.payment(3000, "usd")
	clk.add(2*24*time.Hour + time.Hour)
	w.p4 = w.payout(stripe.PayoutStatusPending)
	clk.add(2 * time.Minute) // the events settle
}

// chargeOf matches a line of type typ whose source charge is of PaymentIntent pi.
func chargeOf(typ, pi string) func(*stripe.BalanceTransaction) bool {
	return func(bt *stripe.BalanceTransaction) bool {
		return string(bt.Type) == typ && bt.Source != nil && bt.Source.Charge != nil && bt.Source.Charge.PaymentIntent != nil &&
			bt.Source.Charge.PaymentIntent.ID == pi
	}
}

// source matches a line of type typ from source id, money in or out.
func source(typ, id string, in bool) func(*stripe.BalanceTransaction) bool {
	return func(bt *stripe.BalanceTransaction) bool {
		return string(bt.Type) == typ && bt.Source != nil && bt.Source.ID == id && (bt.Amount > 0) == in
	}
}

// line returns the id of payout po's one line that match picks, read from the fake through
// stripe-go (not through the tie-out), to know what must be found.
func (w *world) line(po string, match func(bt *stripe.BalanceTransaction) bool) string {
	if w.err != nil {
		return ""
	}
	sc := stripe.NewClient(w.srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(w.srv.URL()), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}})))
	params := &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}
	params.AddExpand("data.source")
	var found []string
	for bt, err := range sc.V1BalanceTransactions.List(w.ctx, params) {
		if err != nil {
			w.fail(err)
			return ""
		}
		if match(bt) {
			found = append(found, bt.ID)
		}
	}
	if len(found) != 1 {
		w.fail(fmt.Errorf("payouts: %d lines of %s match a planted one, want 1", len(found), po))
		return ""
	}
	return found[0]
}
