package stripeadapter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// 403 account_invalid says an account is missing only where the object is the account
// (Accounts' retrieve, its missingCode). On any other platform call it says nothing about the
// object asked for: taken for ErrNotFound, it would open a missing finding on every row of a
// PaymentIntents sweep. It stops the batch, as any other 403 does.
func TestAccountInvalidOnAnotherObjectIsNotItsAbsence(t *testing.T) {
	body := stripeError("invalid_request_error", "account_invalid", "The provided key does not have access to account 'acct_1'")
	stub := &cannedStripe{status: 403, body: body}
	g := newGateway(t, newStub(t, stub), nil)
	_, err := g.Fetch(context.Background(), "pi_1")
	if errors.Is(err, reconcile.ErrNotFound) || !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("a platform retrieve of a PaymentIntent answered 403 account_invalid: %v, want ErrAbortBatch", err)
	}
	_, err = g.FetchBatch(context.Background(), []reconcile.Lookup{{ExternalID: "pi_1", CreatedAt: time.Now()}, {ExternalID: "pi_2", CreatedAt: time.Now()}}, noWait)
	if errors.Is(err, reconcile.ErrNotFound) || !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("a platform list answered 403 account_invalid: %v, want ErrAbortBatch", err)
	}
}
