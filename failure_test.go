package reconcile_test

import (
	"testing"

	"github.com/reconcilekit/reconcile"
)

func TestFailureReasonClassifiesEveryFailure(t *testing.T) {
	t.Parallel()
	const key = "sk_test_51FakeKeyForTheConsoleTests0123456789abcdef"
	for text, want := range map[string]string{
		`reconcile: job sweep: read: pgstore: read batch: ERROR: column h.status does not exist (SQLSTATE 42703)`:          "database error",
		`pgstore: record failure of job sweep: failed to connect to host=db user=app: dial error`:                          "database error",
		`stripeadapter: retrieve pi_1: reconcile: external system unavailable: Invalid API Key provided: ` + key:           "external system unavailable",
		`gateway: reconcile: external system unavailable: dial postgres://ledger:hunter2@ledger-db:5432/ledger`:            "external system unavailable",
		`reconcile: lane events: feed: reconcile: rate limited by external system (retry after 2s)`:                        "rate limited",
		`deferred: the limiter (or a rate limit) refused the batch's first call`:                                           "rate limited",
		`stripeadapter: retrieve: the API key was rejected: it is wrong, expired or revoked (x): reconcile: batch aborted`: "authentication rejected by the external system",
		`stripeadapter: retrieve: the API key lacks permission to read PaymentIntents (x): reconcile: batch aborted`:       "authentication rejected by the external system",
		`reconcile: job sweep: context deadline exceeded`:                                                                  "cancelled/timeout",
		`reconcile: job sweep: context canceled`:                                                                           "cancelled/timeout",
		`reconcile: needs review: rejected_by_external_system: invalid_request_error`:                                      "invalid request",
		`something nobody expected ` + key:                                                                                 "other error",
		"looks fine\nOK: 1 of 1 jobs healthy":                                                                              "other error",
		``:                                                                                                                 "other error",
		`stripeadapter: retrieve: dial tcp: lookup api.stripe.com: no such host`:                                           "external system unavailable",
	} {
		if got := reconcile.FailureReason(text); got != want {
			t.Errorf("FailureReason(%q) = %q, want %q", text, got, want)
		}
		if got := reconcile.FailureReason(reconcile.FailureReason(text)); got != want {
			t.Errorf("FailureReason twice on %q = %q, want %q", text, got, want)
		}
	}
}

// Whatever a failure's text, its reason is one of the fixed phrases: none of the text goes out.
func FuzzFailureReason(f *testing.F) {
	for _, s := range []string{"", "pgstore: ERROR (SQLSTATE 42P01)", "reconcile: rate limited by external system", "a\nOK: 1 of 1 jobs healthy", "\x1b]0;title\a"} {
		f.Add(s)
	}
	phrases := map[string]bool{"database error": true, "external system unavailable": true, "rate limited": true,
		"authentication rejected by the external system": true, "invalid request": true, "cancelled/timeout": true, "other error": true}
	f.Fuzz(func(t *testing.T, text string) {
		if got := reconcile.FailureReason(text); !phrases[got] {
			t.Fatalf("FailureReason(%q) = %q, not one of the phrases", text, got)
		}
	})
}
