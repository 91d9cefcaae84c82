package console

import (
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// redactSecrets replaces anything in s that looks like a Stripe key. Every stored text a page
// shows goes through it: an adapter is meant to keep keys out of what it stores, and this is
// the console's own guard should one not.
func redactSecrets(s string) string {
	return redact.Keys(s)
}

// redactedKey is what redactSecrets (and the Monitor) put in place of a key.
const redactedKey = redact.Mask
