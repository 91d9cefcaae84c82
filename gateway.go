package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gateway asks the external system for the current state of one object. RunBatch never holds
// a database connection or transaction while a Gateway call is running.
type Gateway[E any] interface {
	// Fetch returns the external state of the object with the given id. Every failure maps to
	// one of these errors (IDChecker, BatchGateway and LaneConfig.Current follow the list):
	//   - ErrNotFound: the external system confirmed the object does not exist: a NeedsReview
	//     finding of kind KindMissingExternally;
	//   - ErrRateLimited (or a *RateLimitError): slow down; the rest of the batch is not asked
	//     and the cursor stops before the first row not asked;
	//   - ErrAbortBatch: no call can succeed (bad credentials); the batch writes nothing and
	//     returns the error;
	//   - a *ReviewError: the request itself was rejected; a NeedsReview finding of its kind;
	//   - anything else, ErrUnavailable included: could not ask, the row is Unverifiable (and
	//     when the first two calls of a batch fail so, the batch stops asking).
	Fetch(ctx context.Context, externalID string) (E, error)
}

// GatewayFunc adapts a function to the Gateway interface.
type GatewayFunc[E any] func(ctx context.Context, externalID string) (E, error)

// Fetch calls f(ctx, externalID).
func (f GatewayFunc[E]) Fetch(ctx context.Context, externalID string) (E, error) {
	return f(ctx, externalID)
}

// PerObject returns g without its BatchGateway ability, so that RunBatch asks about every row
// with one Fetch call: the way to force per-object calls, to compare with the bulk path or to
// avoid list calls. Unlike GatewayFunc(g.Fetch), it keeps g's IDChecker, if g has one, so that
// an id that cannot be valid still costs no call and no limiter token. A nil g returns nil.
func PerObject[E any](g Gateway[E]) Gateway[E] {
	if g == nil {
		return nil
	}
	if c, ok := g.(IDChecker); ok {
		return perObjectChecked[E]{perObject[E]{g}, c}
	}
	return perObject[E]{g}
}

// perObject is a Gateway that shows only its inner gateway's Fetch.
type perObject[E any] struct{ g Gateway[E] }

func (p perObject[E]) Fetch(ctx context.Context, externalID string) (E, error) {
	return p.g.Fetch(ctx, externalID)
}

// perObjectChecked is a perObject that keeps its inner gateway's IDChecker.
type perObjectChecked[E any] struct {
	perObject[E]
	c IDChecker
}

func (p perObjectChecked[E]) CheckID(externalID string) error { return p.c.CheckID(externalID) }

// The errors a Gateway maps its failures to; [Gateway.Fetch] says what RunBatch does with each.
var (
	// ErrNotFound means the external system confirmed the object is absent.
	ErrNotFound = errors.New("reconcile: external object not found")
	// ErrUnavailable means the external system could not be asked: timeout, 5xx, connection
	// refused.
	ErrUnavailable = errors.New("reconcile: external system unavailable")
	// ErrRateLimited means the external system asked us to slow down.
	ErrRateLimited = errors.New("reconcile: rate limited by external system")
	// ErrAbortBatch means no further call can succeed, such as rejected credentials.
	ErrAbortBatch = errors.New("reconcile: batch aborted")
)

// Finding kinds the engine itself records.
const (
	// KindMissingExternally: the row's external object does not exist.
	KindMissingExternally = "missing_externally"
	// KindRejected: the gateway returned a ReviewError without a kind of its own.
	KindRejected = "rejected_by_external_system"
	// KindInvalidExternalID: the row's external id is empty (the engine never sends an empty id)
	// or cannot be valid (gateways may return a ReviewError of this kind without calling out).
	KindInvalidExternalID = "invalid_external_id"
	// KindInvalidRow: the Source could not read or judge the row (Record.Invalid says why).
	KindInvalidRow = "invalid_row"
)

// RateLimitError is a rate-limit answer carrying how long the external system asked us to wait.
// errors.Is(err, ErrRateLimited) holds for it.
type RateLimitError struct {
	// RetryAfter is the wait the external system asked for; zero if it named none.
	RetryAfter time.Duration
	// Reason is the external system's explanation, if any, safe to log.
	Reason string
}

// Error describes the rate limit, with the wait and reason when known.
func (e *RateLimitError) Error() string {
	msg := "reconcile: rate limited by external system"
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// ReviewError is returned by a Gateway when the answer needs a person rather than a retry: the
// external system rejected the request as invalid, or the external id cannot be valid.
type ReviewError struct {
	// Kind is the finding kind, such as "invalid_external_id"; empty means KindRejected.
	Kind string
	// Detail is stored with the finding; it must not contain secrets.
	Detail string
}

// Error names the finding kind and detail.
func (e *ReviewError) Error() string {
	if e.Detail == "" {
		return "reconcile: needs review: " + e.Kind
	}
	return "reconcile: needs review: " + e.Kind + ": " + e.Detail
}

// IDChecker is an optional ability of a Gateway: telling, without a call, that an external id
// cannot be valid (the wrong prefix, characters that do not belong in a URL). RunBatch asks it
// before spending a call or a limiter token on the row, so such a row is a finding even in a
// batch stopped by a rate limit. A non-nil answer is handled as Fetch's error would be;
// normally it is a *ReviewError of kind KindInvalidExternalID.
type IDChecker interface {
	CheckID(externalID string) error
}

// Lookup names one object a BatchGateway is asked about.
type Lookup struct {
	ExternalID string
	// CreatedAt is when the local row was created, zero when the source has no creation time.
	// A batch gateway may use it as a hint of where the object lies, such as a creation-time
	// window of a list endpoint.
	CreatedAt time.Time
}

// BatchGateway is an optional ability of a Gateway: asking about many objects with few calls,
// such as through a list endpoint that returns a hundred objects a call. RunBatch finds it by
// type assertion and, when the Gateway has it, calls FetchBatch once per batch before any
// Fetch; rows it did not answer are then asked one by one with Fetch. To force per-object
// calls, wrap the gateway in PerObject, which keeps its IDChecker (a GatewayFunc of its Fetch
// method would drop it). A gateway that keeps answers for later batches (objects a list showed
// beyond what it was asked) must be a DatedBatchGateway, whose FetchBatchSince RunBatch calls
// instead.
type BatchGateway[E any] interface {
	Gateway[E]
	// FetchBatch returns the objects it found among lookups, keyed by external id, each
	// obtained by this call: RunBatch takes the call's start as the moment of every answer.
	// It must call wait before every external call and return at once, with that error, when
	// wait fails: wait is how RunBatch paces and counts the calls and stops them after a rate
	// limit. An id missing from the result is not a claim that the object does not exist, only
	// that this call did not see it. Errors are those of [Gateway.Fetch], except that after a
	// rate limit the objects found so far still count, and on an error of the last kind
	// RunBatch logs it and asks Fetch about every row not found.
	FetchBatch(ctx context.Context, lookups []Lookup, wait func(context.Context) error) (map[string]E, error)
}

// DatedBatchGateway is an optional ability of a BatchGateway whose answers may come from
// earlier calls, such as a look-ahead that keeps what a list showed beyond what it was asked,
// for the batches that follow. RunBatch finds it by type assertion and calls FetchBatchSince
// instead of FetchBatch, with the earliest moment an answer may come from; it records each
// row's verified time as its answer's At (never later than the commit), and only answers
// obtained by the call itself tell it that the external system is up (see Report.Unavailable).
type DatedBatchGateway[E any] interface {
	BatchGateway[E]
	// FetchBatchSince is FetchBatch, except that it may return answers obtained before the
	// call, though none obtained before since, each with the moment it was obtained. since is
	// the start of the job's current cycle (or of the batch, when RunBatch cannot tell): a
	// cycle judges no row on an answer obtained before it started. RunBatch asks Fetch about
	// a row whose answer is dated before since, as about one not found.
	FetchBatchSince(ctx context.Context, lookups []Lookup, since time.Time, wait func(context.Context) error) (map[string]Answer[E], error)
}

// Answer is an external object and when it was obtained.
type Answer[E any] struct {
	Object E
	// At is when the call that obtained Object began: the object's state reflects every
	// change the external system made before At, and none after it need be. Zero means the
	// FetchBatchSince call that returned it.
	At time.Time
}
