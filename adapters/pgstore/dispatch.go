package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/drain"
)

// Delivery is one claimed command, as a handler sees it.
type Delivery struct {
	ID            int64
	AggregateType string
	AggregateID   string
	// Name is the command (the outbox row's event type), such as "ApplyPaymentSucceeded".
	Name    string
	Payload []byte
	// FindingID is the finding the command repairs; zero for rows the reconciler did not queue.
	FindingID int64
	// Attempt is this claim's number, 1 for the first: the fencing token every finalize is
	// guarded by. A delivery with a higher attempt may exist if this one's lease expired.
	Attempt int64
	// Failures counts earlier attempts that failed and spent the retry budget.
	Failures  int
	CreatedAt time.Time
}

// Handler applies one command. Its database work goes through tx, in which the dispatcher then
// marks the command done, so the effect and the completion commit together or not at all. A
// handler must be idempotent in effect (a guarded update: a command can be delivered again
// after a crash), and should return Permanent for a command that can never succeed and
// RetryLater to wait without spending an attempt.
type Handler func(ctx context.Context, tx pgx.Tx, d Delivery) error

// ErrLeaseLost means the command was claimed again by another dispatcher because this one's
// lease expired; nothing this delivery did was kept.
var ErrLeaseLost = errors.New("pgstore: dispatch: lease lost to another claim")

// permanentError marks a handler error as final.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as final: the command goes dead at once, kept with the error, until
// re-driven. Use it for bad payloads and commands that can never apply.
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

// Defaults of DispatcherConfig.
const (
	DefaultLease          = 30 * time.Second
	DefaultPollInterval   = time.Second
	DefaultMaxAttempts    = 10
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = time.Hour
	DefaultWorkers        = 4
	DefaultHandlerTimeout = 10 * time.Minute
	// finalizeTimeout bounds the statements that record an outcome, which run even while
	// stopping: a database that does not answer must not hold Stop past its deadline for long.
	finalizeTimeout = 10 * time.Second
)

// DispatcherConfig configures a Dispatcher. The zero value works with the default tables.
type DispatcherConfig struct {
	// Tables names the reconciler's tables, as given to Migrate.
	Tables Tables
	// Owner names this dispatcher in leases. Empty means host name, process id and a random
	// suffix.
	Owner string
	// Workers is the number of commands handled at once. Zero means DefaultWorkers. Each
	// running handler holds a connection for its transaction, and the dispatcher needs one more
	// to claim and one to renew leases: a *pgxpool.Pool must allow Workers + 2 connections.
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
	// retried), instead of holding its lease, its aggregate and a worker forever. Zero means
	// DefaultHandlerTimeout.
	HandlerTimeout time.Duration
	// Logger receives a line per failure. Nil means no logging.
	Logger *slog.Logger
}

// Dispatcher applies the repair commands of the outbox: it claims them with FOR UPDATE SKIP
// LOCKED under a lease, calls the handler registered for their name, and completes, retries or
// parks each one, every step fenced by the claim's attempt number. Commands of one aggregate
// apply in order: none is claimed while an older one of the same aggregate is running or
// waiting to retry. Any number of dispatchers, in any number of processes, may share a
// database.
//
// A host that relays the outbox itself (the seed's columns: aggregate_type, aggregate_id,
// event_type, payload, processed_at) simply does not run a Dispatcher; the reconciler only
// inserts rows.
//
// Order is by outbox id: two transactions queueing for one aggregate commit in either order,
// and the younger id may be applied first if its transaction commits first. A dead command
// does not hold up its aggregate; Redrive refuses to apply it after a younger one. Commands
// waiting behind a busy aggregate are skipped by every claim, so a long queue for one
// aggregate makes claims slower. A command nobody handles goes dead: in a rolling deploy,
// register a new command's handler in every running version before queueing it (or re-drive
// after the deploy).
//
// A Dispatcher is started once: after Stop, make a new one to start again.
type Dispatcher struct {
	db       DB
	cfg      DispatcherConfig
	handlers map[string]Handler
	sql      dispatchSQL

	leaseMu sync.Mutex
	leases  map[int64]*lease // deliveries being handled, whose leases the renewer keeps

	mu      sync.Mutex
	frozen  bool // handlers are in use: no more may be registered
	started bool
	stop    context.CancelFunc      // stops claiming
	kill    context.CancelCauseFunc // cancels running handlers, and ends the renewer
	work    sync.WaitGroup          // the claim loop and the handlers it started
	bg      sync.WaitGroup          // the lease renewer
}

// errStopped is the cause handlers see when Stop runs out of patience.
var errStopped = errors.New("pgstore: dispatcher stopped")

// NewDispatcher checks cfg and returns a Dispatcher with no handlers.
func NewDispatcher(db DB, cfg DispatcherConfig) (*Dispatcher, error) {
	if db == nil {
		return nil, errors.New("pgstore: dispatcher: db is nil")
	}
	switch {
	case cfg.Workers < 0, cfg.Lease < 0, cfg.PollInterval < 0, cfg.MaxAttempts < 0, cfg.BackoffBase < 0, cfg.BackoffMax < 0, cfg.HandlerTimeout < 0:
		return nil, fmt.Errorf("pgstore: dispatcher config: negative value in %+v", cfg)
	}
	cfg.Tables = cfg.Tables.withDefaults()
	if err := cfg.Tables.validate(); err != nil {
		return nil, err
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		cfg.Owner = host + ":" + strconv.Itoa(os.Getpid()) + ":" + strconv.FormatUint(rand.Uint64()%1e6, 10)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.Lease, DefaultLease)
	def(&cfg.PollInterval, DefaultPollInterval)
	def(&cfg.BackoffBase, DefaultBackoffBase)
	def(&cfg.BackoffMax, DefaultBackoffMax)
	def(&cfg.HandlerTimeout, DefaultHandlerTimeout)
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.BackoffBase > cfg.BackoffMax {
		return nil, fmt.Errorf("pgstore: dispatcher config: BackoffBase %v is above BackoffMax %v", cfg.BackoffBase, cfg.BackoffMax)
	}
	if p, ok := db.(*pgxpool.Pool); ok && int(p.Config().MaxConns) < cfg.Workers+2 {
		// Otherwise handlers wait for connections while their leases run out.
		return nil, fmt.Errorf("pgstore: dispatcher config: the pool allows %d connections; %d workers need %d (Workers + 2)",
			p.Config().MaxConns, cfg.Workers, cfg.Workers+2)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Lease < time.Second {
		return nil, fmt.Errorf("pgstore: dispatcher config: Lease %v is shorter than a second", cfg.Lease)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{db: db, cfg: cfg, handlers: map[string]Handler{}, sql: newDispatchSQL(cfg.Tables), leases: map[int64]*lease{}}, nil
}

// Handle registers the handler of one command name. Commands nobody handles go dead with an
// error saying so. Register every handler before Start.
func (d *Dispatcher) Handle(name string, h Handler) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.frozen:
		return errors.New("pgstore: dispatcher: Handle after Start or Work")
	case name == "" || h == nil:
		return errors.New("pgstore: dispatcher: Handle needs a name and a handler")
	case d.handlers[name] != nil:
		return fmt.Errorf("pgstore: dispatcher: %q already has a handler", name)
	}
	d.handlers[name] = h
	return nil
}

// HandleJSON registers a handler whose payload is decoded as JSON into T, rejecting unknown
// fields; if T has a Validate() error method it is called too. A payload that does not decode
// or validate makes the command dead at once with the reason: retrying cannot fix it.
func HandleJSON[T any](d *Dispatcher, name string, h func(ctx context.Context, tx pgx.Tx, payload T, del Delivery) error) error {
	return d.Handle(name, func(ctx context.Context, tx pgx.Tx, del Delivery) error {
		var v T
		dec := json.NewDecoder(bytes.NewReader(del.Payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return Permanent(fmt.Errorf("decode %s payload: %w", name, err))
		}
		if dec.More() {
			return Permanent(fmt.Errorf("decode %s payload: data after the JSON value", name))
		}
		if val, ok := any(&v).(interface{ Validate() error }); ok {
			if err := val.Validate(); err != nil {
				return Permanent(fmt.Errorf("%s payload: %w", name, err))
			}
		}
		return h(ctx, tx, v, del)
	})
}

// HandleCommand registers a handler of a reconciler repair command, decoded and checked with
// reconcile.DecodeCommand. A command whose finding is already resolved is completed without
// calling h: the webhook applied the change first, or a person decided (fixed, accepted, a
// false positive), and a repair must not overrule them.
func HandleCommand(d *Dispatcher, name string, h func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error) error {
	findings := d.cfg.Tables.table("findings")
	return d.Handle(name, func(ctx context.Context, tx pgx.Tx, del Delivery) error {
		cmd, err := reconcile.DecodeCommand(del.Name, del.Payload)
		if err != nil {
			return Permanent(err)
		}
		var resolved bool
		err = tx.QueryRow(ctx, `SELECT resolved_at IS NOT NULL FROM `+findings+` WHERE id = $1`, cmd.FindingID).Scan(&resolved)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// The finding is gone (deleted by retention): apply the command as asked.
		case err != nil:
			return fmt.Errorf("read finding %d: %w", cmd.FindingID, err)
		case resolved:
			return nil
		}
		return h(ctx, tx, cmd)
	})
}

// Start claims and applies commands in the background, up to Workers at once, until Stop, or
// until ctx is cancelled (which also cancels running handlers, as a Stop out of patience does).
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("pgstore: dispatcher: already started (a stopped Dispatcher cannot start again)")
	}
	if len(d.handlers) == 0 {
		return errors.New("pgstore: dispatcher: no handlers registered")
	}
	d.started, d.frozen = true, true
	handlerCtx, kill := context.WithCancelCause(ctx)
	claimCtx, stop := context.WithCancel(handlerCtx)
	d.stop, d.kill = stop, kill
	d.work.Add(1)
	go func() {
		defer d.work.Done()
		d.run(claimCtx, handlerCtx)
	}()
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.renew(handlerCtx) // until Stop has seen the last handler finish
	}()
	return nil
}

// Stop stops claiming and waits for running handlers to finish. If ctx ends first, it cancels
// them: their transactions roll back and their commands are released for the next claim.
// A handler that ignores its context may outlive Stop by drain.Grace; then it is left running.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	if !d.started || d.stop == nil {
		d.mu.Unlock()
		return errors.New("pgstore: dispatcher: not started")
	}
	stop, kill := d.stop, d.kill
	d.stop = nil
	d.mu.Unlock()

	stop()
	var err error
	if !drain.Wait(ctx, &d.work, kill, errStopped) {
		err = fmt.Errorf("pgstore: dispatcher: stop: handlers cancelled: %w", ctx.Err())
	}
	kill(nil) // ends the renewer
	d.bg.Wait()
	return err
}

// run claims as many commands as there are idle slots, in one statement, and applies each on
// its own goroutine; it sleeps when there is nothing to do. Claiming only for idle slots keeps
// every claimed command running, so no lease ticks away in a queue.
func (d *Dispatcher) run(claimCtx, handlerCtx context.Context) {
	slots := make(chan struct{}, d.cfg.Workers)
	for range d.cfg.Workers {
		slots <- struct{}{}
	}
	for {
		// Wait for one idle slot, then take every other idle one.
		select {
		case <-slots:
		case <-claimCtx.Done():
			return
		}
		n := 1
	more:
		for n < d.cfg.Workers {
			select {
			case <-slots:
				n++
			default:
				break more
			}
		}
		// A claim that commits while its caller is being cancelled would strand its rows
		// until their leases expire: let it finish.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(claimCtx), finalizeTimeout)
		dels, err := d.claim(cctx, n)
		cancel()
		if err != nil {
			d.cfg.Logger.LogAttrs(claimCtx, slog.LevelWarn, "reconcile dispatcher: claim failed", slog.String("error", err.Error()))
		}
		for range n - len(dels) {
			slots <- struct{}{}
		}
		for _, del := range dels {
			d.work.Add(1)
			go func() {
				defer d.work.Done()
				d.process(handlerCtx, del)
				slots <- struct{}{}
			}()
		}
		if len(dels) == 0 {
			t := time.NewTimer(jitter(d.cfg.PollInterval))
			select {
			case <-t.C:
			case <-claimCtx.Done():
				t.Stop()
				return
			}
		}
	}
}

// Work claims up to Workers commands and applies them, concurrently, returning how many it
// claimed once all are finished. It is for hosts that schedule the dispatcher themselves
// (cron, a job queue) and for tests; a started Dispatcher does the same in a loop.
func (d *Dispatcher) Work(ctx context.Context) (int, error) {
	d.mu.Lock()
	d.frozen = true
	d.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// As in run: a claim must not be abandoned halfway, or its rows wait out their lease and
	// are charged a failure.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	dels, err := d.claim(cctx, d.cfg.Workers)
	cancel()
	if err != nil || len(dels) == 0 {
		return 0, err
	}
	if ctx.Err() != nil {
		for _, del := range dels {
			d.finalize(ctx, d.sql.release, del, context.Cause(ctx))
		}
		return 0, ctx.Err()
	}
	rctx, stopRenew := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		d.renew(rctx)
	}()
	var wg sync.WaitGroup
	for _, del := range dels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.process(ctx, del)
		}()
	}
	wg.Wait()
	stopRenew()
	<-renewed
	return len(dels), nil
}

// claim takes up to n ready commands under a lease.
func (d *Dispatcher) claim(ctx context.Context, n int) ([]Delivery, error) {
	rows, err := d.db.Query(ctx, d.sql.claim, d.cfg.Owner, d.cfg.Lease, n)
	if err != nil {
		return nil, fmt.Errorf("pgstore: dispatcher: claim: %w", err)
	}
	dels, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Delivery])
	if err != nil {
		return nil, fmt.Errorf("pgstore: dispatcher: claim: %w", err)
	}
	return dels, nil
}

// lease is a delivery being handled: what the renewer renews, and how it stops the handler if
// the lease was lost.
type lease struct {
	attempt int64
	cancel  context.CancelCauseFunc
}

// process applies one claimed command and finalizes it. It never returns an error: every
// outcome is recorded on the row, fenced by the attempt number.
func (d *Dispatcher) process(ctx context.Context, del Delivery) {
	if del.Failures >= d.cfg.MaxAttempts {
		// Leases expired on every attempt: the handler crashes its process or hangs.
		d.fail(ctx, del, Permanent(fmt.Errorf("the lease expired %d times: the handler crashes or hangs", del.Failures)))
		return
	}
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := &lease{attempt: del.Attempt, cancel: cancel}
	d.leaseMu.Lock()
	if old := d.leases[del.ID]; old != nil {
		// This dispatcher claimed the command again after its own earlier attempt lost the
		// lease: that attempt must not keep anything.
		old.cancel(ErrLeaseLost)
	}
	d.leases[del.ID] = l
	d.leaseMu.Unlock()
	err := d.apply(hctx, del)
	d.leaseMu.Lock()
	if d.leases[del.ID] == l { // not a newer attempt's entry
		delete(d.leases, del.ID)
	}
	d.leaseMu.Unlock()
	if err == nil {
		return
	}
	if errors.Is(context.Cause(hctx), ErrLeaseLost) || errors.Is(err, ErrLeaseLost) {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: lease lost; nothing kept",
			slog.Int64("command", del.ID), slog.Int64("attempt", del.Attempt))
		return
	}
	if ctx.Err() != nil {
		// Stopped: give the command back without counting a failure.
		d.finalize(ctx, d.sql.release, del, err)
		return
	}
	d.fail(ctx, del, err)
}

// apply runs the handler in a transaction and, if it succeeds, completes the command in it.
func (d *Dispatcher) apply(ctx context.Context, del Delivery) (err error) {
	h := d.handlers[del.Name]
	if h == nil {
		return Permanent(fmt.Errorf("no handler is registered for command %q", del.Name))
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.HandlerTimeout)
	defer cancel()
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
			_ = tx.Rollback(rctx)
			cancel()
		}
	}()
	if err := callHandler(ctx, h, tx, del); err != nil {
		if ctx.Err() == context.DeadlineExceeded && context.Cause(ctx) == context.DeadlineExceeded {
			return fmt.Errorf("the handler ran past HandlerTimeout (%v): %w", d.cfg.HandlerTimeout, err)
		}
		return err
	}
	tag, err := tx.Exec(ctx, d.sql.complete, del.ID, del.Attempt)
	if err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// callHandler calls h, turning a panic into an error: one bad command must not take the
// dispatcher down.
func callHandler(ctx context.Context, h Handler, tx pgx.Tx, del Delivery) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return h(ctx, tx, del)
}

// fail records a failed attempt: a wait without cost, a retry after backoff, or dead.
func (d *Dispatcher) fail(ctx context.Context, del Delivery, err error) {
	after, later := IsRetryLater(err)
	switch {
	case later:
		d.finalize(ctx, d.sql.snooze, del, err, after)
	case IsPermanent(err) || del.Failures+1 >= d.cfg.MaxAttempts:
		d.finalize(ctx, d.sql.bury, del, err)
		d.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile dispatcher: command dead",
			slog.Int64("command", del.ID), slog.String("name", del.Name), slog.String("aggregate", del.AggregateID),
			slog.Int("failures", del.Failures+1), slog.String("error", err.Error()))
	default:
		d.finalize(ctx, d.sql.retry, del, err, d.backoff(del.Failures+1))
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: command failed; will retry",
			slog.Int64("command", del.ID), slog.String("name", del.Name), slog.Int("failures", del.Failures+1),
			slog.String("error", err.Error()))
	}
}

// finalize runs one fenced outcome statement ($1 id, $2 attempt, $3 error, then extra args). It
// runs even when ctx is done (a stop must still release its commands), within a time limit.
func (d *Dispatcher) finalize(ctx context.Context, sql string, del Delivery, cause error, extra ...any) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	defer cancel()
	args := append([]any{del.ID, del.Attempt, truncate(cause.Error(), 2000)}, extra...)
	tag, err := d.db.Exec(fctx, sql, args...)
	switch {
	case err != nil:
		d.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile dispatcher: recording an outcome failed; the lease will expire",
			slog.Int64("command", del.ID), slog.String("error", err.Error()))
	case tag.RowsAffected() == 0:
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: lease lost; outcome not recorded",
			slog.Int64("command", del.ID), slog.Int64("attempt", del.Attempt))
	}
}

// renew renews, every third of the lease and in one statement, the leases of every delivery
// being handled, and cancels with ErrLeaseLost the handlers whose command was claimed again.
// It returns when ctx is done.
func (d *Dispatcher) renew(ctx context.Context) {
	t := time.NewTicker(d.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.leaseMu.Lock()
		ids := slices.Sorted(maps.Keys(d.leases)) // one lock order for every renewer
		attempts := make([]int64, len(ids))
		for i, id := range ids {
			attempts[i] = d.leases[id].attempt
		}
		d.leaseMu.Unlock()
		if len(ids) == 0 {
			continue
		}
		// Bounded, so that one locked row cannot hold up every lease past its expiry.
		rctx, cancel := context.WithTimeout(ctx, d.cfg.Lease/3)
		held, err := d.renewOnce(rctx, ids, attempts)
		cancel()
		if err != nil {
			// Unknown: try again next tick rather than cancel handlers that may be fine.
			d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: renewing leases failed", slog.String("error", err.Error()))
			continue
		}
		d.leaseMu.Lock()
		for i, id := range ids {
			if l := d.leases[id]; l != nil && l.attempt == attempts[i] && !slices.Contains(held, id) {
				// The row was claimed again, or finished by a concurrent completion we are
				// about to see; in both cases this handler's work must not be kept.
				l.cancel(ErrLeaseLost)
			}
		}
		d.leaseMu.Unlock()
	}
}

// renewOnce renews the given leases and returns the ids still held.
func (d *Dispatcher) renewOnce(ctx context.Context, ids, attempts []int64) ([]int64, error) {
	rows, err := d.db.Query(ctx, d.sql.renew, ids, attempts, d.cfg.Lease)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// backoff is the wait before retry number failures: BackoffBase doubled per earlier failure,
// at most BackoffMax, with jitter. Doubling stops at the cap, so it never overflows.
func (d *Dispatcher) backoff(failures int) time.Duration {
	b := d.cfg.BackoffBase
	for i := 1; i < failures && b < d.cfg.BackoffMax; i++ {
		b *= 2
	}
	return jitter(min(b, d.cfg.BackoffMax))
}

// jitter takes a random part of up to half off d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d - rand.N(d/2)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
