package redact_test

import (
	"testing"

	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"no key: sk_ or desk_top or pi_123", "no key: sk_ or desk_top or pi_123"},
		{"work_items and task_list_for_today", "work_items and task_list_for_today"},
		{"key sk_test_51AbC0123xyz here", "key [redacted key] here"},
		{"sk_live_51AbC0123xyz", "[redacted key]"},
		{"restricted rk_live_9zz and rk_test_1", "restricted [redacted key] and [redacted key]"},
		{"masked sk_test_****4242 too", "masked [redacted key] too"},
		{"publishable pk_live_abc", "publishable [redacted key]"},
		{"mode only sk_test_", "mode only [redacted key]"},
		{"no mode sk_0123456789abcdef", "no mode [redacted key]"},
		{"no mode, short sk_0123456", "no mode, short sk_0123456"},
		{"no mode, mangled rk_abc_defgh", "no mode, mangled [redacted key]"},
		{"webhook whsec_abc123", "webhook [redacted key]"},
		{"Bearer sk_live_x,sk_test_y;", "Bearer [redacted key],[redacted key];"},
		{"glued xsk_test_abc", "glued x[redacted key]"},
		{`"sk_live_abc"`, `"[redacted key]"`},
		{"unexpected:active->sk_live_51Zz", "unexpected:active->[redacted key]"},
		{`{"detail":"key sk_live_51Zz\"x","note":"rk_test_1\\n"}`, `{"detail":"key [redacted key]\"x","note":"[redacted key]\\n"}`},
	} {
		if got := redact.Keys(tc.in); got != tc.want {
			t.Errorf("Keys(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := redact.Keys(redact.Keys(tc.in)); got != tc.want {
			t.Errorf("Keys twice on %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}
