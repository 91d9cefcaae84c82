package reconcile

import "strings"

// The phrases FailureReason classifies a failure into.
const (
	reasonDatabase    = "database error"
	reasonUnavailable = "external system unavailable"
	reasonRateLimited = "rate limited"
	reasonAuth        = "authentication rejected by the external system"
	reasonInvalid     = "invalid request"
	reasonTimeout     = "cancelled/timeout"
	reasonOther       = "other error"
)

// FailureReason classifies the text of a failure, as a store records it (Status.LastFailure,
// LaneStatus.LastFailure: the error's message), into one short fixed phrase: "database error",
// "external system unavailable", "rate limited", "authentication rejected by the external
// system", "invalid request", "cancelled/timeout" or "other error". Surfaces that may be read
// by people who must not see the failure's text (which can hold SQL, schema and host names, or
// a credential a broken server echoed back) show this instead: the health endpoint and the
// review console do. The text is matched against the sentinel errors gateways wrap
// (ErrRateLimited, ErrAbortBatch, ErrUnavailable) and the marks of database and context
// errors; a phrase of the list is returned as it is.
func FailureReason(text string) string {
	switch text {
	case reasonDatabase, reasonUnavailable, reasonRateLimited, reasonAuth, reasonInvalid, reasonTimeout, reasonOther:
		return text // classified already, by a host's store
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
	case has(strings.ToLower(ErrRateLimited.Error())):
		return reasonRateLimited
	case has(strings.ToLower(ErrAbortBatch.Error())):
		return reasonAuth
	case has(strings.ToLower(ErrUnavailable.Error())):
		return reasonUnavailable
	case has("sqlstate"):
		return reasonDatabase
	case has("context canceled", "deadline exceeded", "timeout", "timed out"):
		return reasonTimeout
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
	return reasonOther
}

// withFailureReasons is st with its failure texts, the job's and its lanes', replaced by
// their FailureReason.
func withFailureReasons(st Status) Status {
	if st.LastFailure != "" || !st.LastFailureAt.IsZero() {
		st.LastFailure = FailureReason(st.LastFailure)
	}
	if len(st.Lanes) > 0 {
		lanes := make([]LaneStatus, len(st.Lanes))
		for i, l := range st.Lanes {
			if l.LastFailure != "" || !l.LastFailureAt.IsZero() {
				l.LastFailure = FailureReason(l.LastFailure)
			}
			lanes[i] = l
		}
		st.Lanes = lanes
	}
	return st
}
