package stripemoney_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// paymentRow is a payments table's row as pgstore.NewOf scans it: the money in minor units,
// and a dispute status that is NULL while there is none.
type paymentRow struct {
	Status   string  `db:"status"`
	Amount   int64   `db:"amount_minor"`
	Currency string  `db:"currency"`
	Refunded int64   `db:"amount_refunded"`
	Dispute  *string `db:"dispute_status"`
}

// laneJob is the job the sweep and the lanes share.
const laneJob = "payments"

func paymentView(r paymentRow) stripepolicy.LocalPayment {
	lp := stripepolicy.LocalPayment{Status: r.Status, Amount: r.Amount, Currency: r.Currency, AmountRefunded: r.Refunded}
	if r.Dispute != nil {
		lp.DisputeStatus = *r.Dispute
	}
	return lp
}

// moneyWorld is a payments table in PostgreSQL whose rows are paid and agree with their
// PaymentIntents in a stripetest server, some of them refunded or disputed already, and the
// money policy's sweep and events lane over them. Its clock is shared by the fake Stripe
// (event times) and the feed (settle), and moved by the test.
type moneyWorld struct {
	t      *testing.T
	srv    *stripetest.Server
	pool   *pgxpool.Pool
	store  *pgstore.Store[paymentRow]
	gw     *stripemoney.Gateway
	offset atomic.Int64
	// The intents, by the money event planted on each, and the plain ones around them.
	dashboardRefund, partialRefund, failedRefund, respond, lost, won string
	failingRefundID, lostID, wonID                                   string
	dueBy                                                            time.Time
	rows                                                             map[string]paymentRow // by intent
}

func (w *moneyWorld) now() time.Time        { return time.Now().Add(time.Duration(w.offset.Load())) }
func (w *moneyWorld) later(d time.Duration) { w.offset.Add(int64(d)) }

// newMoneyWorld makes twenty paid rows in USD and JPY, in sync with their intents: one refunded
// 300 of 1000 as the row records, two with a dispute under review as the rows record.
func newMoneyWorld(t *testing.T) *moneyWorld {
	t.Helper()
	w := &moneyWorld{t: t}
	w.srv = stripetest.NewServer(stripetest.Options{Now: w.now})
	t.Cleanup(w.srv.Close)
	rows := make([]paymentRow, 20)
	pis := make([]stripetest.PaymentIntent, len(rows))
	created := w.now().Add(-2 * time.Hour).Truncate(time.Second)
	for i := range pis {
		rows[i] = paymentRow{Status: "paid", Amount: 1000, Currency: "usd"}
		if i%3 == 0 {
			rows[i] = paymentRow{Status: "paid", Amount: 5000, Currency: "jpy"}
		}
		pis[i] = stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: rows[i].Amount,
			Currency: rows[i].Currency, Created: created.Add(time.Duration(i) * time.Second)}
	}
	ids := w.srv.AddPaymentIntents(pis)
	w.dashboardRefund, w.partialRefund, w.failedRefund, w.respond, w.lost, w.won = ids[1], ids[3], ids[5], ids[7], ids[9], ids[11]
	var err error
	if w.failingRefundID, err = w.srv.Refund(w.failedRefund, 300); err != nil {
		t.Fatal(err)
	}
	rows[5].Refunded = 300
	if w.lostID, err = w.srv.Dispute(w.lost, 0, stripe.DisputeStatusUnderReview, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if w.wonID, err = w.srv.Dispute(w.won, 0, stripe.DisputeStatusUnderReview, time.Time{}); err != nil {
		t.Fatal(err)
	}
	review := "under_review"
	rows[9].Dispute, rows[11].Dispute = &review, &review

	ctx := context.Background()
	w.pool, _ = pgtest.PoolSchema(t)
	if _, err := w.pool.Exec(ctx, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		amount_minor bigint NOT NULL, currency text NOT NULL, amount_refunded bigint NOT NULL DEFAULT 0, dispute_status text,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, w.pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	w.rows = make(map[string]paymentRow, len(rows))
	for i, r := range rows {
		w.rows[ids[i]] = r
		if _, err := w.pool.Exec(ctx, `INSERT INTO payments VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			i+1, ids[i], r.Status, r.Amount, r.Currency, r.Refunded, r.Dispute, pis[i].Created, w.now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if w.store, err = pgstore.NewOf[paymentRow](w.pool, pgstore.Config{Table: "payments"}); err != nil {
		t.Fatal(err)
	}
	w.gw = newGatewayFor(t, w.srv)
	w.later(2 * time.Minute) // the setup's events are settled: the lane starts after them
	return w
}

// plant makes at Stripe, now, every change the money policy must find.
func (w *moneyWorld) plant() {
	w.t.Helper()
	w.dueBy = w.now().Add(7 * 24 * time.Hour).Truncate(time.Second)
	for _, err := range []error{
		second(w.srv.Refund(w.dashboardRefund, 0)),
		second(w.srv.Refund(w.partialRefund, 200)),
		w.srv.SetRefundStatus(w.failingRefundID, stripe.RefundStatusFailed, "expired_or_canceled_card"),
		second(w.srv.Dispute(w.respond, 0, stripe.DisputeStatusNeedsResponse, w.dueBy)),
		w.srv.SetDisputeStatus(w.lostID, stripe.DisputeStatusLost),
		w.srv.SetDisputeStatus(w.wonID, stripe.DisputeStatusWon),
	} {
		if err != nil {
			w.t.Fatal(err)
		}
	}
}

func second(_ string, err error) error { return err }

// want is what the planted changes must be found as, by intent: the kind, a part of the
// detail, and the field that differs.
func (w *moneyWorld) want(withRefundObjects bool) map[string][3]string {
	failed := "the row records USD 3.00 refunded, Stripe USD 0.00"
	if withRefundObjects {
		failed += "; refund " + w.failingRefundID + " failed: expired_or_canceled_card"
	}
	return map[string][3]string{
		w.dashboardRefund: {"missed_refund", "Stripe refunded USD 10.00, the row records USD 0.00", "amount_refunded: USD 0.00 / USD 10.00"},
		w.partialRefund:   {"missed_partial_refund", "Stripe refunded JPY 200, the row records JPY 0", "amount_refunded: JPY 0 / JPY 200"},
		w.failedRefund:    {"refund_failed", failed, "amount_refunded: USD 3.00 / USD 0.00"},
		w.respond:         {"dispute_needs_response", "respond by " + w.dueBy.UTC().Format(time.RFC3339), "dispute_status: none / needs_response"},
		w.lost:            {"dispute_lost", "was lost", "dispute_status: under_review / lost"},
		w.won:             {"dispute_won", "was won", "dispute_status: under_review / won"},
	}
}

// check asserts that the open findings are exactly want's, one per intent, each with the
// field that differs.
func (w *moneyWorld) check(want map[string][3]string) {
	w.t.Helper()
	fs, err := w.store.ListFindings(context.Background(), reconcile.FindingQuery{Job: laneJob, Limit: 100})
	if err != nil {
		w.t.Fatal(err)
	}
	got := map[string]reconcile.Finding{}
	for _, f := range fs {
		if _, dup := got[f.ExternalID]; dup {
			w.t.Errorf("%s found twice: %s and %s", f.ExternalID, got[f.ExternalID].Kind, f.Kind)
		}
		got[f.ExternalID] = f
	}
	for id, kd := range want {
		f, ok := got[id]
		var diffs []string
		for _, d := range f.Diffs {
			diffs = append(diffs, d.Field+": "+d.Local+" / "+d.External)
		}
		switch {
		case !ok:
			w.t.Errorf("%s: not found; want %s", id, kd[0])
		case f.Kind != kd[0] || !strings.Contains(f.Detail, kd[1]):
			w.t.Errorf("%s: found %s (%q), want %s (%q)", id, f.Kind, f.Detail, kd[0], kd[1])
		case !slices.Contains(diffs, kd[2]):
			w.t.Errorf("%s: %s differs in %q, want %q among them", id, f.Kind, diffs, kd[2])
		}
	}
	for id, f := range got {
		if _, ok := want[id]; !ok {
			w.t.Errorf("%s: found %s (%q), which nothing planted", id, f.Kind, f.Detail)
		}
	}
}

func (w *moneyWorld) sweep(gw reconcile.Gateway[*stripepolicy.Payment]) {
	w.t.Helper()
	r, err := reconcile.New(reconcile.Config[paymentRow, *stripepolicy.Payment]{
		Job: laneJob, Source: w.store, Sink: w.store, Gateway: gw,
		Classifier: stripepolicy.PaymentPolicy(paymentView), BatchSize: 8,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	for {
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if rep.Verdicts[reconcile.Unverifiable] > 0 {
			w.t.Fatalf("sweep: %d rows unverifiable", rep.Verdicts[reconcile.Unverifiable])
		}
		if rep.Wrapped {
			return
		}
	}
}

func (w *moneyWorld) eventsLane() *reconcile.Lane[paymentRow, *stripepolicy.Payment] {
	w.t.Helper()
	feed, err := w.gw.EventsFeed(stripeadapter.EventsOptions{Now: w.now})
	if err != nil {
		w.t.Fatal(err)
	}
	l, err := reconcile.NewLane(reconcile.LaneConfig[paymentRow, *stripepolicy.Payment]{
		Job: laneJob, Lane: "events", Feed: feed, Matcher: w.store, Sink: w.store,
		Classifier: stripepolicy.PaymentPolicy(paymentView),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return l
}

func (w *moneyWorld) step(l *reconcile.Lane[paymentRow, *stripepolicy.Payment]) reconcile.Report {
	w.t.Helper()
	rep, err := l.RunBatch(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

func TestTheMoneyIsInSyncBeforeAnythingHappens(t *testing.T) {
	w := newMoneyWorld(t)
	w.sweep(w.gw)
	w.check(nil)
}

func TestTheEventsLaneFindsRefundsAndDisputesWithinTwoMinutes(t *testing.T) {
	w := newMoneyWorld(t)
	lane := w.eventsLane()
	w.step(lane) // starts at the newest settled event
	w.plant()
	w.srv.ResetLog()
	w.later(30 * time.Second)
	if rep := w.step(lane); rep.NewFindings != 0 {
		t.Fatalf("events younger than Settle were read: %d findings", rep.NewFindings)
	}
	w.later(90 * time.Second) // two minutes after the changes
	rep := w.step(lane)
	if rep.NewFindings != 6 || rep.NewCommands != 3 {
		t.Errorf("the lane opened %d findings and %d commands, want 6 and 3 (missed_refund, missed_partial_refund, dispute_won)", rep.NewFindings, rep.NewCommands)
	}
	w.check(w.want(true))
	// Each payment is read once however many events touched it: its intent; the refunds of the
	// three a refund event touched; the disputes of the three disputed charges.
	if got := [3]int{w.srv.Requests(stripetest.RetrievePaymentIntent), w.srv.Requests(stripetest.ListRefunds), w.srv.Requests(stripetest.ListDisputes)}; got != [3]int{6, 3, 3} {
		t.Errorf("retrieves, refunds and disputes calls: %v, want [6 3 3]", got)
	}
	for _, r := range w.srv.Log() {
		if r.Route == stripetest.ListEvents && len(r.Query["types[0]"])+len(r.Query["types[17]"]) != 2 {
			t.Errorf("the events list did not ask for the 18 payment event types: %v", r.Query)
		}
	}

	// Found once: the next steps and the sweep open nothing more.
	w.later(2 * time.Minute)
	if rep := w.step(lane); rep.NewFindings != 0 {
		t.Errorf("the next step opened %d findings again", rep.NewFindings)
	}
	w.sweep(w.gw)
	w.check(w.want(true))
}

func TestTheSweepAloneFindsWhatTheLaneMissed(t *testing.T) {
	for _, mode := range []string{"bulk", "per-object"} {
		t.Run(mode, func(t *testing.T) {
			w := newMoneyWorld(t)
			w.plant()
			var gw reconcile.Gateway[*stripepolicy.Payment] = w.gw
			if mode == "per-object" {
				gw = reconcile.PerObject(gw)
			}
			w.sweep(gw)
			// The sweep reads no Refund objects: the failed refund is found from the charge.
			w.check(w.want(false))
			lists, retrieves := w.srv.Requests(stripetest.ListPaymentIntents), w.srv.Requests(stripetest.RetrievePaymentIntent)
			if mode == "bulk" && (retrieves != 0 || lists > 3) || mode == "per-object" && (lists != 0 || retrieves != 20) {
				t.Errorf("%d list calls and %d retrieves", lists, retrieves)
			}
			if n := w.srv.Requests(stripetest.ListRefunds); n != 0 {
				t.Errorf("the sweep listed refunds %d times", n)
			}
		})
	}
}

func TestTheLanesSurfaceARefusedExpansion(t *testing.T) {
	w := newMoneyWorld(t)
	lane := w.eventsLane()
	w.step(lane)
	if _, err := w.srv.Refund(w.dashboardRefund, 0); err != nil {
		t.Fatal(err)
	}
	w.later(2 * time.Minute)
	w.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: http.StatusBadRequest,
		Message: "This property cannot be expanded (latest_charge)."})
	_, err := lane.RunBatch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot be expanded (latest_charge)") {
		t.Fatalf("lane step with a refused expansion: %v; want an error quoting Stripe", err)
	}

	rev, err := w.gw.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Now: w.now})
	if err != nil {
		t.Fatal(err)
	}
	w.srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Status: http.StatusBadRequest,
		Message: "This property cannot be expanded (data.latest_charge)."})
	_, err = rev.Next(context.Background(), "", func(context.Context) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot be expanded (data.latest_charge)") {
		t.Fatalf("reverse feed with a refused expansion: %v; want an error quoting Stripe", err)
	}
}

func TestThePaymentReverseFeedReadsDisputes(t *testing.T) {
	w := newMoneyWorld(t)
	w.plant()
	w.later(time.Hour) // past the reverse scan's grace
	feed, err := w.gw.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Now: w.now})
	if err != nil {
		t.Fatal(err)
	}
	w.srv.ResetLog()
	calls := 0
	page, err := feed.Next(context.Background(), "", countingWait(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 20 || !page.End {
		t.Fatalf("a pass of %d payments (end %t), want 20 and the end", len(page.Objects), page.End)
	}
	policy := stripepolicy.PaymentPolicy(paymentView)
	var kinds []string
	for _, o := range page.Objects {
		if o.Object.Intent.LatestCharge == nil || o.Object.Intent.LatestCharge.Object != "charge" {
			t.Fatalf("%s: charge not expanded", o.ExternalID)
		}
		if d := policy.Classify(w.rows[o.ExternalID], o.Object); d.Verdict != reconcile.InSync {
			kinds = append(kinds, d.Kind)
			if want := w.want(false)[o.ExternalID]; d.Kind != want[0] {
				t.Errorf("%s: %s, want %s", o.ExternalID, d.Kind, want[0])
			}
		}
	}
	// One list call, one disputes call per disputed charge (three).
	if calls != 4 || w.srv.Requests(stripetest.ListDisputes) != 3 {
		t.Errorf("%d calls, %d of them disputes; want 4 and 3", calls, w.srv.Requests(stripetest.ListDisputes))
	}
	slices.Sort(kinds)
	if fmt.Sprint(kinds) != "[dispute_lost dispute_needs_response dispute_won missed_partial_refund missed_refund refund_failed]" {
		t.Errorf("planted kinds among the pass: %v", kinds)
	}
}

func TestAPaymentThatCannotBeReadEndsTheStepBeforeItsEvent(t *testing.T) {
	for _, fault := range []stripetest.Fault{
		{Status: http.StatusInternalServerError, Times: 1},
		{Status: http.StatusTooManyRequests, Times: 1},
	} {
		t.Run(fmt.Sprint(fault.Status), func(t *testing.T) {
			w := newMoneyWorld(t)
			lane := w.eventsLane()
			w.step(lane)
			w.plant()
			w.later(2 * time.Minute)
			// The second payment touched: the first is found, the rest wait for the next step.
			fault.ID = w.partialRefund
			w.srv.Inject(stripetest.RetrievePaymentIntent, fault)
			rep := w.step(lane)
			if rep.NewFindings != 1 || rep.Wrapped {
				t.Fatalf("first step: %d findings, caught up %t; want 1, not caught up", rep.NewFindings, rep.Wrapped)
			}
			if rep.RateLimited != (fault.Status == http.StatusTooManyRequests) {
				t.Errorf("first step rate limited: %t", rep.RateLimited)
			}
			if rep := w.step(lane); rep.NewFindings != 5 || !rep.Wrapped {
				t.Fatalf("second step: %d findings, caught up %t; want 5 and caught up", rep.NewFindings, rep.Wrapped)
			}
			w.check(w.want(true))
		})
	}
}

func TestARowWhoseDisputesCannotBeReadIsUnverifiable(t *testing.T) {
	for _, mode := range []string{"bulk", "per-object"} {
		t.Run(mode, func(t *testing.T) {
			w := newMoneyWorld(t)
			w.plant()
			w.srv.Inject(stripetest.ListDisputes, stripetest.Fault{Status: http.StatusInternalServerError})
			var gw reconcile.Gateway[*stripepolicy.Payment] = w.gw
			if mode == "per-object" {
				gw = reconcile.PerObject(gw)
			}
			r, err := reconcile.New(reconcile.Config[paymentRow, *stripepolicy.Payment]{
				Job: laneJob, Source: w.store, Sink: w.store, Gateway: gw,
				Classifier: stripepolicy.PaymentPolicy(paymentView), BatchSize: 100,
			})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.RunBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// The three disputed payments are not judged; the refunds are found all the same.
			if rep.Verdicts[reconcile.Unverifiable] != 3 || rep.Verdicts[reconcile.InSync] != 14 || rep.NewFindings != 3 {
				t.Fatalf("verdicts %v, %d findings; want 3 unverifiable, 14 in sync and the 3 refunds found", rep.Verdicts, rep.NewFindings)
			}
		})
	}
}
