package reconciletest

import (
	"context"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// testStaleThreshold checks that a store's Status says which findings it counts as stale
// (Status.StaleAfter), so that the surfaces that show the count (the health reasons, the
// console's link to the stale findings) need not be told the threshold a second time.
func testStaleThreshold(t *testing.T, f Fixture) {
	sr, ok := f.Store().(reconcile.StatusReader)
	if !ok {
		t.Log("the store is not a reconcile.StatusReader: nothing to check")
		return
	}
	Cycle(t, Config(f, "sweep", drift(f, t), 7), 10)
	st, err := sr.Status(context.Background(), "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if st.StaleAfter <= 0 {
		t.Fatalf("Status.StaleAfter = %v; want the store's threshold", st.StaleAfter)
	}
	if len(st.OpenFindings) == 0 || st.StaleFindings != 0 {
		t.Fatalf("open findings %v, %d stale; want this cycle's findings, none open longer than %v", st.OpenFindings, st.StaleFindings, st.StaleAfter)
	}
	st.StaleFindings = 1
	h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{})
	for _, c := range h.Checks {
		if c.Name == "stale_findings" && !strings.Contains(c.Reason, "open longer than "+st.StaleAfter.String()) {
			t.Errorf("the stale_findings reason %q does not say the store's threshold %v", c.Reason, st.StaleAfter)
		}
	}
}
