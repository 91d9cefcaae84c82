package stripeadapter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A missing_externally finding says what Stripe answered about the id (a 404, resource_missing,
// its message) so that a reviewer need not ask again, without the key.
func TestAMissingExternallyFindingSaysWhatStripeAnswered(t *testing.T) {
	t.Parallel()
	w := newCovWorld(t, 3, false)
	const gone = "pi_3NoSuchIntent0000000000"
	if _, err := w.pool.Exec(context.Background(), `UPDATE payments SET external_id = $1 WHERE id = 2`, gone); err != nil {
		t.Fatal(err)
	}
	reconciletest.Cycle(t, w.config(w.gw, 10), 2)
	fs, err := w.store.ListFindings(context.Background(), reconcile.FindingQuery{Job: "sweep"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Kind != reconcile.KindMissingExternally {
		t.Fatalf("findings %+v; want one missing_externally", fs)
	}
	d := fs[0].Detail
	t.Logf("detail: %s", d)
	for _, want := range []string{gone, "404", "resource_missing"} {
		if !strings.Contains(d, want) {
			t.Errorf("detail %q does not say %q", d, want)
		}
	}
	if strings.Contains(d, w.srv.Key()) || strings.Contains(d, "sk_") {
		t.Errorf("detail %q holds the key", d)
	}
}
