// Package redact removes Stripe secrets from text before it reaches an error, a log, a metric
// label, a health page or a console page. It is the one pattern every module of the project
// uses (stripeadapter, prommetrics, console, the health handler, cmd/reconcile), so that what
// one of them shows redacted no other shows in clear. Other modules import it: its exported
// names are only added within a major version (see internal/shared/README.md).
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces each secret Keys finds.
const Mask = "[redacted key]"

// keyPattern matches, wherever they occur:
//   - sk_, rk_ or pk_ with test_ or live_, whole or masked ("sk_test_****4242"): the mode
//     marks a key even when the rest is short or mangled;
//   - any other word starting sk_ or rk_ followed by at least eight key characters (the mode
//     is not always there, and proxies mangle keys);
//   - webhook signing secrets, whsec_ and letters and digits.
//
// Words that merely contain sk_ or rk_ ("desk_top", "work_item") do not match. No match
// takes in a quote or a backslash, and Mask holds neither, so JSON text stays JSON.
var keyPattern = regexp.MustCompile(`(?:sk|rk|pk)_(?:test|live)_[A-Za-z0-9_*]*|\b(?:sk|rk)_[A-Za-z0-9_*]{8,}|\bwhsec_[A-Za-z0-9_]+`)

// Keys returns s with anything that looks like a Stripe API key or webhook signing secret
// replaced by Mask.
func Keys(s string) string {
	if !strings.Contains(s, "k_") && !strings.Contains(s, "whsec_") {
		return s // the common case: nothing to look at
	}
	return keyPattern.ReplaceAllString(s, Mask)
}
