package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
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
	f := newFixture(t, stripeadapter.CommandApplyPaymentSucceeded, 1)
	pay := f.p.payments[0]
	var logs bytes.Buffer
	h := newWebhookHandler(f.pool, f.store, testSecret, slog.New(slog.NewTextHandler(&logs, nil)))

	body, header := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, pay.externalID, pay.amount)
	sign := func(body []byte, secret string, at time.Time) string {
		return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
	}
	tampered := bytes.Replace(body, []byte(`"amount":`), []byte(`"amount":9`), 1)
	unknown, unknownHeader := signedEvent(testSecret, stripe.EventTypePaymentIntentSucceeded, "pi_NotAPaymentOfThisTable0", 500)
	other, otherHeader := signedEvent(testSecret, stripe.EventTypePaymentIntentCreated, pay.externalID, pay.amount)
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
	f := newFixture(t, stripeadapter.CommandApplyPaymentSucceeded, 1)
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
	f := newFixture(t, stripeadapter.CommandApplyPaymentCanceled, 1)
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
	f := newFixture(t, stripeadapter.CommandApplyPaymentSucceeded, 1)
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
	assertAppliedOnce(t, f.state(t, f.p.payments[0].externalID), paid, actorReconciler)
}
