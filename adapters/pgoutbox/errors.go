package pgoutbox

import (
	"errors"
	"fmt"
	"time"
)

// ErrLeaseLost means the command was claimed again by another dispatcher because this one's
// lease expired; nothing this delivery did was kept.
var ErrLeaseLost = errors.New("pgoutbox: lease lost to another claim")

// permanentError marks a handler error as final.
type permanentError struct{ err error }

func (e *permanentError) Error() string {
	if e.err == nil { // Permanent(nil): the outcome was asked for, without a reason
		return "permanent: no error given"
	}
	return "permanent: " + e.err.Error()
}

func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as final: the command goes dead at once, kept with the error, until
// re-driven. Use it for bad payloads and commands that can never apply. Permanent(nil) is not
// nil: the command goes dead all the same.
func Permanent(err error) error { return &permanentError{err} }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// retryLaterError asks for another try after a wait, without spending an attempt.
type retryLaterError struct {
	after time.Duration
	err   error
}

func (e *retryLaterError) Error() string {
	return fmt.Sprintf("retry after %v: %v", e.after, e.err)
}

func (e *retryLaterError) Unwrap() error { return e.err }

// RetryLater asks for the command to be tried again after d without counting a failure: the
// row it needs is locked, a dependency is not there yet.
func RetryLater(d time.Duration, err error) error { return &retryLaterError{after: d, err: err} }

// IsRetryLater reports whether err was made by RetryLater, and the wait it asked for.
func IsRetryLater(err error) (time.Duration, bool) {
	var r *retryLaterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}
