package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// send makes a request to h as Stripe would, with any method.
func send(h http.Handler, method string, body []byte, header string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, webhookPath, bytes.NewReader(body))
	if header != "" {
		req.Header.Set("Stripe-Signature", header)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestWebhookChangesNothingForARequestItCannotTrustOrUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyPaymentSucceeded, 1)
	pay := f.p.payments[0]
	var logs bytes.Buffer
	h := newWebhookHandler(f.pool, f.store, f.gateway, testSecret, slog.New(slog.NewTextHandler(&logs, nil)))

	body, header := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, pay.externalID, pay.amount)
	sign := func(body []byte, secret string, at time.Time) string {
		return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
	}
	tampered := bytes.Replace(body, []byte(`"amount":`), []byte(`"amount":9`), 1)
	unknown, unknownHeader := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, "pi_NotAPaymentOfThisTable0", 500)
	other, otherHeader := signedEvent(testSecret, stripe.EventTypePaymentIntentCreated, pay.externalID, pay.amount)
	unknownRefund, unknownRefundHeader := signedEvent(testSecret, stripe.EventTypeChargeRefunded, "pi_NotAPaymentOfThisTable0", 500)
	orphan := []byte(`{"id": "evt_1", "object": "event", "type": "charge.dispute.created",
		"data": {"object": {"id": "dp_1", "object": "dispute", "charge": "ch_1"}}}`)
	huge := append(bytes.Clone(body[:len(body)-1]), []byte(`,"padding":"`+strings.Repeat("x", maxWebhookBody)+`"}`)...)

	for _, tc := range []struct {
		name         string
		method       string
		body         []byte
		header       string
		want         int
		wantResponse string
	}{
		{"a signature made with another secret is refused with 400", http.MethodPost, body, sign(body, "whsec_other", time.Now()),
			http.StatusBadRequest, "invalid signature"},
		{"a body changed after signing is refused with 400", http.MethodPost, tampered, header,
			http.StatusBadRequest, "invalid signature"},
		{"a request without a signature is refused with 400", http.MethodPost, body, "",
			http.StatusBadRequest, "invalid signature"},
		{"a signature older than five minutes is refused with 400", http.MethodPost, body, sign(body, testSecret, time.Now().Add(-10*time.Minute)),
			http.StatusBadRequest, "invalid signature"},
		{"a GET is refused with 405", http.MethodGet, nil, "",
			http.StatusMethodNotAllowed, "only POST"},
		{"a PUT of a signed event is refused with 405", http.MethodPut, body, header,
			http.StatusMethodNotAllowed, "only POST"},
		{"a body over 64 KiB is refused with 413", http.MethodPost, huge, sign(huge, testSecret, time.Now()),
			http.StatusRequestEntityTooLarge, "too large"},
		{"an event about a PaymentIntent no payment has is acknowledged with 200", http.MethodPost, unknown, unknownHeader,
			http.StatusOK, "no payment for pi_NotAPaymentOfThisTable0"},
		{"an event of a type the handler does not apply is acknowledged with 200", http.MethodPost, other, otherHeader,
			http.StatusOK, "ignored payment_intent.created"},
		{"a refund of a PaymentIntent no payment has is acknowledged with 200", http.MethodPost, unknownRefund, unknownRefundHeader,
			http.StatusOK, "no payment for pi_NotAPaymentOfThisTable0"},
		// Stripe would redeliver a 4xx for three days, and each time meet the same payload.
		{"a dispute that names no PaymentIntent is acknowledged with 200", http.MethodPost, orphan, sign(orphan, testSecret, time.Now()),
			http.StatusOK, "ignored charge.dispute.created: no PaymentIntent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(h, tc.method, tc.body, tc.header)
			if resp.Code != tc.want || !strings.Contains(resp.Body.String(), tc.wantResponse) {
				t.Errorf("answered %d %q, want %d %q", resp.Code, resp.Body.String(), tc.want, tc.wantResponse)
			}
			if tc.want == http.StatusMethodNotAllowed && resp.Header().Get("Allow") != http.MethodPost {
				t.Errorf("Allow: %q, want POST", resp.Header().Get("Allow"))
			}
			st := f.state(t, pay.externalID)
			if st.status != pending || len(st.ledger) != 0 || !st.findings[0].Open() || st.commands[0].status != "pending" {
				t.Errorf("the request changed something: %+v", st)
			}
		})
	}
	if strings.Contains(logs.String(), testSecret) {
		t.Errorf("the logs show the signing secret:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "rejected") {
		t.Errorf("the rejected requests were not logged:\n%s", logs.String())
	}

	// The same handler applies the genuine event.
	if resp := send(h, http.MethodPost, body, header); resp.Code != http.StatusOK {
		t.Errorf("the signed event was answered %d %q, want 200", resp.Code, resp.Body.String())
	}
	if st := f.state(t, pay.externalID); st.status != paid || len(st.ledger) != 1 {
		t.Errorf("after the signed event: %+v, want paid with one ledger row", st)
	}
}

func TestWebhookLeavesAConflictForAPerson(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyPaymentSucceeded, 1)
	pay := f.p.payments[0]
	body, header := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, pay.externalID, pay.amount)
	if resp := deliver(t.Context(), f.hook, body, header); resp.Code != http.StatusOK {
		t.Fatalf("success webhook answered %d %q", resp.Code, resp.Body.String())
	}

	// A cancel for a paid payment: acknowledged, since redelivery cannot help, and not applied.
	body, header = signedEvent(testSecret, stripe.EventTypePaymentIntentCanceled, pay.externalID, pay.amount)
	resp := deliver(t.Context(), f.hook, body, header)
	if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "needs review") {
		t.Errorf("cancel webhook answered %d %q, want 200 and needs review", resp.Code, resp.Body.String())
	}
	if st := f.state(t, pay.externalID); st.status != paid || len(st.ledger) != 1 {
		t.Errorf("after the cancel: %+v, want still paid with one ledger row", st)
	}
}

func TestRepairOfAPaymentThatMovedElsewhereGoesDeadAndLeavesItsFindingOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyPaymentCanceled, 1)
	pay := f.p.payments[0]
	// A success arrives for the payment the reconciler found canceled at Stripe.
	body, header := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, pay.externalID, pay.amount)
	if resp := deliver(t.Context(), f.hook, body, header); resp.Code != http.StatusOK {
		t.Fatalf("success webhook answered %d %q", resp.Code, resp.Body.String())
	}

	if n, err := f.d.Work(t.Context()); n != 1 || err != nil {
		t.Fatalf("Work = %d, %v; want 1 command claimed", n, err)
	}
	st := f.state(t, pay.externalID)
	if st.status != paid || len(st.ledger) != 1 {
		t.Errorf("payment %+v, want left paid with its one ledger row", st)
	}
	if !st.findings[0].Open() {
		t.Errorf("the missed_cancel finding was resolved by %q, want it left open for a person", st.findings[0].ResolvedBy)
	}
	if c := st.commands[0]; c.status != commandDead || c.failures != 1 || !strings.Contains(c.lastError, "is paid, not pending or failed") {
		t.Errorf("command %+v, want dead at its first attempt with the conflict as its error", c)
	}
}

func TestRepairWithARecordIDThatIsNotAPaymentIDGoesDead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyPaymentSucceeded, 1)
	_, err := f.pool.Exec(t.Context(), inSchema(f.schema, `INSERT INTO reconcile_demo.reconcile_outbox
		(aggregate_type, aggregate_id, event_type, finding_id, payload)
		VALUES ('payment', 'ord_000001', 'ApplyPaymentSucceeded', 999,
			'{"job": "payments-sweep", "record_id": "ord_000001", "finding_id": 999}')`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := drain(t.Context(), f.d); err != nil {
		t.Fatal(err)
	}
	dead, err := f.d.DeadCommands(t.Context(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].AggregateID != "ord_000001" || dead[0].Failures != 1 ||
		!strings.Contains(dead[0].LastError, `record id "ord_000001" is not a payment id`) {
		t.Errorf("dead commands %+v, want the one with a bad record id, dead at its first attempt", dead)
	}
	// The genuine command beside it applied.
	assertAppliedOnce(t, f.p.payments[0], f.state(t, f.p.payments[0].externalID), "", actorReconciler)
}

func TestWebhookLeavesARefundThatFailedAtStripeForAPerson(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyRefund, 1)
	pay := f.p.payments[0]
	body, header := signedEvent(testSecret, stripe.EventTypeChargeRefunded, pay.externalID, pay.amount)
	if resp := deliver(t.Context(), f.hook, body, header); resp.Code != http.StatusOK {
		t.Fatalf("refund webhook answered %d %q", resp.Code, resp.Body.String())
	}
	before := f.state(t, pay.externalID)
	if before.refunded != pay.refund() || len(before.ledger) != 1 {
		t.Fatalf("after the refund: %+v, want %d refunded with one ledger row", before, pay.refund())
	}

	// The refund fails at Stripe: the money went back to the customer's closed card, and
	// Stripe took it back. Recording less refunded than the row does is not the writer's call.
	if err := f.srv.SetRefundStatus(pay.refundID, stripe.RefundStatusFailed, string(stripe.RefundFailureReasonExpiredOrCanceledCard)); err != nil {
		t.Fatal(err)
	}
	for _, event := range []stripe.EventType{stripe.EventTypeRefundFailed, stripe.EventTypeChargeRefundUpdated} {
		body, header = signedEvent(testSecret, event, pay.externalID, pay.amount)
		resp := deliver(t.Context(), f.hook, body, header)
		if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "refunded, Stripe only USD 0.00, not changed: needs review") {
			t.Errorf("%s webhook answered %d %q, want 200 and needs review", event, resp.Code, resp.Body.String())
		}
	}
	if st := f.state(t, pay.externalID); st.refunded != before.refunded || !slices.Equal(st.ledger, before.ledger) {
		t.Errorf("after the failed refund: %+v, want it as it was: %+v", st, before)
	}
}

func TestWebhookReadsADisputesOutcomeFromStripeNotFromTheEventType(t *testing.T) {
	t.Parallel()
	f := newFixtureOf(t, &disputeUnderReview, 1)
	pay := f.p.payments[0]
	if err := f.srv.SetDisputeStatus(pay.disputeID, stripe.DisputeStatusWon); err != nil {
		t.Fatal(err)
	}
	// charge.dispute.closed says neither won nor lost; Stripe's dispute says won.
	body, header := signedEvent(testSecret, stripe.EventTypeChargeDisputeClosed, pay.externalID, pay.amount)
	if resp := deliver(t.Context(), f.hook, body, header); resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "dispute recorded") {
		t.Fatalf("dispute webhook answered %d %q, want 200 and the dispute recorded", resp.Code, resp.Body.String())
	}
	if st := f.state(t, pay.externalID); st.dispute != string(stripe.DisputeStatusWon) || len(st.ledger) != 0 {
		t.Errorf("after the dispute closed: %+v, want dispute won and no ledger row", st)
	}
}

// A dispute lost, or one that needs a response by its due_by, is a person's: were the writer
// to record it, the row would agree with Stripe and no finding would ever ask anyone.
func TestWebhookLeavesADisputeLostOrNeedingAResponseForAPerson(t *testing.T) {
	t.Parallel()
	for _, status := range []stripe.DisputeStatus{stripe.DisputeStatusLost, stripe.DisputeStatusNeedsResponse, stripe.DisputeStatusWarningNeedsResponse} {
		t.Run(string(status), func(t *testing.T) {
			t.Parallel()
			f := newFixtureOf(t, &disputeUnderReview, 1)
			pay := f.p.payments[0]
			if err := f.srv.SetDisputeStatus(pay.disputeID, status); err != nil {
				t.Fatal(err)
			}
			for _, event := range []stripe.EventType{stripe.EventTypeChargeDisputeUpdated, stripe.EventTypeChargeDisputeClosed} {
				body, header := signedEvent(testSecret, event, pay.externalID, pay.amount)
				resp := deliver(t.Context(), f.hook, body, header)
				if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "has a dispute "+string(status)+" at Stripe, not changed: needs review") {
					t.Errorf("%s webhook answered %d %q, want 200 and needs review", event, resp.Code, resp.Body.String())
				}
			}
			st := f.state(t, pay.externalID)
			if st.dispute != "" || len(st.ledger) != 0 {
				t.Errorf("after the webhooks: %+v, want no dispute recorded and no ledger row", st)
			}
			// And so the policy still sends it to a person.
			at, err := f.gateway.Fetch(t.Context(), pay.externalID)
			if err != nil {
				t.Fatal(err)
			}
			row := paymentRow{Status: st.status, Amount: pay.amount, Currency: "usd", AmountRefunded: st.refunded}
			if d := moneyPolicy.Classify(row, at); d.Verdict != reconcile.NeedsReview {
				t.Errorf("the row after the webhooks is judged %v %s, want NeedsReview", d.Verdict, d.Kind)
			}
		})
	}
}

// A payment that failed here and succeeded at Stripe is a person's (money taken for an order
// we gave up on); a refund at Stripe does not make it a payment of our books.
func TestWebhookLeavesARefundOfAPaymentThatFailedHereForAPerson(t *testing.T) {
	t.Parallel()
	i := slices.IndexFunc(stories, func(s story) bool { return s.local == failed && s.external == stripe.PaymentIntentStatusSucceeded })
	f := newFixtureOf(t, &stories[i], 1)
	pay := f.p.payments[0]
	if _, err := f.srv.Refund(pay.externalID, 500); err != nil {
		t.Fatal(err)
	}
	body, header := signedEvent(testSecret, stripe.EventTypeChargeRefunded, pay.externalID, pay.amount)
	resp := deliver(t.Context(), f.hook, body, header)
	if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "is failed, Stripe refunded USD 5.00 of it, not changed: needs review") {
		t.Errorf("refund webhook answered %d %q, want 200 and needs review", resp.Code, resp.Body.String())
	}
	if st := f.state(t, pay.externalID); st.status != failed || st.refunded != 0 || len(st.ledger) != 0 {
		t.Errorf("after the refund webhook: %+v, want failed, nothing refunded, no ledger row", st)
	}
}

func TestWebhookAsksStripeToRetryWhenItCannotReadThePayment(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyRefund, 1)
	pay := f.p.payments[0]
	f.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: http.StatusServiceUnavailable, ID: pay.externalID})
	body, header := signedEvent(testSecret, stripe.EventTypeChargeRefunded, pay.externalID, pay.amount)
	if resp := deliver(t.Context(), f.hook, body, header); resp.Code != http.StatusInternalServerError {
		t.Errorf("refund webhook with Stripe unavailable answered %d %q, want 500 for Stripe to retry", resp.Code, resp.Body.String())
	}
	if st := f.state(t, pay.externalID); st.refunded != 0 || len(st.ledger) != 0 || !st.findings[0].Open() {
		t.Errorf("after the failed read: %+v, want nothing changed", st)
	}

	// Stripe's retry, once it can be read, applies the refund.
	f.srv.ClearFaults()
	if resp := deliver(t.Context(), f.hook, body, header); resp.Code != http.StatusOK {
		t.Errorf("the retry answered %d %q, want 200", resp.Code, resp.Body.String())
	}
	if st := f.state(t, pay.externalID); st.refunded != pay.refund() {
		t.Errorf("after the retry: %+v, want %d refunded", st, pay.refund())
	}
}

func TestARefundOfAPaymentIntentStripeDoesNotHaveIsNeitherRetriedNorApplied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyRefund, 1)
	pay := f.p.payments[0]
	f.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: http.StatusNotFound, Type: "invalid_request_error",
		Code: "resource_missing", Message: "No such payment_intent", ID: pay.externalID})

	body, header := signedEvent(testSecret, stripe.EventTypeChargeRefunded, pay.externalID, pay.amount)
	resp := deliver(t.Context(), f.hook, body, header)
	if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "Stripe does not have "+pay.externalID) {
		t.Errorf("refund webhook answered %d %q, want 200: a retry cannot help", resp.Code, resp.Body.String())
	}
	if n, err := f.d.Work(t.Context()); n != 1 || err != nil {
		t.Fatalf("Work = %d, %v; want 1 command claimed", n, err)
	}
	st := f.state(t, pay.externalID)
	if st.refunded != 0 || len(st.ledger) != 0 || !st.findings[0].Open() {
		t.Errorf("payment %+v, want nothing changed and its finding open", st)
	}
	if c := st.commands[0]; c.status != commandDead || c.failures != 1 || !strings.Contains(c.lastError, "read "+pay.externalID+" at Stripe") {
		t.Errorf("command %+v, want dead at its first attempt", c)
	}
}

func TestWebhookLeavesARefundLargerThanThePaymentForAPerson(t *testing.T) {
	t.Parallel()
	// The order was cut by 5.00 after checkout and the PaymentIntent was not; then the whole
	// PaymentIntent was refunded: more than the row charges.
	f := newFixtureOf(t, &story{name: "amount cut here, refunded whole at Stripe", local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{amountOff: -500, refunded: 1},
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindAmountMismatch}, 1)
	pay := f.p.payments[0]
	body, header := signedEvent(testSecret, stripe.EventTypeChargeRefunded, pay.externalID, pay.amount)
	resp := deliver(t.Context(), f.hook, body, header)
	want := fmt.Sprintf("charges %s, Stripe refunded %s, not changed: needs review",
		reconcile.FormatAmount(pay.amount, "usd"), reconcile.FormatAmount(pay.refund(), "usd"))
	if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), want) {
		t.Errorf("refund webhook answered %d %q, want 200 and %q", resp.Code, resp.Body.String(), want)
	}
	if st := f.state(t, pay.externalID); st.refunded != 0 || len(st.ledger) != 0 || !st.findings[0].Open() {
		t.Errorf("payment %+v, want nothing changed and its finding open", st)
	}
}
