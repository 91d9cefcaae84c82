package console

import (
	"strings"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// The reasons a failure is shown as: a short fixed phrase, never the failure's text, which may
// hold SQL, host names or, echoed back by a broken server, a credential.
const (
	reasonDatabase     = "database error"
	reasonUnavailable  = "external system unavailable"
	reasonRateLimited  = "rate limited"
	reasonAuth         = "authentication rejected by the external system"
	reasonInvalid      = "invalid request"
	reasonCancelled    = "cancelled/timeout"
	reasonOtherFailure = "other error"
)

// failureReason classifies a failure's text as pgstore records it (the error's message: see
// pgstore's RecordFailure and RecordLaneFailure) into one of the fixed reasons. The text is
// matched against the sentinel errors reconcile's gateways wrap (ErrRateLimited,
// ErrAbortBatch, ErrUnavailable) and the marks of a database or context error; anything else
// is "other error".
func failureReason(text string) string {
	switch text {
	case reasonDatabase, reasonUnavailable, reasonRateLimited, reasonAuth, reasonInvalid, reasonCancelled, reasonOtherFailure:
		return text // classified already, by a host's Store
	}
	t := strings.ToLower(text)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(t, s) {
				return true
			}
		}
		return false
	}
	switch {
	// The sentinels a gateway wraps say what happened, whatever else the text holds.
	case has(strings.ToLower(reconcile.ErrRateLimited.Error())):
		return reasonRateLimited
	case has(strings.ToLower(reconcile.ErrAbortBatch.Error())):
		return reasonAuth
	case has(strings.ToLower(reconcile.ErrUnavailable.Error())):
		return reasonUnavailable
	case has("sqlstate"):
		return reasonDatabase
	case has("context canceled", "context deadline exceeded", "timeout", "timed out"):
		return reasonCancelled
	case has("refused the batch's first call", "rate_limit", "rate limit", "too many requests"):
		return reasonRateLimited
	case has("api key was rejected", "lacks permission", "unauthorized", "authentication"):
		return reasonAuth
	case has("pgstore:", "pgx", "postgres", "failed to connect to", "database"):
		return reasonDatabase
	case has("unavailable", "connection refused", "no such host", "bad gateway"):
		return reasonUnavailable
	case has("needs review", "invalid"):
		return reasonInvalid
	}
	return reasonOtherFailure
}

// redactSecrets replaces anything in s that looks like a Stripe key. Every stored text a page
// shows goes through it: an adapter is meant to keep keys out of what it stores, and this is
// the console's own guard should one not.
func redactSecrets(s string) string {
	return redact.Keys(s)
}

// showableStatus is st with its failure texts replaced by their reasons and its other stored
// texts redacted, for EvaluateHealth's reasons on the overview.
func showableStatus(st reconcile.Status) reconcile.Status {
	if st.LastFailure != "" || !st.LastFailureAt.IsZero() {
		st.LastFailure = failureReason(st.LastFailure)
	}
	if len(st.Lanes) > 0 {
		lanes := make([]reconcile.LaneStatus, len(st.Lanes))
		for i, l := range st.Lanes {
			if l.LastFailure != "" || !l.LastFailureAt.IsZero() {
				l.LastFailure = failureReason(l.LastFailure)
			}
			l.Lane, l.GapReason = redactSecrets(l.Lane), redactSecrets(l.GapReason)
			lanes[i] = l
		}
		st.Lanes = lanes
	}
	return st
}
