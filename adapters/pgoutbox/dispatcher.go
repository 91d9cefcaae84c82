package pgoutbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/drain"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

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
	db       pgstore.DB
	cfg      Config
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

// finalizeTimeout bounds the statements that record an outcome, which run even while
// stopping: a database that does not answer must not hold Stop past its deadline for long.
const finalizeTimeout = 10 * time.Second

// errStopped is the cause handlers see when Stop runs out of patience.
var errStopped = errors.New("pgoutbox: dispatcher stopped")

// NewDispatcher checks cfg and returns a Dispatcher with no handlers.
func NewDispatcher(db pgstore.DB, cfg Config) (*Dispatcher, error) {
	if db == nil {
		return nil, errors.New("pgoutbox: db is nil")
	}
	switch {
	case cfg.Workers < 0, cfg.Lease < 0, cfg.PollInterval < 0, cfg.MaxAttempts < 0, cfg.BackoffBase < 0, cfg.BackoffMax < 0, cfg.HandlerTimeout < 0:
		return nil, fmt.Errorf("pgoutbox: config: negative value in %+v", cfg)
	}
	prefix, err := pgtables.Resolve(cfg.Tables.Prefix, cfg.Tables.Schema)
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: config: %w", err)
	}
	cfg.Tables.Prefix = prefix
	if strings.ContainsRune(cfg.Owner, 0) || !utf8.ValidString(cfg.Owner) {
		// PostgreSQL would refuse it in every claim, each failure only logged.
		return nil, fmt.Errorf("pgoutbox: config: Owner %q holds a NUL or bytes that are not UTF-8", cfg.Owner)
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
	if cfg.BackoffBase > cfg.BackoffMax {
		return nil, fmt.Errorf("pgoutbox: config: BackoffBase %v is above BackoffMax %v", cfg.BackoffBase, cfg.BackoffMax)
	}
	// A pool short of Workers + 2 connections makes handlers wait for connections while their
	// leases run out.
	maxConns := -1 // unknown: not a pool
	if p, ok := db.(*pgxpool.Pool); ok {
		maxConns = int(p.Config().MaxConns)
	}
	switch {
	case cfg.Workers == 0 && maxConns >= 0 && maxConns < 3:
		return nil, fmt.Errorf("pgoutbox: config: the pool allows %d connections; the dispatcher needs at least 3 (one worker + 2)", maxConns)
	case cfg.Workers == 0 && maxConns >= 0:
		cfg.Workers = min(DefaultWorkers, maxConns-2)
	case cfg.Workers == 0:
		cfg.Workers = DefaultWorkers
	case maxConns >= 0 && maxConns < cfg.Workers+2:
		return nil, fmt.Errorf("pgoutbox: config: the pool allows %d connections; %d workers need %d (Workers + 2)",
			maxConns, cfg.Workers, cfg.Workers+2)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Lease < time.Second {
		return nil, fmt.Errorf("pgoutbox: config: Lease %v is shorter than a second", cfg.Lease)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{db: db, cfg: cfg, handlers: map[string]Handler{}, sql: newDispatchSQL(cfg.Tables), leases: map[int64]*lease{}}, nil
}

// Config returns the dispatcher's configuration with defaults filled in.
func (d *Dispatcher) Config() Config { return d.cfg }

// Handle registers the handler of one command name. Commands nobody handles go dead with an
// error saying so. Register every handler before Start.
func (d *Dispatcher) Handle(name string, h Handler) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.frozen:
		return errors.New("pgoutbox: Handle after Start or Work")
	case name == "" || h == nil:
		return errors.New("pgoutbox: Handle needs a name and a handler")
	case d.handlers[name] != nil:
		return fmt.Errorf("pgoutbox: %q already has a handler", name)
	}
	d.handlers[name] = h
	return nil
}

// Start claims and applies commands in the background, up to Workers at once, until Stop, or
// until ctx is cancelled (which also cancels running handlers, as a Stop out of patience does).
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("pgoutbox: already started (a stopped Dispatcher cannot start again)")
	}
	if len(d.handlers) == 0 {
		return errors.New("pgoutbox: no handlers registered")
	}
	// Tables that name no outbox would make every claim fail, each only logged.
	var exists bool
	if err := d.db.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", d.sql.outbox).Scan(&exists); err != nil {
		return fmt.Errorf("pgoutbox: start: %w", err)
	}
	if !exists {
		return fmt.Errorf("pgoutbox: start: the outbox table %s does not exist: give Config.Tables the store's Tables() and run pgstore.Migrate with them: %w",
			d.sql.outbox, pgstore.ErrNotMigrated)
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
// Stop on a dispatcher that is not running (never started, or already stopped) does nothing,
// so that a deferred Stop is safe whatever happened before it.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	if !d.started || d.stop == nil {
		d.mu.Unlock()
		return nil
	}
	stop, kill := d.stop, d.kill
	d.stop = nil
	d.mu.Unlock()

	stop()
	var err error
	if !drain.Wait(ctx, &d.work, kill, errStopped) {
		err = fmt.Errorf("pgoutbox: stop: handlers cancelled: %w", ctx.Err())
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
		// Stop ends a claim under way; it claims nothing then (see claim).
		cctx, cancel := context.WithTimeout(claimCtx, finalizeTimeout)
		dels, err := d.claim(cctx, n)
		cancel()
		if err != nil && claimCtx.Err() == nil {
			d.cfg.Logger.LogAttrs(claimCtx, slog.LevelWarn, "reconcile dispatcher: claim failed", slog.String("error", err.Error()))
		}
		for range n - len(dels) {
			slots <- struct{}{}
		}
		for _, del := range dels {
			d.work.Add(1)
			go func() {
				defer d.work.Done()
				defer func() { slots <- struct{}{} }() // also if the handler exits its goroutine
				d.process(handlerCtx, del)
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
//
// The claim waits no longer than ctx allows (nor than 10 s): when ctx is done before a claim
// commits (say, another session holds the outbox locked), Work returns ctx's error at once
// and nothing is claimed. Handlers get ctx, and their commands are given back unfinished when
// it ends.
func (d *Dispatcher) Work(ctx context.Context) (int, error) {
	d.mu.Lock()
	d.frozen = true
	d.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, finalizeTimeout)
	dels, err := d.claim(cctx, d.cfg.Workers)
	cancel()
	if err != nil && ctx.Err() != nil {
		return 0, ctx.Err()
	}
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

// claim takes up to n ready commands under a lease, waiting as long as ctx allows. It claims in
// a transaction of its own, so that a claim given up halfway (ctx done while the outbox is
// locked, say) rolls back and claims nothing; only its commit, once sent, is seen through
// (finalizeTimeout): rows claimed unknown to the caller would wait out their lease and be
// charged a failure.
func (d *Dispatcher) claim(ctx context.Context, n int) ([]Delivery, error) {
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: claim: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
		defer cancel()
		tx.Rollback(rctx) //nolint:errcheck // a no-op after Commit; a lost connection rolls back anyway
	}()
	rows, err := tx.Query(ctx, d.sql.claim, d.cfg.Owner, d.cfg.Lease, n)
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: claim: %w", err)
	}
	dels, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Delivery])
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: claim: %w", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return nil, fmt.Errorf("pgoutbox: claim: commit: %w", err)
	}
	return dels, nil
}

// process applies one claimed command and finalizes it. It never returns an error: every
// outcome is recorded on the row, fenced by the attempt number.
func (d *Dispatcher) process(ctx context.Context, del Delivery) {
	start := time.Now()
	if del.Failures >= d.cfg.MaxAttempts {
		// Leases expired on every attempt: the handler crashes its process or hangs.
		d.fail(ctx, del, start, Permanent(fmt.Errorf("the lease expired %d times: the handler crashes or hangs", del.Failures)))
		return
	}
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx, cancelTimeout := context.WithTimeout(hctx, d.cfg.HandlerTimeout)
	defer cancelTimeout()
	l := &lease{attempt: del.Attempt, cancel: cancel, done: tctx.Done()}
	d.leaseMu.Lock()
	if old := d.leases[del.ID]; old != nil {
		// This dispatcher claimed the command again after its own earlier attempt lost the
		// lease: that attempt must not keep anything.
		old.cancel(ErrLeaseLost)
	}
	d.leases[del.ID] = l
	d.leaseMu.Unlock()
	forget := func() {
		d.leaseMu.Lock()
		if d.leases[del.ID] == l { // not a newer attempt's entry
			delete(d.leases, del.ID)
		}
		d.leaseMu.Unlock()
	}
	defer forget() // also when a handler ends its goroutine (runtime.Goexit) instead of returning
	err := d.apply(tctx, del)
	forget() // the outcome is recorded next; the renewer has no more business with the row
	if err != nil && tctx.Err() == context.DeadlineExceeded && hctx.Err() == nil {
		// Said whichever step noticed: the handler, or the completion after a handler that
		// returned late.
		err = fmt.Errorf("the handler ran past HandlerTimeout (%v): %w", d.cfg.HandlerTimeout, err)
	}
	if err == nil {
		d.observe(del, start, reconcile.AttemptDone, nil)
		return
	}
	if errors.Is(context.Cause(hctx), ErrLeaseLost) || errors.Is(err, ErrLeaseLost) {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: lease lost; nothing kept",
			slog.Int64("command", del.ID), slog.Int64("attempt", del.Attempt))
		d.observe(del, start, reconcile.AttemptLeaseLost, err)
		return
	}
	if ctx.Err() != nil {
		// Stopped: give the command back without counting a failure.
		d.finalize(ctx, d.sql.release, del, err)
		d.observe(del, start, reconcile.AttemptReleased, err)
		return
	}
	d.fail(ctx, del, start, err)
}

// apply runs the handler in a transaction and, if it succeeds, completes the command in it.
// ctx carries HandlerTimeout (process).
func (d *Dispatcher) apply(ctx context.Context, del Delivery) (err error) {
	h := d.handlers[del.Name]
	if h == nil {
		return Permanent(fmt.Errorf("no handler is registered for command %q", del.Name))
	}
	tx, err := d.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		// Unconditional (a no-op after Commit): a handler that ends its goroutine returns no
		// error, and its connection must still go back to the pool.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
		_ = tx.Rollback(rctx)
		cancel()
	}()
	if err := callHandler(ctx, h, tx, del); err != nil {
		return err
	}
	if err := txEnded(tx); err != nil {
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
func (d *Dispatcher) fail(ctx context.Context, del Delivery, start time.Time, err error) {
	after, later := IsRetryLater(err)
	switch {
	case later:
		d.finalize(ctx, d.sql.snooze, del, err, after)
		d.observe(del, start, reconcile.AttemptDeferred, err)
	case IsPermanent(err) || del.Failures+1 >= d.cfg.MaxAttempts:
		d.finalize(ctx, d.sql.bury, del, err)
		d.observe(del, start, reconcile.AttemptDead, err)
		d.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile dispatcher: command dead",
			slog.Int64("command", del.ID), slog.String("name", del.Name), slog.String("aggregate", del.AggregateID),
			slog.Int("failures", del.Failures+1), slog.String("error", errorText(err)))
	default:
		d.finalize(ctx, d.sql.retry, del, err, d.backoff(del.Failures+1))
		d.observe(del, start, reconcile.AttemptRetry, err)
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: command failed; will retry",
			slog.Int64("command", del.ID), slog.String("name", del.Name), slog.Int("failures", del.Failures+1),
			slog.String("error", errorText(err)))
	}
}

// finalize runs one fenced outcome statement ($1 id, $2 attempt, $3 error, then extra args). It
// runs even when ctx is done (a stop must still release its commands), within a time limit.
func (d *Dispatcher) finalize(ctx context.Context, sql string, del Delivery, cause error, extra ...any) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	defer cancel()
	args := append([]any{del.ID, del.Attempt, errorText(cause)}, extra...)
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

// backoff is the wait before retry number failures: BackoffBase doubled per earlier failure,
// at most BackoffMax, with jitter. Doubling stops at the cap, so it never overflows.
func (d *Dispatcher) backoff(failures int) time.Duration {
	b := d.cfg.BackoffBase
	for i := 1; i < failures && b < d.cfg.BackoffMax; i++ {
		if b > d.cfg.BackoffMax/2 { // doubling would pass the cap, or wrap around near MaxInt64
			b = d.cfg.BackoffMax
			break
		}
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

// errorText is a handler's error as it is stored and logged: anything like a Stripe key
// redacted (a client may quote one back), as a text column holds it (else the statement
// recording the outcome would fail, and the command wait out its lease instead of going dead or
// retrying as asked), cut to 2,000 bytes.
func errorText(err error) string {
	return safetext.Storable(redact.Keys(safeError(err)), 2000)
}

// safeError is err.Error(), or a note if that panics (a nil pointer of a host's error type):
// it runs outside the handler's recover, where a panic would end the process.
func safeError(err error) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprintf("%T whose Error panicked: %v", err, p)
		}
	}()
	return err.Error()
}
