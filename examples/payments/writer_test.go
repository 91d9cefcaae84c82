package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// disputeUnderReview is a story no run plants: a dispute under review at Stripe that the row
// does not know of. Its progress is recorded through the writer.
var disputeUnderReview = story{name: "dispute under review, unknown here", local: paid, external: stripe.PaymentIntentStatusSucceeded,
	money:   money{dispute: stripe.DisputeStatusUnderReview},
	verdict: reconcile.Repairable, kind: stripepolicy.KindDisputeUpdated, command: stripepolicy.CommandApplyDisputeStatus}

// queuing returns the first planted story that queues command, nil if none does.
func queuing(command string) *story {
	for i := range stories {
		if stories[i].command == command {
			return &stories[i]
		}
	}
	return nil
}

// transitions are the changes both the webhook and the repairs apply: the story whose repair
// command applies it, an event that makes the webhook apply it, the webhook's answers when it
// changes the payment and when it finds it changed, and the dispute status the row then has.
var transitions = []struct {
	name               string
	story              *story
	event              stripe.EventType
	changed, unchanged string
	dispute            string
}{
	{"a missed success", queuing(stripepolicy.CommandApplyPaymentSucceeded), stripe.EventTypePaymentIntentSucceeded,
		"pending -> paid", "already paid", ""},
	{"a missed cancel", queuing(stripepolicy.CommandApplyPaymentCanceled), stripe.EventTypePaymentIntentCanceled,
		"pending -> failed", "already failed", ""},
	{"a missed partial refund", queuing(stripepolicy.CommandApplyRefund), stripe.EventTypeChargeRefunded,
		"refunds recorded as at Stripe", "refunds already as at Stripe", ""},
	// The event's type says nothing of the outcome: "updated" is applied as Stripe holds it.
	{"a dispute's progress", &disputeUnderReview, stripe.EventTypeChargeDisputeUpdated,
		"dispute recorded as at Stripe", "dispute already as at Stripe", string(stripe.DisputeStatusUnderReview)},
}

func TestWebhookThenRepairAppliesOnceByTheWebhook(t *testing.T) {
	t.Parallel()
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureOf(t, tr.story, 1)
			pay := f.p.payments[0]
			body, header := signedEvent(testSecret, tr.event, pay.externalID, pay.amount)

			resp := deliver(t.Context(), f.hook, body, header)
			if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), tr.changed) {
				t.Fatalf("webhook answered %d %q, want 200 and the change", resp.Code, resp.Body.String())
			}
			if st := f.state(t, pay.externalID); st.findings[0].Open() || st.commands[0].status != "pending" {
				t.Fatalf("after the webhook: %+v, want the finding resolved and the command still pending", st)
			}

			// The repair comes second: its finding is resolved, so it is done without running
			// the writer.
			if n, err := f.d.Work(t.Context()); n != 1 || err != nil {
				t.Fatalf("Work = %d, %v; want 1 command claimed", n, err)
			}
			if c, u := f.stats.changed.Load(), f.stats.unchanged.Load(); c != 0 || u != 0 {
				t.Errorf("the repair ran the writer (changed %d, unchanged %d); want it skipped, its finding resolved", c, u)
			}
			assertAppliedOnce(t, pay, f.state(t, pay.externalID), tr.dispute, actorWebhook)
		})
	}
}

func TestRepairThenWebhookAppliesOnceByTheRepair(t *testing.T) {
	t.Parallel()
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureOf(t, tr.story, 1)
			pay := f.p.payments[0]

			if n, err := f.d.Work(t.Context()); n != 1 || err != nil {
				t.Fatalf("Work = %d, %v; want 1 command claimed", n, err)
			}
			if c := f.stats.changed.Load(); c != 1 {
				t.Errorf("the repair changed %d payments, want 1", c)
			}

			// The webhook comes second, and Stripe redelivers it: both are no-ops.
			for range 2 {
				body, header := signedEvent(testSecret, tr.event, pay.externalID, pay.amount)
				resp := deliver(t.Context(), f.hook, body, header)
				if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), tr.unchanged) {
					t.Errorf("webhook answered %d %q, want 200 and nothing changed", resp.Code, resp.Body.String())
				}
			}
			assertAppliedOnce(t, pay, f.state(t, pay.externalID), tr.dispute, actorReconciler)
		})
	}
}

// Both paths start together behind a barrier, on a fresh payment each round: whichever takes
// the row lock first changes the payment; the other's guarded update (or, for refunds and
// disputes, its lock) waits for it to commit, then finds nothing to change.
func TestWebhookAndRepairAtOnceApplyOnce(t *testing.T) {
	t.Parallel()
	const rounds = 8
	for _, tr := range transitions {
		var webhookWon, repairWon atomic.Int64
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			t.Run("rounds", func(t *testing.T) {
				for i := range rounds {
					t.Run(fmt.Sprintf("round %d", i+1), func(t *testing.T) {
						t.Parallel()
						winner := race(t, tr.story, tr.event, tr.changed)
						if winner == actorWebhook {
							webhookWon.Add(1)
						} else {
							repairWon.Add(1)
						}
					})
				}
			})
			t.Logf("of %d rounds, the webhook changed the payment in %d, the repair in %d", rounds, webhookWon.Load(), repairWon.Load())
		})
	}
}

// race delivers event and runs the repair command of a payment of story s at once, checks that
// exactly one of them changed the payment, once, and returns which: actorWebhook if the
// webhook's answer held changed.
func race(t *testing.T, s *story, event stripe.EventType, changed string) (winner string) {
	t.Helper()
	ctx := t.Context()
	f := newFixtureOf(t, s, 1)
	pay := f.p.payments[0]
	body, header := signedEvent(testSecret, event, pay.externalID, pay.amount)

	start := make(chan struct{})
	var wg sync.WaitGroup
	var resp *httptest.ResponseRecorder
	var claimed int
	var workErr error
	wg.Go(func() {
		<-start
		resp = deliver(ctx, f.hook, body, header)
	})
	wg.Go(func() {
		<-start
		claimed, workErr = f.d.Work(ctx)
	})
	close(start)
	wg.Wait()

	if claimed != 1 || workErr != nil {
		t.Fatalf("Work = %d, %v; want 1 command claimed", claimed, workErr)
	}
	if resp.Code != http.StatusOK {
		t.Fatalf("webhook answered %d %q, want 200", resp.Code, resp.Body.String())
	}
	webhookChanged := strings.Contains(resp.Body.String(), changed)
	repairChanged := f.stats.changed.Load() == 1
	// The repair either ran the writer (changing the payment, or finding it changed by the
	// webhook a moment before) or was skipped because the webhook had already resolved its
	// finding; either way exactly one path changed it.
	if webhookChanged == repairChanged || f.stats.changed.Load()+f.stats.unchanged.Load() > 1 {
		t.Fatalf("webhook %q, repair changed %d and unchanged %d: want exactly one of them to change the payment",
			resp.Body.String(), f.stats.changed.Load(), f.stats.unchanged.Load())
	}
	winner = actorReconciler
	if webhookChanged {
		winner = actorWebhook
	}
	dispute := ""
	if s.money.dispute != "" {
		dispute = string(s.money.dispute)
	}
	assertAppliedOnce(t, pay, f.state(t, pay.externalID), dispute, winner)
	// Nothing is left to retry.
	if n, err := f.d.Work(ctx); n != 0 || err != nil {
		t.Errorf("Work after the race = %d, %v; want nothing to claim", n, err)
	}
	return winner
}

func TestRefundedAtStripeLeavesOutWhatAPartialCaptureReleased(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		captured, amountRefunded int64 // the charge's, of an amount of 1000
		want                     int64
	}{
		{"captured whole, nothing refunded", 1000, 0, 0},
		{"captured whole, part refunded", 1000, 300, 300},
		{"captured 600, nothing refunded: the released 400 is no refund", 600, 400, 0},
		{"captured 600, 200 refunded", 600, 600, 200},
		{"captured 600, all refunded", 600, 1000, 600},
	} {
		pay := &stripepolicy.Payment{Intent: &stripe.PaymentIntent{ID: "pi_1", Amount: 1000, Currency: "usd", AmountReceived: tc.captured,
			LatestCharge: &stripe.Charge{ID: "ch_1", Object: "charge", Amount: 1000, Captured: true, AmountCaptured: tc.captured, AmountRefunded: tc.amountRefunded}}}
		if got, currency := refundedAtStripe(pay); got != tc.want || currency != "usd" {
			t.Errorf("%s: refundedAtStripe = %d %s, want %d usd", tc.name, got, currency, tc.want)
		}
	}
}

// moneyThatDiffers are PaymentIntents that succeeded other than the row says: marking the row
// paid would book money that never came, or miss money that did. Each edits the PaymentIntent
// of a row charging amount (in usd), as the event and the fake Stripe carry it.
var moneyThatDiffers = []struct {
	name   string
	edit   func(pi map[string]any, amount int64)
	reason string // in the conflict
}{
	{"another currency", func(pi map[string]any, _ int64) { pi["currency"] = "eur" }, "is in USD, its payment at Stripe in EUR"},
	{"another amount", func(pi map[string]any, amount int64) { pi["amount"], pi["amount_received"] = amount+100, amount+100 },
		"its PaymentIntent USD"},
	{"a partial capture", func(pi map[string]any, amount int64) { pi["amount_received"] = amount / 2 }, "Stripe captured USD"},
}

func TestWebhookLeavesASuccessInOtherMoneyForAPerson(t *testing.T) {
	t.Parallel()
	for _, tc := range moneyThatDiffers {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, stripepolicy.CommandApplyPaymentSucceeded, 1)
			pay := f.p.payments[0]
			pi := map[string]any{"id": pay.externalID, "object": "payment_intent", "status": stripe.PaymentIntentStatusSucceeded,
				"amount": pay.amount, "amount_received": pay.amount, "currency": "usd"}
			tc.edit(pi, pay.amount)
			body, header := signedObject(testSecret, stripe.EventTypePaymentIntentSucceeded, "evt_differs", pi)

			resp := deliver(t.Context(), f.hook, body, header)
			if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "needs review") || !strings.Contains(resp.Body.String(), tc.reason) {
				t.Errorf("webhook answered %d %q, want 200 and needs review: %s", resp.Code, resp.Body.String(), tc.reason)
			}
			st := f.state(t, pay.externalID)
			if st.status != "pending" || len(st.ledger) != 0 || !st.findings[0].Open() {
				t.Errorf("after the webhook: %+v, want still pending, no ledger row, the finding open", st)
			}
		})
	}
}

func TestRepairOfASuccessInOtherMoneyGoesDead(t *testing.T) {
	t.Parallel()
	// The sweep found each payment pending and its PaymentIntent succeeded for the row's money;
	// by the repair, Stripe says otherwise, or the row does.
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *fixture, pay payment)
		reason string
	}{
		{"a partial capture at Stripe", func(t *testing.T, f *fixture, pay payment) {
			if err := f.srv.SetAmountReceived(pay.externalID, pay.amount/2); err != nil {
				t.Fatal(err)
			}
		}, "Stripe captured USD"},
		{"the row's amount changed", func(t *testing.T, f *fixture, pay payment) {
			f.exec(t, `UPDATE reconcile_demo.payments SET amount = amount + 100 WHERE external_id = $1`, pay.externalID)
		}, "its PaymentIntent USD"},
		{"the row's currency changed", func(t *testing.T, f *fixture, pay payment) {
			f.exec(t, `UPDATE reconcile_demo.payments SET currency = 'eur' WHERE external_id = $1`, pay.externalID)
		}, "is in EUR, its payment at Stripe in USD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, stripepolicy.CommandApplyPaymentSucceeded, 1)
			pay := f.p.payments[0]
			tc.change(t, f, pay)

			if n, err := f.d.Work(t.Context()); n != 1 || err != nil {
				t.Fatalf("Work = %d, %v; want 1 command claimed", n, err)
			}
			st := f.state(t, pay.externalID)
			if st.status != "pending" || len(st.ledger) != 0 || !st.findings[0].Open() {
				t.Errorf("after the repair: %+v, want still pending, no ledger row, the finding open", st)
			}
			if c := st.commands[0]; c.status != commandDead || !strings.Contains(c.lastError, tc.reason) {
				t.Errorf("command %+v, want dead with the conflict %q", c, tc.reason)
			}
		})
	}
}

// staleOnce reads payments through its paymentReader, except that its first read returns
// stale: the payment as another writer's slower read of Stripe would have it.
type staleOnce struct {
	paymentReader
	stale *stripepolicy.Payment
	reads atomic.Int32
}

func (s *staleOnce) Fetch(ctx context.Context, id string) (*stripepolicy.Payment, error) {
	if s.reads.Add(1) == 1 {
		return s.stale, nil
	}
	return s.paymentReader.Fetch(ctx, id)
}

// A writer that read Stripe before a second refund finds the row recording more than its read
// says, recorded by a writer that read Stripe after: it reads again, and finds nothing to change.
func TestAWriterWithAStaleReadOfARefundReadsAgain(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"webhook", "repair"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, stripepolicy.CommandApplyRefund, 1)
			pay := f.p.payments[0]
			ctx := t.Context()
			before, err := f.gateway.Fetch(ctx, pay.externalID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.srv.Refund(pay.externalID, 100); err != nil {
				t.Fatal(err)
			}
			// The other writer: the host's own refund flow, which records what Stripe confirmed.
			refunded := before.AmountRefunded() + 100
			f.exec(t, `UPDATE reconcile_demo.payments SET amount_refunded = $2 WHERE external_id = $1`, pay.externalID, refunded)
			reader := &staleOnce{paymentReader: f.gateway, stale: before}
			logger := slog.New(slog.NewTextHandler(t.Output(), nil))

			switch path {
			case "webhook":
				body, header := signedEvent(testSecret, stripe.EventTypeChargeRefunded, pay.externalID, pay.amount)
				resp := deliver(ctx, newWebhookHandler(f.pool, f.store, reader, testSecret, logger), body, header)
				if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "refunds already as at Stripe") {
					t.Errorf("webhook answered %d %q, want 200 and nothing to change", resp.Code, resp.Body.String())
				}
			case "repair":
				d, err := newDispatcher(f.pool, f.schema, f.store, reader, f.stats, logger)
				if err != nil {
					t.Fatal(err)
				}
				if n, err := d.Work(ctx); n != 1 || err != nil {
					t.Fatalf("Work = %d, %v; want 1 command claimed", n, err)
				}
				if c := f.state(t, pay.externalID).commands[0]; c.status != commandDone {
					t.Errorf("command %+v, want done", c)
				}
			}
			if n := reader.reads.Load(); n != 2 {
				t.Errorf("Stripe was read %d times, want twice", n)
			}
			st := f.state(t, pay.externalID)
			if st.refunded != refunded || len(st.ledger) != 0 || st.findings[0].Open() {
				t.Errorf("after the %s: %+v, want refunded %d as recorded, no ledger row, the finding resolved", path, st, refunded)
			}
		})
	}
}
