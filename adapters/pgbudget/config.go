package pgbudget

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Defaults of Config.
const (
	DefaultPause = time.Second
	// DefaultMaxPause bounds a rate-limit answer's wait as stripeadapter bounds Retry-After:
	// a longer one is a misconfigured proxy, not advice.
	DefaultMaxPause = time.Hour
	DefaultMaxLate  = 50 * time.Millisecond
)

// Limits of Config.
const (
	// MaxKeyLength is the longest Key, in bytes.
	MaxKeyLength = 255
	// MaxGrant is the largest Grant: the calls of one grant are held in memory.
	MaxGrant = 1 << 16
)

// Config configures a Budget. Only Key is required.
type Config struct {
	// Tables names the reconciler's tables, as given to pgstore.Migrate.
	Tables pgstore.Tables
	// Key names the budget: one per external account, such as the Stripe account id. Every
	// Budget with the same key over the same tables, in any process, draws from one bucket.
	// Required: at most MaxKeyLength bytes of UTF-8, without NUL, and no API key (it is
	// stored, and named in errors).
	Key string
	// Rate is the budget of all workers together, in calls per second. Zero means
	// reconcile.DefaultRate. Give every Budget of a key the same Rate and Burst: each grant
	// uses its caller's.
	Rate rate.Limit
	// Burst is the number of calls that may be made at once after a quiet spell, and the most
	// by which any one-second window may exceed Rate. Zero means 1.
	Burst int
	// Grant is the number of calls reserved by one statement, at most MaxGrant and Burst. Zero
	// means 1: a statement per call. A larger grant spares the database at high rates; the process hands the calls out
	// at their times, and a call no caller took within MaxLate of its time is lost to the
	// budget. A statement asked with a deadline reserves only the calls due before it.
	Grant int
	// MaxLate is how late after its time a reserved call may still be made. A caller that
	// wakes up later than that (a stalled process) gives the call up and reserves another,
	// so that calls made late never bunch up with calls made on time. Zero means
	// DefaultMaxLate.
	MaxLate time.Duration
	// Pause is how long a rate-limit answer that names no wait pauses the budget. Zero means
	// DefaultPause.
	Pause time.Duration
	// MaxPause is the longest pause a rate-limit answer makes, whatever wait it names: the
	// pause is recorded in the database for every process and outlives restarts. Zero means
	// DefaultMaxPause.
	MaxPause time.Duration
}
