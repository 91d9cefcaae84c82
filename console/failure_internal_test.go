package console

import "testing"

func TestFailureReasonsAreClassified(t *testing.T) {
	t.Parallel()
	const key = "sk_test_51FakeKeyForTheConsoleTests0123456789abcdef"
	for text, want := range map[string]string{
		`reconcile: job sweep: read: pgstore: read batch: ERROR: column h.status does not exist (SQLSTATE 42703)`:          "database error",
		`pgstore: record failure of job sweep: failed to connect to host=db user=app: dial error`:                          "database error",
		`stripeadapter: retrieve pi_1: reconcile: external system unavailable: Invalid API Key provided: ` + key:           "external system unavailable",
		`reconcile: lane events: feed: reconcile: rate limited by external system (retry after 2s)`:                        "rate limited",
		`deferred: the limiter (or a rate limit) refused the batch's first call`:                                           "rate limited",
		`stripeadapter: retrieve: the API key was rejected: it is wrong, expired or revoked (x): reconcile: batch aborted`: "authentication rejected by the external system",
		`stripeadapter: retrieve: the API key lacks permission to read PaymentIntents (x): reconcile: batch aborted`:       "authentication rejected by the external system",
		`reconcile: job sweep: context deadline exceeded`:                                                                  "cancelled/timeout",
		`reconcile: job sweep: context canceled`:                                                                           "cancelled/timeout",
		`reconcile: needs review: rejected_by_external_system: invalid_request_error`:                                      "invalid request",
		`something nobody expected ` + key:                                                                                 "other error",
		``:                                                                                                                 "other error",
		`stripeadapter: retrieve: dial tcp: lookup api.stripe.com: no such host`:                                           "external system unavailable",
	} {
		if got := failureReason(failureReason(text)); got != want {
			t.Errorf("failureReason twice on %q = %q, want %q", text, got, want)
		}
		if got := failureReason(text); got != want {
			t.Errorf("failureReason(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"key sk_test_51AbC0123xyz here":        "key [redacted key] here",
		"sk_live_51AbC0123xyz":                 "[redacted key]",
		"restricted rk_live_9zz and rk_test_1": "restricted [redacted key] and [redacted key]",
		"masked sk_test_****4242 too":          "masked [redacted key] too",
		"webhook whsec_abc123":                 "webhook [redacted key]",
		"no key: sk_ or desk_top or pi_123":    "no key: sk_ or desk_top or pi_123",
	} {
		if got := redactSecrets(in); got != want {
			t.Errorf("redactSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}
