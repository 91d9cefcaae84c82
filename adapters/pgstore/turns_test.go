package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// turns stages two sessions of one test where they would deadlock if they did not take turns:
// each session is a pool of its own, named for who runs it (a sweep, a lane, a webhook); a
// holder stalls them, in a trigger (hold) or on rows it locks, until both wait for a lock; then
// it lets go, and both must commit, one after the other.
type turns struct {
	t    *testing.T
	ctx  context.Context
	base *pgxpool.Pool
	// key is the advisory lock the triggers of hold wait on: this test's schema's, so that
	// parallel tests share neither it nor their sessions' names.
	key    int64
	pools  map[string]*pgxpool.Pool
	holder pgx.Tx
	runs   []run
}

// run is a session's commit under way.
type run struct {
	who string
	err chan error
}

func newTurns(t *testing.T, base *pgxpool.Pool) *turns {
	t.Helper()
	tu := &turns{t: t, ctx: context.Background(), base: base, pools: map[string]*pgxpool.Pool{}}
	if err := base.QueryRow(tu.ctx, `SELECT hashtext(current_schema())`).Scan(&tu.key); err != nil {
		t.Fatal(err)
	}
	return tu
}

// app is the application_name of who's session.
func (tu *turns) app(who string) string { return fmt.Sprintf("turns %s %d", who, tu.key) }

// hold makes who's session wait for the holder's lock (see lock) before it does event (INSERT,
// UPDATE) to a row of table for which when holds.
func (tu *turns) hold(who, table, event, when string) {
	tu.t.Helper()
	fn := pgx.Identifier{"hold_" + who}.Sanitize()
	exec(tu.t, tu.base, fmt.Sprintf(`CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF current_setting('application_name') = %s AND %s THEN
				PERFORM pg_advisory_lock(%d); PERFORM pg_advisory_unlock(%d);
			END IF;
			RETURN NEW;
		END $$`, fn, quoteLiteral(tu.app(who)), when, tu.key, tu.key))
	exec(tu.t, tu.base, fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW EXECUTE FUNCTION %s()`,
		fn, event, pgx.Identifier{table}.Sanitize(), fn))
}

// pool is who's session: a pool named for who, which reports a deadlock after 100ms rather than
// the server's default second.
func (tu *turns) pool(who string) *pgxpool.Pool {
	tu.t.Helper()
	if p, ok := tu.pools[who]; ok {
		return p
	}
	pc := tu.base.Config()
	pc.ConnConfig.RuntimeParams["application_name"] = tu.app(who)
	pc.ConnConfig.RuntimeParams["deadlock_timeout"] = "100ms"
	p, err := pgxpool.NewWithConfig(tu.ctx, pc)
	if err != nil {
		tu.t.Fatal(err)
	}
	tu.t.Cleanup(p.Close)
	tu.pools[who] = p
	return p
}

// store is a store over the payments table in who's session.
func (tu *turns) store(who string) *pgstore.Store[string] {
	tu.t.Helper()
	s, err := pgstore.New(tu.pool(who), pgstore.Config{Table: "payments"})
	if err != nil {
		tu.t.Fatal(err)
	}
	return s
}

// lock takes the lock the triggers of hold wait on, until unlock.
func (tu *turns) lock() { tu.lockWith(fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, tu.key)) }

// lockWith runs query, which takes locks, in the holder's transaction, until unlock.
func (tu *turns) lockWith(query string) {
	tu.t.Helper()
	tx, err := tu.base.Begin(tu.ctx)
	if err != nil {
		tu.t.Fatal(err)
	}
	// Before the pools close and the schema goes, should the test stop before unlock.
	tu.t.Cleanup(func() { tx.Rollback(tu.ctx) }) //nolint:errcheck // after Commit, a no-op
	tu.holder = tx
	if _, err := tx.Exec(tu.ctx, query); err != nil {
		tu.t.Fatal(err)
	}
}

// unlock lets go of the holder's locks.
func (tu *turns) unlock() {
	tu.t.Helper()
	if err := tu.holder.Commit(tu.ctx); err != nil {
		tu.t.Fatal(err)
	}
}

// start runs commit, who's, in a goroutine and returns once who's session waits for a lock.
func (tu *turns) start(who string, commit func() error) {
	tu.t.Helper()
	r := run{who: who, err: make(chan error, 1)}
	tu.runs = append(tu.runs, r)
	go func() { r.err <- commit() }()
	tu.waiting(who)
}

// waiting returns once who's session waits for a lock.
func (tu *turns) waiting(who string) {
	tu.t.Helper()
	for {
		var n int
		if err := tu.base.QueryRow(tu.ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			tu.app(who)).Scan(&n); err != nil {
			tu.t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bothCommitted waits for the commits start ran, and fails the test for each that failed,
// saying whether it was the deadlock (40P01) the server broke.
func (tu *turns) bothCommitted() {
	tu.t.Helper()
	for _, r := range tu.runs {
		if err := <-r.err; err != nil {
			var pe *pgconn.PgError
			tu.t.Errorf("the %s's commit: %v (deadlock: %v); want both to commit in turn", r.who, err, errors.As(err, &pe) && pe.Code == "40P01")
		}
	}
}

// quoteLiteral is s as an SQL string literal.
func quoteLiteral(s string) string {
	out := "'"
	for _, c := range s {
		if c == '\'' {
			out += "'"
		}
		out += string(c)
	}
	return out + "'"
}
