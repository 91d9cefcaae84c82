package pgbudget_test

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgbudget"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func migratedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t)
	if err := pgstore.Migrate(context.Background(), pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestABucketDeletedWhileInUseIsMadeAgain(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1000, Burst: 1, MaxLate: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// An operator resets the budget by deleting its row, as every process keeps running.
	if _, err := pool.Exec(ctx, `DELETE FROM reconcile_rate_budgets WHERE key = 'acct_1'`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Wait(ctx); err != nil {
			t.Fatalf("Wait after the bucket's row was deleted: %v, want the bucket made again", err)
		}
	}
	if st, err := b.State(ctx); err != nil || st.Granted != 2 {
		t.Fatalf("state %+v, %v; want the new bucket to count the 2 calls since", st, err)
	}
}

func TestARateLimitAnswerAfterTheBucketWasDeletedIsRecordedInANewOne(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1000, Burst: 1, MaxLate: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM reconcile_rate_budgets WHERE key = 'acct_1'`); err != nil {
		t.Fatal(err)
	}
	b.Throttle(time.Minute)
	// Another process learns of the pause from the database.
	other, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1000, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var rl *reconcile.RateLimitError
	if err := other.Wait(dctx); !errors.As(err, &rl) {
		t.Fatalf("another process's Wait after the pause: %v, want a RateLimitError", err)
	}
	if st, err := b.State(ctx); err != nil || st.Throttles != 1 {
		t.Fatalf("state %+v, %v; want the pause recorded", st, err)
	}
}

func TestARateSoLowItsNextCallIsCenturiesAwayNeitherSpinsNorGrantsAtOnce(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	// One call per ~3,000 years: its time does not fit a time.Duration.
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1e-11})
	if err != nil {
		t.Fatal(err)
	}
	// With a deadline, the refusal names a wait that is not negative.
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	err = b.Wait(dctx)
	cancel()
	if err == nil || errors.Is(err, reconcile.ErrAbortBatch) || strings.Contains(err.Error(), "-") {
		t.Fatalf("Wait with a second to spare: %v, want a refusal naming a long wait", err)
	}
	// Without one, Wait sleeps until its context ends, having reserved one call: not a loop
	// reserving a call after another.
	cctx, cancel2 := context.WithCancel(ctx)
	defer time.AfterFunc(300*time.Millisecond, cancel2).Stop()
	if err := b.Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want the context's end", err)
	}
	if st, err := b.State(ctx); err != nil || st.Granted > 1 {
		t.Fatalf("state %+v, %v; want at most one call reserved", st, err)
	}
}

func TestNewRejectsAKeyTheDatabaseCannotStore(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	for name, key := range map[string]string{
		"a NUL":         "acct_\x00",
		"invalid UTF-8": "acct_\xff",
		"10 KB":         strings.Repeat("k", 10<<10),
	} {
		if _, err := pgbudget.New(pool, pgbudget.Config{Key: key}); err == nil {
			t.Errorf("New with a key of %s succeeded", name)
		}
	}
}

func TestABudgetOverMissingTablesSaysToMigrate(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t) // not migrated
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1"})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Wait(context.Background())
	if !errors.Is(err, pgstore.ErrNotMigrated) || !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("Wait over missing tables: %v, want an ErrAbortBatch saying to migrate", err)
	}
}

func TestAGrantOfSeveralCallsGrantsThoseThatFitTheDeadline(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	// The bucket starts empty: calls at 0.5s, 1s, 1.5s and 2s.
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 2, Burst: 4, Grant: 4, MaxLate: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Asked with 100ms to spare, the refusal names the first call's wait, not the last's.
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = b.Wait(dctx)
	cancel()
	if err == nil || !namesAWaitOfAtMost(err, 500*time.Millisecond) {
		t.Fatalf("Wait with 100ms to spare: %v, want a refusal naming the first call, 500ms away", err)
	}
	// With 1.2s to spare the first call fits: it is granted, with what else fits, not refused
	// because the fourth does not.
	dctx, cancel = context.WithTimeout(ctx, 1200*time.Millisecond)
	defer cancel()
	if err := b.Wait(dctx); err != nil {
		t.Fatalf("Wait with 1.2s to spare for a call 0.5s away: %v", err)
	}
	if st, err := b.State(ctx); err != nil || st.Granted < 1 || st.Granted > 2 {
		t.Fatalf("state %+v, %v; want the one or two calls within the deadline granted", st, err)
	}
}

// namesAWaitOfAtMost reports whether err is a refusal naming a wait ("the next call is 498ms
// away") of at most d.
func namesAWaitOfAtMost(err error, d time.Duration) bool {
	m := regexp.MustCompile(`the next call is (\S+) away`).FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	got, perr := time.ParseDuration(m[1])
	return perr == nil && got > 0 && got <= d
}

func TestNewRejectsAGrantTheStatementCannotCarry(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	// More than PostgreSQL's int: every Wait would fail as a database failure (and a grant of
	// billions of calls would be held in memory).
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 10, Burst: 1 << 40, Grant: 1 << 40})
	if err == nil {
		err = b.Wait(context.Background())
		t.Fatalf("New with a Grant of 2^40 succeeded; Wait: %v", err)
	}
	if _, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Burst: pgbudget.MaxGrant, Grant: pgbudget.MaxGrant}); err != nil {
		t.Fatalf("New with a Grant of MaxGrant: %v", err)
	}
}

func TestABucketLockedPastTheStatementTimeoutFailsTheBatchNotTheCall(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.PoolSchema(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	holder, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := pgstore.Migrate(ctx, holder, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	for name, param := range map[string]string{"statement_timeout": "57014", "lock_timeout": "55P03"} {
		cfg := cfg.Copy()
		cfg.ConnConfig.RuntimeParams[name] = "100ms"
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		key := "acct_" + name
		b, err := pgbudget.New(pool, pgbudget.Config{Key: key, Rate: 1000, Burst: 1, MaxLate: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		// Another session holds the bucket's row (a stuck process, a long manual transaction).
		tx, err := holder.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM reconcile_rate_budgets WHERE key = $1 FOR UPDATE`, key); err != nil {
			t.Fatal(err)
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = b.Wait(dctx)
		cancel()
		_ = tx.Rollback(ctx)
		var pe *pgconn.PgError
		if !errors.Is(err, reconcile.ErrAbortBatch) || !errors.As(err, &pe) || pe.Code != param {
			t.Errorf("Wait on a bucket locked past the %s: %v, want an ErrAbortBatch wrapping SQLSTATE %s", name, err, param)
		}
	}
}

func TestARateLimitAnswerAskingForCenturiesPausesEveryProcessForAtMostMaxPause(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 10})
	if err != nil {
		t.Fatal(err)
	}
	// A gateway that passes on a proxy's Retry-After unbounded: the pause is recorded in the
	// database, for every process, and outlives restarts.
	start := time.Now()
	b.Throttle(math.MaxInt64)
	st, err := b.State(ctx)
	if err != nil || st.PausedUntil.After(time.Now().Add(pgbudget.DefaultMaxPause)) || st.PausedUntil.Before(start.Add(pgbudget.DefaultMaxPause-time.Minute)) {
		t.Fatalf("state %+v, %v; want paused for DefaultMaxPause", st, err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, budget := range []*pgbudget.Budget{b, mustBudget(t, pool, pgbudget.Config{Key: "acct_1", Rate: 10})} {
		var rl *reconcile.RateLimitError
		if err := budget.Wait(dctx); !errors.As(err, &rl) || rl.RetryAfter > pgbudget.DefaultMaxPause {
			t.Fatalf("Wait during the pause: %v, want a RateLimitError asking for at most DefaultMaxPause", err)
		}
	}
	if _, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", MaxPause: -1}); err == nil {
		t.Fatal("New with a negative MaxPause succeeded")
	}
}

func mustBudget(t *testing.T, db pgstore.DB, cfg pgbudget.Config) *pgbudget.Budget {
	t.Helper()
	b, err := pgbudget.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewRefusesAStripeSecretAsKeyWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	// A host that names the budget after the account's API key: it would be stored in the
	// bucket's row and written in every error of the budget.
	for _, key := range []string{"sk_live_51HqLyjWDarjtT1zdp7dc0123456789abcdef", "acct:rk_test_0123456789abcdef"} {
		_, err := pgbudget.New(pool, pgbudget.Config{Key: key})
		if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("New with a secret as key: %v, want a refusal that does not quote it", err)
		}
	}
}

func TestAStormOfRateLimitAnswersRecordsTheLongestPauseAndFailsNoWait(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	b := mustBudget(t, pool, pgbudget.Config{Key: "acct_1", Rate: 100, Burst: 5, MaxLate: time.Second})
	var start time.Time // by the database's clock, as the pause is recorded
	if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&start); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			b.Throttle(time.Duration(100+i*20) * time.Millisecond) // the longest, 480ms
		}()
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var rl *reconcile.RateLimitError
			if err := b.Wait(dctx); err != nil && !errors.As(err, &rl) {
				t.Errorf("Wait during the storm: %v, want a call or a RateLimitError", err)
			}
		}()
	}
	wg.Wait()
	st, err := b.State(ctx)
	if err != nil || st.Throttles < 1 || st.PausedUntil.Before(start.Add(480*time.Millisecond)) {
		t.Fatalf("state %+v, %v; want a pause recorded lasting at least the longest asked", st, err)
	}
}
