package stripepayouts_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// clock is the fake's and the lanes' clock, moved by the test.
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

// sink is where a tie-out records, and where the test reads what it found.
type sink interface {
	reconcile.LaneSink
	ListFindings(ctx context.Context, q reconcile.FindingQuery) ([]reconcile.Finding, error)
}

// t0 is when the world's first payments are made.
var t0 = time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)

// job is the tie-out's job: the sweep's and the events lane's findings are one job's.
const job = "payouts"

// newServer starts a fake Stripe on clk, EUR settling in USD at 1.1.
func newServer(t testing.TB, clk *clock) *stripetest.Server {
	t.Helper()
	srv := stripetest.NewServer(stripetest.Options{Now: clk.now})
	t.Cleanup(srv.Close)
	srv.SetExchangeRate("eur", "usd", 1.1)
	return srv
}

// newLister builds the Lister over HTTP to srv.
func newLister(t testing.TB, srv *stripetest.Server, cfg stripepayouts.Config) *stripepayouts.Lister {
	t.Helper()
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	l, err := stripepayouts.New(gw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// policy is the world's host: it books payments, refunds, disputes, their failures and its
// payouts, not fees.
var policy = tieout.Policy{Books: append(slices.Clone(tieout.DefaultBooks), tieout.KindGroup)}

// world is a Stripe account with every drift the payouts tie-out must find planted, the host's
// ledger of it, and what must be found, by (record, kind).
type world struct {
	t      testing.TB
	clk    *clock
	srv    *stripetest.Server
	booked []tieout.Booked
	want   map[[2]string]bool
	// p1 is paid, then fails once tied out; p2 carries p1's failure and a line that breaks
	// its sum; p3 is manual; p4 stays pending until the test pays it.
	p1, p2, p3, p4 string
}

// must returns v, failing the test on err.
func must(t testing.TB) func(v string, err error) string {
	return func(v string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func (w *world) pi(amount int64, currency string) string {
	return w.srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: amount, Currency: currency})
}

func (w *world) book(kind, id string, amount int64, currency string, basis tieout.Basis) {
	w.booked = append(w.booked, tieout.Booked{Kind: kind, ID: id, Amount: amount, Currency: currency, Basis: basis,
		SettledAt: w.clk.now(), Group: "po_recorded"})
}

func (w *world) bookPayout(id, status string) {
	w.booked = append(w.booked, tieout.Booked{Kind: tieout.KindGroup, ID: id, Basis: tieout.Settlement, Status: status})
}

// line finds the balance transaction of payout po matching match, read from the fake as a
// fixture (through stripe-go, not the lister).
func (w *world) line(po string, match func(bt *stripe.BalanceTransaction) bool) string {
	w.t.Helper()
	sc := stripe.NewClient(w.srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(w.srv.URL()), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}})))
	params := &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}
	params.AddExpand("data.source")
	var found []string
	for bt, err := range sc.V1BalanceTransactions.List(context.Background(), params) {
		if err != nil {
			w.t.Fatal(err)
		}
		if match(bt) {
			found = append(found, bt.ID)
		}
	}
	if len(found) != 1 {
		w.t.Fatalf("%d lines of %s match, want 1", len(found), po)
	}
	return found[0]
}

// chargeOf matches the charge of intent pi; typ the line's type.
func sourceIntent(typ, pi string) func(*stripe.BalanceTransaction) bool {
	return func(bt *stripe.BalanceTransaction) bool {
		return string(bt.Type) == typ && bt.Source != nil && bt.Source.Charge != nil && bt.Source.Charge.PaymentIntent != nil &&
			bt.Source.Charge.PaymentIntent.ID == pi
	}
}

func source(typ, id string, positive bool) func(*stripe.BalanceTransaction) bool {
	return func(bt *stripe.BalanceTransaction) bool {
		return string(bt.Type) == typ && bt.Source != nil && bt.Source.ID == id && (bt.Amount > 0) == positive
	}
}

// newWorld plants up to p1, paid; later plants the rest.
func newWorld(t testing.TB) *world {
	t.Helper()
	clk := &clock{t: t0}
	w := &world{t: t, clk: clk, srv: newServer(t, clk), want: map[[2]string]bool{}}
	srv := w.srv
	type plant struct {
		match func(*stripe.BalanceTransaction) bool
		kind  string
	}
	var plants []plant
	// Payments booked right: USD; EUR booked as EUR (presentment); EUR booked as the USD it
	// settled as (settlement, through exchange_rate 1.1). Fees are not booked: never compared.
	w.book(tieout.KindPayment, w.pi(10000, "usd"), 10000, "usd", tieout.Presentment)
	w.book(tieout.KindPayment, w.pi(1000, "eur"), 1000, "eur", tieout.Presentment)
	w.book(tieout.KindPayment, w.pi(2000, "eur"), 2200, "usd", tieout.Settlement)
	// An amount that differs in presentment, and one in settlement.
	bad := w.pi(5000, "usd")
	w.book(tieout.KindPayment, bad, 4000, "usd", tieout.Presentment)
	plants = append(plants, plant{sourceIntent("charge", bad), tieout.KindAmountDiffers})
	badSettled := w.pi(3000, "eur")
	w.book(tieout.KindPayment, badSettled, 3000, "usd", tieout.Settlement)
	plants = append(plants, plant{sourceIntent("charge", badSettled), tieout.KindAmountDiffers})
	// A charge never booked.
	plants = append(plants, plant{sourceIntent("charge", w.pi(7000, "usd")), tieout.KindUnbookedPayment})

	clk.add(time.Hour)
	// A refund made in the Dashboard, never booked.
	refunded := w.pi(8000, "usd")
	w.book(tieout.KindPayment, refunded, 8000, "usd", tieout.Presentment)
	re := must(t)(srv.Refund(refunded, 3000))
	plants = append(plants, plant{source("refund", re, false), tieout.KindUnbookedRefund})
	// A refund booked that failed: its refund_failure is not booked.
	refundFails := w.pi(9000, "usd")
	w.book(tieout.KindPayment, refundFails, 9000, "usd", tieout.Presentment)
	reFail := must(t)(srv.Refund(refundFails, 1000))
	w.book(tieout.KindRefund, reFail, -1000, "usd", tieout.Presentment)
	if err := srv.SetRefundStatus(reFail, stripe.RefundStatusFailed, "expired_or_canceled_card"); err != nil {
		t.Fatal(err)
	}
	plants = append(plants, plant{source("refund_failure", reFail, true), tieout.KindUnbookedRefundFailure})
	// A bank debit returned after it succeeded: its payment_failure_refund is not booked.
	debit := w.pi(6000, "usd")
	w.book(tieout.KindPayment, debit, 6000, "usd", tieout.Presentment)
	if err := srv.FailPayment(debit, ""); err != nil {
		t.Fatal(err)
	}
	plants = append(plants, plant{sourceIntent("payment_failure_refund", debit), tieout.KindUnbookedPaymentFailureRefund})
	// A chargeback never booked; a chargeback booked and won, its reinstatement not booked.
	disputed := w.pi(4000, "usd")
	w.book(tieout.KindPayment, disputed, 4000, "usd", tieout.Presentment)
	du := must(t)(srv.Dispute(disputed, 0, stripe.DisputeStatusNeedsResponse, time.Time{}))
	plants = append(plants, plant{source("adjustment", du, false), tieout.KindUnbookedDispute})
	won := w.pi(4500, "usd")
	w.book(tieout.KindPayment, won, 4500, "usd", tieout.Presentment)
	duWon := must(t)(srv.Dispute(won, 0, stripe.DisputeStatusUnderReview, time.Time{}))
	w.book(tieout.KindDispute, duWon, -4500, "usd", tieout.Presentment)
	if err := srv.SetDisputeStatus(duWon, stripe.DisputeStatusWon); err != nil {
		t.Fatal(err)
	}
	plants = append(plants, plant{source("adjustment", duWon, true), tieout.KindUnbookedDispute})
	// A balance transaction of a type the policy does not know.
	mystery := srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "mystery_credit", Amount: 100})
	w.want[[2]string{mystery, tieout.KindUnknownType}] = true
	// A booked record that never reached a payout: settled, in no payout, long past.
	w.booked = append(w.booked, tieout.Booked{Kind: tieout.KindPayment, ID: "pi_ghost", Amount: 1234, Currency: "usd",
		Basis: tieout.Presentment, SettledAt: t0})
	w.want[[2]string{"pi_ghost", tieout.KindNeverPaidOut}] = true

	// p1 pays all of it out three days later, and is paid.
	clk.add(3 * 24 * time.Hour)
	w.p1 = srv.AddPayout(stripetest.Payout{})
	if err := srv.SetPayoutStatus(w.p1, stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	w.bookPayout(w.p1, "paid")
	for _, p := range plants {
		w.want[[2]string{w.line(w.p1, p.match), p.kind}] = true
	}
	return w
}

// later plants what follows p1's tie-out: p1 fails after it was paid, p2 carries its
// payout_failure (not booked) and a line added after it was made (its sum no longer holds),
// p3 is a manual payout, p4 an automatic one still pending.
func (w *world) later() {
	t, srv, clk := w.t, w.srv, w.clk
	clk.add(12 * time.Hour)
	if err := srv.FailPayout(w.p1, stripe.PayoutFailureCodeAccountClosed, ""); err != nil {
		t.Fatal(err)
	}
	w.want[[2]string{w.p1, tieout.KindPayoutFailed}] = true
	clk.add(time.Hour)
	w.book(tieout.KindPayment, w.pi(20000, "usd"), 20000, "usd", tieout.Presentment)
	clk.add(2*24*time.Hour + time.Hour)
	w.p2 = srv.AddPayout(stripetest.Payout{})
	srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "transfer", Amount: 250, Payout: w.p2})
	if err := srv.SetPayoutStatus(w.p2, stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	w.bookPayout(w.p2, "paid")
	w.want[[2]string{w.line(w.p2, source("payout_failure", w.p1, true)), tieout.KindUnbookedPayoutFailure}] = true
	w.want[[2]string{w.p2, tieout.KindSumMismatch}] = true

	clk.add(time.Hour)
	w.p3 = srv.AddPayout(stripetest.Payout{Manual: true, Amount: 500, Status: stripe.PayoutStatusPaid})
	w.bookPayout(w.p3, "paid")
	w.want[[2]string{w.p3, tieout.KindNotItemizable}] = true

	clk.add(time.Hour)
	w.book(tieout.KindPayment, w.pi(3000, "usd"), 3000, "usd", tieout.Presentment)
	clk.add(2*24*time.Hour + time.Hour)
	w.p4 = srv.AddPayout(stripetest.Payout{})
	w.bookPayout(w.p4, "pending")
	clk.add(2 * time.Minute) // the events settle
}

// memLedger is the world's ledger in memory.
func (w *world) memLedger() tieout.Ledger {
	var l tieout.MemoryLedger
	l.Book(w.booked...)
	return &l
}

// pgLedger returns a loader of the world's ledger into PostgreSQL (the pool's schema): one
// table per basis, a kind column, the payouts among them. Each load replaces the rows with
// the bookings made so far.
func (w *world) pgLedger(pool *pgxpool.Pool) func() tieout.Ledger {
	ctx := context.Background()
	t := w.t
	names := []string{"ledger_presentment", "ledger_settlement"}
	for _, name := range names {
		if _, err := pool.Exec(ctx, `CREATE TABLE `+name+` (id bigserial PRIMARY KEY, kind text NOT NULL, ext_id text NOT NULL,
			amount bigint NOT NULL, currency text NOT NULL, settled_at timestamptz, payout_id text, status text)`); err != nil {
			t.Fatal(err)
		}
	}
	table := func(name string, basis tieout.Basis) pgledger.Table {
		return pgledger.Table{Name: name, KindColumn: "kind", IDColumn: "ext_id", Basis: basis,
			SettledAtColumn: "settled_at", GroupColumn: "payout_id", StatusColumn: "status"}
	}
	l, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{
		table(names[0], tieout.Presentment), table(names[1], tieout.Settlement)}})
	if err != nil {
		t.Fatal(err)
	}
	return func() tieout.Ledger {
		if _, err := pool.Exec(ctx, `TRUNCATE ledger_presentment, ledger_settlement`); err != nil {
			t.Fatal(err)
		}
		for _, b := range w.booked {
			name := names[0]
			if b.Basis == tieout.Settlement {
				name = names[1]
			}
			var settled *time.Time
			if !b.SettledAt.IsZero() {
				settled = &b.SettledAt
			}
			var group *string
			if b.Group != "" {
				group = &b.Group
			}
			if _, err := pool.Exec(ctx, `INSERT INTO `+name+` (kind, ext_id, amount, currency, settled_at, payout_id, status)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, b.Kind, b.ID, b.Amount, b.Currency, settled, group, b.Status); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
}

// ledgerRef is a Ledger that reads the one last set: the test books as it plants.
type ledgerRef struct {
	mu sync.Mutex
	l  tieout.Ledger
}

func (r *ledgerRef) set(l tieout.Ledger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.l = l
}

func (r *ledgerRef) get() tieout.Ledger {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.l
}

func (r *ledgerRef) Booked(ctx context.Context, keys []tieout.Key) ([]tieout.Booked, error) {
	return r.get().Booked(ctx, keys)
}

func (r *ledgerRef) Unpaid(ctx context.Context, req tieout.UnpaidRequest) (tieout.UnpaidPage, error) {
	return r.get().Unpaid(ctx, req)
}

// found returns the open findings of the job by (record, kind), with how many of each.
func found(t testing.TB, s sink) map[[2]string]int {
	t.Helper()
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: job, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[[2]string]int)
	for _, f := range fs {
		out[[2]string{f.RecordID, f.Kind}]++
	}
	return out
}

// checkFound fails t unless every wanted finding is open exactly once and nothing else is.
func checkFound(t testing.TB, s sink, want map[[2]string]bool) {
	t.Helper()
	got := found(t, s)
	for k := range want {
		if got[k] != 1 {
			t.Errorf("finding %s %s: %d open, want 1", k[0], k[1], got[k])
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(got), func(a, b [2]string) int { return compare(a, b) }) {
		if !want[k] {
			t.Errorf("unexpected finding %s %s (%d)", k[0], k[1], got[k])
		}
	}
}

func compare(a, b [2]string) int {
	if a[0] != b[0] {
		if a[0] < b[0] {
			return -1
		}
		return 1
	}
	if a[1] < b[1] {
		return -1
	}
	if a[1] > b[1] {
		return 1
	}
	return 0
}

// step builds a tie-out step of the world's policy.
func step(t testing.TB, lane string, l tieout.Lister, ledger tieout.Ledger, s sink) *tieout.Step {
	t.Helper()
	st, err := tieout.NewStep(tieout.StepConfig{Job: job, Lane: lane, Lister: l, Ledger: ledger, Sink: s, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// pass runs st until it reports the end of its pass, at most limit batches, and returns the
// findings it added.
func pass(t testing.TB, st *tieout.Step, limit int) int {
	t.Helper()
	added := 0
	for range limit {
		rep, err := st.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		added += rep.NewFindings
		if rep.Wrapped {
			return added
		}
	}
	t.Fatalf("no end of pass in %d batches", limit)
	return 0
}

// unpaid runs the never-paid-out walk once over its pass, at the world's time.
func unpaid(t testing.TB, w *world, ledger tieout.Ledger, s sink) {
	t.Helper()
	st, err := tieout.NewUnpaidStep(tieout.UnpaidConfig{Job: job, Lane: "unpaid", Ledger: ledger, Sink: s, Now: w.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		rep, err := st.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Wrapped {
			return
		}
	}
	t.Fatal("the unpaid walk did not end")
}
