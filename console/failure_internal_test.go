package console

import "testing"

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
