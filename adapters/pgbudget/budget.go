package pgbudget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// budgetThrottleTimeout bounds Throttle's statement: it runs on the goroutine of the call that
// was answered 429, which must not hang on a slow database.
const budgetThrottleTimeout = time.Second

// Budget is a token bucket kept in PostgreSQL, shared by every worker of every process that
// uses the same key: a reconcile.Limiter whose rate is the total of all of them, so that adding
// workers never exceeds the account's share. It is also a reconcile.Throttler: a rate-limit
// answer to any worker pauses the bucket for all.
//
// Each Wait reserves a call with one statement that computes the bucket's content by the
// database clock, takes a token (possibly one that refills only later: the content may go
// negative) and returns when the call may be made; the caller then sleeps until then. So
// callers are served in the order they asked, with no polling, and the calls granted in any
// one-second window never exceed Rate·1s + Burst. A Wait that would outlast its context's
// deadline reserves nothing and fails at once, as rate.Limiter's does. A Wait cancelled while it
// sleeps gives its call back to this process's other callers; a call that none of them takes
// within MaxLate of its time is lost to the budget (which is thus only ever under-spent).
//
// A failure of the database (a pool that cannot hand out a connection in time, a statement or
// lock timeout, a failover) is not "no call can be granted in time": Wait's error then wraps
// reconcile.ErrAbortBatch, so that the batch fails and commits nothing instead of marking the
// rows not yet asked Unverifiable and moving the cursor past them.
//
// For a single process, reconcile.AdaptiveLimiter is simpler and adapts its rate; Budget is
// for work spread over processes, such as a pgshard.Job's workers.
type Budget struct {
	db  pgstore.DB
	cfg Config
	sql budgetSQL

	created atomic.Bool

	mu    sync.Mutex
	queue []time.Time // calls this process reserved and has not handed out, in time order
	// pausedUntil is the end of the latest pause a rate-limit answer to this process asked
	// for: Wait makes no call before it, whether or not the database heard of the pause.
	pausedUntil time.Time
	// recordedUntil is the end of the latest pause recorded in the database, recording that
	// of a pause being recorded: a rate-limit answer within either is not sent again.
	recordedUntil, recording time.Time

	// clock, if set, replaces the database clock (tests); observe, if set, is told the database
	// time of every call granted.
	clock   func() time.Time
	observe func(at time.Time)
}

var (
	_ reconcile.Limiter   = (*Budget)(nil)
	_ reconcile.Throttler = (*Budget)(nil)
)

// New checks cfg and returns a Budget. It does not touch the database; the
// bucket is made, empty, on first use.
func New(db pgstore.DB, cfg Config) (*Budget, error) {
	if db == nil {
		return nil, errors.New("pgbudget: db is nil")
	}
	if cfg.Rate == 0 {
		cfg.Rate = reconcile.DefaultRate
	}
	if cfg.Burst == 0 {
		cfg.Burst = 1
	}
	if cfg.Grant == 0 {
		cfg.Grant = 1
	}
	if cfg.MaxLate == 0 {
		cfg.MaxLate = DefaultMaxLate
	}
	if cfg.Pause == 0 {
		cfg.Pause = DefaultPause
	}
	if cfg.MaxPause == 0 {
		cfg.MaxPause = DefaultMaxPause
	}
	switch {
	case cfg.Key == "":
		return nil, errors.New("pgbudget: Key is empty")
	case len(cfg.Key) > MaxKeyLength || !utf8.ValidString(cfg.Key) || strings.IndexByte(cfg.Key, 0) >= 0:
		// PostgreSQL's text refuses NUL and invalid UTF-8, and its index a long key: every
		// Wait would fail as a database failure. The key is not quoted back: it may be long.
		return nil, fmt.Errorf("pgbudget: Key (%d bytes) must be at most %d bytes of UTF-8 without NUL", len(cfg.Key), MaxKeyLength)
	case redact.Keys(cfg.Key) != cfg.Key:
		// The key is stored in the bucket's row and named in every error.
		return nil, errors.New("pgbudget: Key holds what looks like a Stripe API key: name the budget after the account id")
	case cfg.Rate < 0 || cfg.Rate == rate.Inf || math.IsNaN(float64(cfg.Rate)):
		return nil, fmt.Errorf("pgbudget: %s: Rate %v must be positive and finite", cfg.Key, cfg.Rate)
	case cfg.Burst < 0 || cfg.Grant < 0 || cfg.MaxLate < 0 || cfg.Pause < 0 || cfg.MaxPause < 0:
		return nil, fmt.Errorf("pgbudget: %s: negative Burst, Grant, MaxLate, Pause or MaxPause", cfg.Key)
	case cfg.Grant > MaxGrant:
		return nil, fmt.Errorf("pgbudget: %s: Grant %d is more than %d", cfg.Key, cfg.Grant, MaxGrant)
	case cfg.Grant > cfg.Burst:
		return nil, fmt.Errorf("pgbudget: %s: Grant %d is more than Burst %d", cfg.Key, cfg.Grant, cfg.Burst)
	}
	prefix, err := pgtables.Resolve(cfg.Tables.Prefix, cfg.Tables.Schema)
	if err != nil {
		return nil, fmt.Errorf("pgbudget: config: %w", err)
	}
	cfg.Tables.Prefix = prefix
	return &Budget{db: db, cfg: cfg, sql: newBudgetSQL(cfg.Tables)}, nil
}

// Config returns the budget's configuration with defaults filled in.
func (b *Budget) Config() Config { return b.cfg }

// Wait blocks until one call may be made, or ctx is done. It fails at once when the call could
// not be granted before ctx's deadline; when a pause is the reason (a rate-limit answer to some
// worker), the error is a *reconcile.RateLimitError saying how long it still lasts. When the
// database fails, the error wraps reconcile.ErrAbortBatch.
func (b *Budget) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A rate-limit answer to this process pauses it, even if the database did not record
		// the pause.
		if pause := b.paused(); pause > 0 {
			if d, ok := ctx.Deadline(); ok && d.Before(time.Now().Add(pause)) {
				return &reconcile.RateLimitError{RetryAfter: pause,
					Reason: "the shared rate budget is paused by a rate-limit answer to this process"}
			}
			if err := sleep(ctx, pause); err != nil {
				return err
			}
			continue
		}
		at, ok := b.take()
		if !ok {
			var err error
			if at, err = b.reserve(ctx); err != nil {
				return err
			}
		}
		if d, ok := ctx.Deadline(); ok && d.Before(at) {
			b.giveBack(at)
			return fmt.Errorf("pgbudget: %s: the next call is %v away, past the context deadline", b.cfg.Key, time.Until(at).Round(time.Millisecond))
		}
		if err := sleep(ctx, time.Until(at)); err != nil {
			b.giveBack(at)
			return err
		}
		if b.paused() > 0 {
			// A rate-limit answer arrived while we slept: give the call up and wait out the
			// pause.
			continue
		}
		if time.Since(at) <= b.cfg.MaxLate {
			return nil
		}
		// Woken too late (the process stalled): using the call now would bunch it with calls
		// made on time. Give it up and reserve another.
	}
}

// sleep sleeps for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// paused returns how long the pause of the latest rate-limit answer to this process lasts.
func (b *Budget) paused() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return time.Until(b.pausedUntil)
}

// failed wraps an error of the database: unless ctx is done, it is a reconcile.ErrAbortBatch,
// so that the batch fails rather than take it for a call that cannot be granted in time.
func (b *Budget) failed(ctx context.Context, what string, err error) error {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		err = &pgstore.MigrationError{Tables: b.cfg.Tables, Err: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("pgbudget: %s: %s: %w", b.cfg.Key, what, err)
	}
	return fmt.Errorf("pgbudget: %s: %s: %w: %w", b.cfg.Key, what, reconcile.ErrAbortBatch, err)
}

// take hands out the earliest call this process reserved and has not used, dropping those too
// late to use.
func (b *Budget) take() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	for len(b.queue) > 0 && now.Sub(b.queue[0]) > b.cfg.MaxLate {
		b.queue = b.queue[1:]
	}
	if len(b.queue) == 0 {
		return time.Time{}, false
	}
	at := b.queue[0]
	b.queue = b.queue[1:]
	return at, true
}

// giveBack returns a reserved call its taker cannot use, for another caller.
func (b *Budget) giveBack(at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = insertSorted(b.queue, at)
}

// insertSorted inserts at into q, which is in time order, keeping it so.
func insertSorted(q []time.Time, at time.Time) []time.Time {
	i := sort.Search(len(q), func(i int) bool { return q[i].After(at) })
	return slices.Insert(q, i, at)
}

// reserve takes up to Grant calls from the bucket in one statement (those within ctx's
// deadline) and returns the time of the first; the others are queued for other callers.
func (b *Budget) reserve(ctx context.Context) (time.Time, error) {
	if err := b.create(ctx); err != nil {
		return time.Time{}, err
	}
	maxWait := math.Inf(1)
	if d, ok := ctx.Deadline(); ok {
		maxWait = time.Until(d).Seconds()
	}
	var n int // the calls granted
	var dbNow time.Time
	var base, avail, first float64
	var err error
	for try := range 2 {
		err = b.db.QueryRow(ctx, b.sql.reserve, b.cfg.Key, float64(b.cfg.Rate), float64(b.cfg.Burst), b.cfg.Grant, maxWait, b.now()).
			Scan(&n, &dbNow, &base, &avail, &first)
		if try > 0 || !errors.Is(err, pgx.ErrNoRows) {
			break
		}
		// The bucket's row was deleted (an operator resetting the budget) after this process
		// made it: make it again, rather than fail every Wait until the process restarts.
		b.created.Store(false)
		if err := b.create(ctx); err != nil {
			return time.Time{}, err
		}
	}
	if err != nil {
		return time.Time{}, b.failed(ctx, "reserve", err)
	}
	if n == 0 {
		if base > 0 {
			return time.Time{}, &reconcile.RateLimitError{RetryAfter: seconds(base),
				Reason: "the shared rate budget is paused by an earlier rate-limit answer"}
		}
		return time.Time{}, fmt.Errorf("pgbudget: %s: the next call is %v away, past the context deadline", b.cfg.Key, seconds(first).Round(time.Millisecond))
	}
	// Call i (from 1) may be made when the bucket, refilling at Rate from base, holds i tokens.
	// Times are offsets from the database's now, applied to our clock from when the answer
	// arrived: a call is thus made no earlier than its time, only later by the answer's trip.
	// (From when we asked would be earlier by the statement's trip and its wait for the lock.)
	received := time.Now()
	times := make([]time.Time, n)
	for i := range n {
		off := base + max(0, float64(i+1)-avail)/float64(b.cfg.Rate)
		times[i] = received.Add(seconds(off))
		if b.observe != nil {
			b.observe(dbNow.Add(seconds(off)))
		}
	}
	if n > 1 {
		// Reservations made at once by several goroutines arrive in any order: keep the
		// queue in time order, as take and giveBack expect.
		b.mu.Lock()
		for _, t := range times[1:] {
			b.queue = insertSorted(b.queue, t)
		}
		b.mu.Unlock()
	}
	return times[0], nil
}

// create makes the bucket, full, if it does not exist yet.
func (b *Budget) create(ctx context.Context) error {
	if b.created.Load() {
		return nil
	}
	if _, err := b.db.Exec(ctx, b.sql.create, b.cfg.Key, float64(b.cfg.Rate), float64(b.cfg.Burst), b.now()); err != nil {
		return b.failed(ctx, "create", err)
	}
	b.created.Store(true)
	return nil
}

// Throttle pauses the bucket for every worker of every process for retryAfter (Pause if zero,
// at most MaxPause), and empties it, so that no burst follows the pause. This process pauses
// at once: its Waits make no call before the pause ends, and the calls it reserved before are
// dropped. The pause
// is recorded in the database, within a second, for the other processes; calls they reserved
// before the answer (at most Grant per waiting caller) are still made. If recording fails, this
// process still pauses, and the next rate-limit answer tries again. Answers that arrive while a
// recorded pause lasts longer change nothing.
func (b *Budget) Throttle(retryAfter time.Duration) {
	if retryAfter <= 0 {
		retryAfter = b.cfg.Pause
	}
	retryAfter = min(retryAfter, b.cfg.MaxPause)
	b.mu.Lock()
	until := time.Now().Add(retryAfter)
	if until.After(b.pausedUntil) {
		b.pausedUntil = until
		b.queue = nil
	}
	if !until.After(b.recordedUntil) || !until.After(b.recording) {
		b.mu.Unlock()
		return
	}
	b.recording = until
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), budgetThrottleTimeout)
	defer cancel()
	err := b.create(ctx)
	if err == nil {
		// Throttler has no way to report a failure: the local pause holds, and the next
		// answer records it.
		err = b.recordPause(ctx, retryAfter)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && until.After(b.recordedUntil) {
		b.recordedUntil = until
	}
	if b.recording.Equal(until) {
		b.recording = time.Time{}
	}
}

// recordPause records a pause of d in the bucket, making the bucket again if its row was
// deleted since this process made it (else the pause would be taken as recorded).
func (b *Budget) recordPause(ctx context.Context, d time.Duration) error {
	for range 2 {
		tag, err := b.db.Exec(ctx, b.sql.throttle, b.cfg.Key, float64(b.cfg.Rate), float64(b.cfg.Burst), d.Seconds(), b.now())
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		b.created.Store(false)
		if err := b.create(ctx); err != nil {
			return err
		}
	}
	return errors.New("pgbudget: the bucket's row is deleted as soon as made")
}

// State is a rate budget as stored.
type State struct {
	Key string
	// Tokens is the bucket's content as of At, negative while calls are promised ahead.
	Tokens float64
	At     time.Time
	Rate   float64
	Burst  float64
	// Granted counts the calls granted since the bucket was made; Throttles the rate-limit
	// answers reported.
	Granted, Throttles int64
	// PausedUntil is the end of the last pause; zero if never paused.
	PausedUntil time.Time
}

// State reads the bucket as stored, for monitoring and tests.
func (b *Budget) State(ctx context.Context) (State, error) {
	s := State{Key: b.cfg.Key}
	var paused *time.Time
	err := b.db.QueryRow(ctx, b.sql.state, b.cfg.Key).Scan(&s.Tokens, &s.At, &s.Rate, &s.Burst, &s.Granted, &s.Throttles, &paused)
	if err != nil {
		return s, fmt.Errorf("pgbudget: %s: %w", b.cfg.Key, err)
	}
	if paused != nil {
		s.PausedUntil = *paused
	}
	return s, nil
}

// now is the clock the statements use: nil means the database's clock_timestamp().
func (b *Budget) now() *time.Time {
	if b.clock == nil {
		return nil
	}
	t := b.clock()
	return &t
}

// seconds converts a database's float seconds to a time.Duration, saturating: a call centuries
// away (a tiny Rate) must not wrap around to a time long past.
func seconds(s float64) time.Duration {
	switch ns := s * float64(time.Second); {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	default:
		return time.Duration(ns)
	}
}
