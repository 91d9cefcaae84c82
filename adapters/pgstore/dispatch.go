package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
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

// Defaults of DispatcherConfig.
const (
	DefaultLease        = 30 * time.Second
	DefaultPollInterval = time.Second
	DefaultMaxAttempts  = 10
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = time.Hour
)

// DispatcherConfig configures a Dispatcher. The zero value works with the default tables.
type DispatcherConfig struct {
	// Tables names the reconciler's tables, as given to Migrate.
	Tables Tables
	// Owner names this dispatcher in leases. Empty means host name, process id and a random
	// suffix.
	Owner string
	// Workers is the number of commands handled at once. Zero means 4.
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
type Dispatcher struct {
	db       DB
	cfg      DispatcherConfig
	handlers map[string]Handler
	sql      dispatchSQL

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc      // stops claiming
	kill    context.CancelCauseFunc // cancels running handlers
	wg      sync.WaitGroup
}

// errStopped is the cause handlers see when Stop runs out of patience.
var errStopped = errors.New("pgstore: dispatcher stopped")

// NewDispatcher checks cfg and returns a Dispatcher with no handlers.
func NewDispatcher(db DB, cfg DispatcherConfig) (*Dispatcher, error) {
	if db == nil {
		return nil, errors.New("pgstore: dispatcher: db is nil")
	}
	switch {
	case cfg.Workers < 0, cfg.Lease < 0, cfg.PollInterval < 0, cfg.MaxAttempts < 0, cfg.BackoffBase < 0, cfg.BackoffMax < 0:
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
	if cfg.Workers == 0 {
		cfg.Workers = 4
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
	return &Dispatcher{db: db, cfg: cfg, handlers: map[string]Handler{}, sql: newDispatchSQL(cfg.Tables)}, nil
}

// Handle registers the handler of one command name. Commands nobody handles go dead with an
// error saying so. Register every handler before Start.
func (d *Dispatcher) Handle(name string, h Handler) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.started:
		return errors.New("pgstore: dispatcher: Handle after Start")
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
		if val, ok := any(&v).(interface{ Validate() error }); ok {
			if err := val.Validate(); err != nil {
				return Permanent(fmt.Errorf("%s payload: %w", name, err))
			}
		}
		return h(ctx, tx, v, del)
	})
}

// HandleCommand registers a handler of a reconciler repair command, decoded and checked with
// reconcile.DecodeCommand.
func HandleCommand(d *Dispatcher, name string, h func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error) error {
	return d.Handle(name, func(ctx context.Context, tx pgx.Tx, del Delivery) error {
		cmd, err := reconcile.DecodeCommand(del.Name, del.Payload)
		if err != nil {
			return Permanent(err)
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
		return errors.New("pgstore: dispatcher: already started")
	}
	if len(d.handlers) == 0 {
		return errors.New("pgstore: dispatcher: no handlers registered")
	}
	d.started = true
	handlerCtx, kill := context.WithCancelCause(ctx)
	claimCtx, stop := context.WithCancel(handlerCtx)
	d.stop, d.kill = stop, kill
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.run(claimCtx, handlerCtx)
	}()
	return nil
}

// Stop stops claiming and waits for running handlers to finish. If ctx ends first, it cancels
// them: their transactions roll back and their commands are released for the next claim.
// Stop returns when every goroutine has returned.
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
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		kill(nil)
		return nil
	case <-ctx.Done():
		kill(errStopped)
		<-done
		return fmt.Errorf("pgstore: dispatcher: stop: handlers cancelled: %w", ctx.Err())
	}
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
		dels, err := d.claim(claimCtx, n)
		if err != nil && claimCtx.Err() == nil {
			d.cfg.Logger.LogAttrs(claimCtx, slog.LevelWarn, "reconcile dispatcher: claim failed", slog.String("error", err.Error()))
		}
		for range n - len(dels) {
			slots <- struct{}{}
		}
		for _, del := range dels {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
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
// claimed. It is for hosts that schedule the dispatcher themselves (cron, a job queue) and for
// tests; a started Dispatcher does the same in a loop.
func (d *Dispatcher) Work(ctx context.Context) (int, error) {
	dels, err := d.claim(ctx, d.cfg.Workers)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, del := range dels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.process(ctx, del)
		}()
	}
	wg.Wait()
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

// process applies one claimed command and finalizes it. It never returns an error: every
// outcome is recorded on the row, fenced by the attempt number.
func (d *Dispatcher) process(ctx context.Context, del Delivery) {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopBeat := d.heartbeat(hctx, cancel, del)
	err := d.apply(hctx, del)
	stopBeat()
	if err == nil {
		return
	}
	if errors.Is(context.Cause(hctx), ErrLeaseLost) || errors.Is(err, ErrLeaseLost) {
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: lease lost; nothing kept",
			slog.Int64("command", del.ID), slog.Int64("attempt", del.Attempt))
		return
	}
	fctx := context.WithoutCancel(ctx) // record the outcome even when stopping
	if ctx.Err() != nil {
		// Stopped: give the command back without counting a failure.
		d.finalize(fctx, d.sql.release, del, err)
		return
	}
	d.fail(fctx, del, err)
}

// apply runs the handler in a transaction and, if it succeeds, completes the command in it.
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
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := callHandler(ctx, h, tx, del); err != nil {
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
	var later *retryLaterError
	var perm *permanentError
	switch {
	case errors.As(err, &later):
		d.finalize(ctx, d.sql.snooze, del, err, later.after)
	case errors.As(err, &perm) || del.Failures+1 >= d.cfg.MaxAttempts:
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

// finalize runs one fenced outcome statement ($1 id, $2 attempt, $3 error, then extra args).
func (d *Dispatcher) finalize(ctx context.Context, sql string, del Delivery, cause error, extra ...any) {
	args := append([]any{del.ID, del.Attempt, truncate(cause.Error(), 2000)}, extra...)
	tag, err := d.db.Exec(ctx, sql, args...)
	switch {
	case err != nil:
		d.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reconcile dispatcher: recording an outcome failed; the lease will expire",
			slog.Int64("command", del.ID), slog.String("error", err.Error()))
	case tag.RowsAffected() == 0:
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: lease lost; outcome not recorded",
			slog.Int64("command", del.ID), slog.Int64("attempt", del.Attempt))
	}
}

// heartbeat renews del's lease every third of the lease while the handler runs, and cancels the
// handler with ErrLeaseLost if another claim took the command. The returned func stops it.
func (d *Dispatcher) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, del Delivery) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			tag, err := d.db.Exec(ctx, d.sql.renew, del.ID, del.Attempt, d.cfg.Lease)
			if err == nil && tag.RowsAffected() == 0 {
				cancel(ErrLeaseLost)
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// backoff is the wait before retry number failures: exponential, capped, with jitter.
func (d *Dispatcher) backoff(failures int) time.Duration {
	b := d.cfg.BackoffMax
	if failures < 40 {
		b = min(d.cfg.BackoffBase<<(failures-1), d.cfg.BackoffMax)
	}
	return jitter(b)
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
