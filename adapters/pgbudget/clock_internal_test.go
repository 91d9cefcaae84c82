package pgbudget

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestADatabaseClockSteppedBackIsNoPause(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	b, err := New(pool, Config{Key: "acct_1", Rate: 10, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.clock = clock.Now
	if err := b.create(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := b.reserve(ctx); err != nil {
		t.Fatal(err)
	}
	// A failover to a standby whose clock is five minutes behind: no rate-limit answer came, so
	// the next call is a tenth of a second away, not five minutes.
	clock.Advance(-5 * time.Minute)
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := b.reserve(dctx); err != nil {
		t.Fatalf("reserve after the database clock stepped back: %v, want a call within the second", err)
	}
	// A pause recorded after the step lasts as long as asked, counted from the new clock.
	b.Throttle(2 * time.Second)
	if st, err := b.State(ctx); err != nil || !st.PausedUntil.Equal(clock.Now().Add(2*time.Second)) {
		t.Fatalf("state %+v, %v; want paused until 2s from the stepped-back now", st, err)
	}
	_, err = b.reserve(dctx)
	if rl := (*reconcile.RateLimitError)(nil); !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("reserve during the pause: %v, want a RateLimitError asking for 2s", err)
	}
}

func TestASessionTimeZoneAcrossDSTChangesNoInterval(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.PoolSchema(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["timezone"] = "America/New_York"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	// 01:59 EST, a minute before New York's clocks skip from 02:00 to 03:00.
	t0 := time.Date(2026, 3, 8, 6, 59, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	b, err := New(pool, Config{Key: "acct_1", Rate: 1, Burst: 10000})
	if err != nil {
		t.Fatal(err)
	}
	b.clock = clock.Now
	if err := b.create(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute) // 03:01 EDT: two minutes later, not an hour and two
	if _, err := b.reserve(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := b.State(ctx); err != nil || math.Abs(st.Tokens-119) > 1e-6 {
		t.Fatalf("state %+v, %v; want 120 tokens refilled in two minutes, one taken", st, err)
	}
	b.Throttle(time.Hour)
	if st, err := b.State(ctx); err != nil || !st.PausedUntil.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("state %+v, %v; want paused for one hour", st, err)
	}
}
