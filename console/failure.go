package console

import (
	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// redactSecrets replaces anything in s that looks like a Stripe key. Every stored text a page
// shows goes through it: an adapter is meant to keep keys out of what it stores, and this is
// the console's own guard should one not.
func redactSecrets(s string) string {
	return redact.Keys(s)
}

// showableStatus is st with its failure texts replaced by their reasons
// (reconcile.FailureReason) and its other stored texts redacted, for EvaluateHealth's reasons
// on the overview.
func showableStatus(st reconcile.Status) reconcile.Status {
	if st.LastFailure != "" || !st.LastFailureAt.IsZero() {
		st.LastFailure = reconcile.FailureReason(st.LastFailure)
	}
	if len(st.Lanes) > 0 {
		lanes := make([]reconcile.LaneStatus, len(st.Lanes))
		for i, l := range st.Lanes {
			if l.LastFailure != "" || !l.LastFailureAt.IsZero() {
				l.LastFailure = reconcile.FailureReason(l.LastFailure)
			}
			l.Lane, l.GapReason = redactSecrets(l.Lane), redactSecrets(l.GapReason)
			lanes[i] = l
		}
		st.Lanes = lanes
	}
	return st
}
