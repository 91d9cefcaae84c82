package pgoutbox

import (
	"log/slog"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Defaults of Config.
const (
	DefaultLease          = 30 * time.Second
	DefaultPollInterval   = time.Second
	DefaultMaxAttempts    = 10
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = time.Hour
	DefaultWorkers        = 4
	DefaultHandlerTimeout = 10 * time.Minute
)

// Config configures a Dispatcher. The zero value works with the default tables.
type Config struct {
	// Tables names the reconciler's tables: give it store.Tables() of the pgstore.Store whose
	// jobs queue the commands, the value given to pgstore.Migrate. The zero value is the
	// default prefix in the search_path.
	Tables pgstore.Tables
	// Owner names this dispatcher in leases. Empty means host name, process id and a random
	// suffix. It must be UTF-8 without NUL (NewDispatcher checks): it is stored on claimed rows.
	Owner string
	// Workers is the number of commands handled at once. Each running handler holds a
	// connection for its transaction, and the dispatcher needs one more to claim and one to
	// renew leases: a *pgxpool.Pool must allow Workers + 2 connections. Zero means
	// DefaultWorkers, or as many as the pool allows if that is fewer (a default pgxpool on a
	// two-core machine has 4 connections: 2 workers); NewDispatcher refuses a larger value, and
	// a pool of fewer than 3 connections.
	Workers int
	// Lease is how long a claim holds before another dispatcher may take the command; running
	// handlers renew it every third of that. Zero means DefaultLease.
	Lease time.Duration
	// PollInterval is how long an idle worker waits before looking for work again. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// MaxAttempts is how many failed attempts make a command dead. Zero means
	// DefaultMaxAttempts.
	MaxAttempts int
	// BackoffBase and BackoffMax bound the wait before a retry: BackoffBase·2^(failures-1),
	// at most BackoffMax, of which a random half is taken off so that retries spread out.
	// Zero means DefaultBackoffBase and DefaultBackoffMax.
	BackoffBase, BackoffMax time.Duration
	// HandlerTimeout bounds one handler call; a handler that hangs longer fails (and is
	// retried), instead of holding its lease, its aggregate and a worker forever. A handler
	// that ignores its context past it keeps its worker, but its lease is no longer renewed:
	// the command goes to the next claim once the lease runs out. Zero means
	// DefaultHandlerTimeout.
	HandlerTimeout time.Duration
	// Logger receives a line per failure. Nil means no logging.
	Logger *slog.Logger
	// Observer receives the outcome of every attempt (reconcile.CommandAttempt, its Outcome
	// one of reconcile.AttemptOutcomes), for metrics (adapters/prommetrics implements it). Nil
	// means none.
	Observer reconcile.CommandObserver
}
