package stripeadapter_test

import (
	"testing"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/layout"
)

// The transport imports no policy, nor anything built on the kit: the packages above it
// depend on it, never the other way.
func TestTheKitImportsNoPolicy(t *testing.T) {
	t.Parallel()
	layout.ImportsNone(t, ".", "github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy",
		"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney",
		"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripeconnect",
		"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts")
}
