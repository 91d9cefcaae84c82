package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// transitions are the outcomes both the webhook and the repairs apply.
var transitions = []struct {
	name    string
	command string
	event   stripe.EventType
	to      string
}{
	{"a missed success", stripeadapter.CommandApplyPaymentSucceeded, stripe.EventTypePaymentIntentSucceeded, paid},
	{"a missed cancel", stripeadapter.CommandApplyPaymentCanceled, stripe.EventTypePaymentIntentCanceled, failed},
}

func TestWebhookThenRepairAppliesOnceByTheWebhook(t *testing.T) {
	t.Parallel()
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tr.command, 1)
			pay := f.p.payments[0]
			body, header := signedEvent(testSecret, tr.event, pay.externalID, pay.amount)

			resp := deliver(t.Context(), f.hook, body, header)
			if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "pending -> "+tr.to) {
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
			assertAppliedOnce(t, f.state(t, pay.externalID), tr.to, actorWebhook)
		})
	}
}

func TestRepairThenWebhookAppliesOnceByTheRepair(t *testing.T) {
	t.Parallel()
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tr.command, 1)
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
				if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "already "+tr.to) {
					t.Errorf("webhook answered %d %q, want 200 and nothing changed", resp.Code, resp.Body.String())
				}
			}
			assertAppliedOnce(t, f.state(t, pay.externalID), tr.to, actorReconciler)
		})
	}
}

// Both paths start together behind a barrier, on a fresh payment each round: whichever takes
// the row lock first changes the payment; the other's guarded update waits for it to commit,
// then matches no row.
func TestWebhookAndRepairAtOnceApplyOnce(t *testing.T) {
	t.Parallel()
	const rounds = 20
	var webhookWon, repairWon atomic.Int64
	t.Run("rounds", func(t *testing.T) {
		for i := range rounds {
			t.Run(fmt.Sprintf("round %d", i+1), func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				f := newFixture(t, stripeadapter.CommandApplyPaymentSucceeded, 1)
				pay := f.p.payments[0]
				body, header := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, pay.externalID, pay.amount)

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
				webhookChanged := strings.Contains(resp.Body.String(), "pending -> paid")
				repairChanged := f.stats.changed.Load() == 1
				// The repair either ran the writer (changing the payment, or finding it changed
				// by the webhook a moment before) or was skipped because the webhook had
				// already resolved its finding; either way exactly one path changed it.
				if webhookChanged == repairChanged || f.stats.changed.Load()+f.stats.unchanged.Load() > 1 {
					t.Fatalf("webhook %q, repair changed %d and unchanged %d: want exactly one of them to change the payment",
						resp.Body.String(), f.stats.changed.Load(), f.stats.unchanged.Load())
				}
				winner := actorReconciler
				if webhookChanged {
					winner = actorWebhook
					webhookWon.Add(1)
				} else {
					repairWon.Add(1)
				}
				assertAppliedOnce(t, f.state(t, pay.externalID), paid, winner)
				// Nothing is left to retry.
				if n, err := f.d.Work(ctx); n != 0 || err != nil {
					t.Errorf("Work after the race = %d, %v; want nothing to claim", n, err)
				}
			})
		}
	})
	t.Logf("of %d rounds, the webhook changed the payment in %d, the repair in %d", rounds, webhookWon.Load(), repairWon.Load())
}
