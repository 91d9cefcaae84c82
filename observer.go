package reconcile

import (
	"context"
	"errors"
	"time"
)

// Observer receives what the engine does, for metrics and tracing systems the core does not
// depend on (package adapters/prommetrics is one). Methods are called synchronously from the
// batch's goroutines, concurrently for gateway calls, and must be quick and safe for concurrent
// use.
type Observer interface {
	// GatewayCalls is called after every Fetch (calls is 1) and after every FetchBatch of a
	// BatchGateway (calls is the number of calls it made), with the time taken and the outcome
	// class (see ErrorClass).
	GatewayCalls(job string, calls int, d time.Duration, class string)
	// BatchDone is called after every RunBatch with its report and error (nil on success).
	BatchDone(job string, rep Report, err error)
}

// Outcome classes of a gateway call, as ErrorClass names them.
const (
	ClassOK          = "ok"
	ClassNotFound    = "not_found"
	ClassRateLimited = "rate_limited"
	ClassUnavailable = "unavailable"
	ClassAbort       = "abort"
	ClassReview      = "review"
	ClassCanceled    = "canceled"
	ClassOther       = "other"
)

// ErrorClass names the class of a gateway error for metrics: ClassOK for nil, else what the
// engine makes of it.
func ErrorClass(err error) string {
	var review *ReviewError
	switch {
	case err == nil:
		return ClassOK
	case errors.Is(err, ErrNotFound):
		return ClassNotFound
	case errors.Is(err, ErrRateLimited):
		return ClassRateLimited
	case errors.Is(err, ErrAbortBatch):
		return ClassAbort
	case errors.As(err, &review):
		return ClassReview
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ClassCanceled
	case errors.Is(err, ErrUnavailable):
		return ClassUnavailable
	default:
		return ClassOther
	}
}

// Observers returns an Observer that tells each of obs, in order, of everything: metrics and
// tracing can both listen to one job. Nil entries, a nil pointer in an Observer included (a
// metrics value never set up), are skipped; with none left it returns nil (no observer), and
// with one it returns that one. It adds no locking: each Observer must be safe for concurrent
// use, as Config.Observer must.
func Observers(obs ...Observer) Observer {
	var all multiObserver
	for _, o := range obs {
		if o == nil || isNilPointer(o) {
			continue
		}
		if m, ok := o.(multiObserver); ok {
			all = append(all, m...) // flatten, so nesting costs nothing
			continue
		}
		all = append(all, o)
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return all
}

// multiObserver is the fan-out Observers builds.
type multiObserver []Observer

func (m multiObserver) GatewayCalls(job string, calls int, d time.Duration, class string) {
	for _, o := range m {
		o.GatewayCalls(job, calls, d, class)
	}
}

func (m multiObserver) BatchDone(job string, rep Report, err error) {
	for _, o := range m {
		o.BatchDone(job, rep, err)
	}
}
