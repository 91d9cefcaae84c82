package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// pgFanWorld is a payments table shared by every account (an account column says whose row it
// is), an accounts table the fan-out follows, and one fake external system per account.
type pgFanWorld struct {
	t        *testing.T
	pool     *pgxpool.Pool
	gateways map[string]*reconciletest.Gateway
}

func newPgFanWorld(t *testing.T) *pgFanWorld {
	t.Helper()
	ctx := context.Background()
	w := &pgFanWorld{t: t, pool: pgtest.Pool(t), gateways: map[string]*reconciletest.Gateway{}}
	if _, err := w.pool.Exec(ctx, `
		CREATE TABLE accounts (id text PRIMARY KEY);
		CREATE TABLE payments (id bigint PRIMARY KEY, account text NOT NULL, external_id text, status text NOT NULL,
			created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
		CREATE INDEX ON payments (account, id)`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, w.pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	return w
}

// addAccount inserts an account with rows paid payments; the external side agrees, except that
// the account's first row is pending there and succeeded externally (a missed webhook).
func (w *pgFanWorld) addAccount(acct string, firstID, rows int) {
	w.t.Helper()
	states := map[string]string{}
	for i := firstID; i < firstID+rows; i++ {
		states[fmt.Sprintf("pi_%d", i)] = "succeeded"
	}
	w.gateways[acct] = reconciletest.NewGateway(states)
	if _, err := w.pool.Exec(context.Background(), `INSERT INTO accounts VALUES ($1)`, acct); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.pool.Exec(context.Background(), `
		INSERT INTO payments SELECT i, $1, 'pi_' || i, CASE WHEN i = $2 THEN 'pending' ELSE 'paid' END,
			now() - interval '1 day', now() - interval '1 day'
		FROM generate_series($2::bigint, $2::bigint + $3 - 1) AS i`, acct, firstID, rows); err != nil {
		w.t.Fatal(err)
	}
}

func (w *pgFanWorld) listAccounts(ctx context.Context) ([]string, error) {
	rows, err := w.pool.Query(ctx, `SELECT id FROM accounts`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// build is the host's Build: a store over the account's rows and a job of its own.
func (w *pgFanWorld) build(acct string) ([]reconcile.FanOutJob, error) {
	store, err := pgstore.New(w.pool, pgstore.Config{Table: "payments",
		Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "account", Op: pgstore.Eq, Value: acct}}}}})
	if err != nil {
		return nil, err
	}
	job := "payments@" + acct
	r, err := reconcile.New(reconcile.Config[string, string]{Job: job, Source: store, Sink: store,
		Gateway: w.gateways[acct], Classifier: reconciletest.Classifier(), BatchSize: 2})
	if err != nil {
		return nil, err
	}
	return []reconcile.FanOutJob{{Job: job, Batches: r, Status: store}}, nil
}

func (w *pgFanWorld) round(f *reconcile.FanOut) {
	w.t.Helper()
	for range 100 {
		rep, err := f.RunBatch(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if rep.Wrapped {
			return
		}
	}
	w.t.Fatal("no round completed in 100 batches")
}

// cycles returns each job's completed cycles, from the cursors table.
func (w *pgFanWorld) cycles() map[string]int64 {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT job, cycles_completed FROM reconcile_cursors`)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var job string
		var n int64
		if err := rows.Scan(&job, &n); err != nil {
			w.t.Fatal(err)
		}
		out[job] = n
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

func TestFanOutOverPgstoreKeepsACursorPerAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newPgFanWorld(t)
	w.addAccount("acct_big", 1, 9)     // 5 batches of 2 (the last one short)
	w.addAccount("acct_small", 100, 1) // 1 batch
	f, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "payments@connect", Accounts: w.listAccounts, Build: w.build})
	if err != nil {
		t.Fatal(err)
	}
	w.round(f)
	if got := w.cycles(); got["payments@acct_big"] != 1 || got["payments@acct_small"] != 1 || len(got) != 2 {
		t.Fatalf("cycles after one round: %v; want one each, under each account's job", got)
	}
	// Each account was asked only about its own rows, once each.
	if n := w.gateways["acct_big"].Calls(""); n != 9 {
		t.Errorf("acct_big: %d calls, want 9", n)
	}
	if n := w.gateways["acct_small"].Calls(""); n != 1 {
		t.Errorf("acct_small: %d calls, want 1", n)
	}
	// Each account's missed webhook is a finding under its own job.
	var findings []string
	rows, err := w.pool.Query(ctx, `SELECT job || ' ' || record_id || ' ' || kind FROM reconcile_findings ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		findings = append(findings, s)
	}
	if got, want := strings.Join(findings, "; "), "payments@acct_big 1 missed_success; payments@acct_small 100 missed_success"; got != want {
		t.Errorf("findings %s, want %s", got, want)
	}

	// A new account in the table joins at the next round; a removed one is dropped.
	w.addAccount("acct_new", 200, 3)
	if _, err := w.pool.Exec(ctx, `DELETE FROM accounts WHERE id = 'acct_small'`); err != nil {
		t.Fatal(err)
	}
	w.round(f)
	got := w.cycles()
	if got["payments@acct_big"] != 2 || got["payments@acct_small"] != 1 || got["payments@acct_new"] != 1 {
		t.Fatalf("cycles after the second round: %v; want big 2, small still 1, new 1", got)
	}
	if n := w.gateways["acct_small"].Calls(""); n != 1 {
		t.Errorf("the removed account was asked again: %d calls", n)
	}

	// Health reads each account's status through its own store.
	h := f.Health(ctx, reconcile.HealthPolicy{MaxStaleFindings: -1})
	if !h.OK || len(h.Checks) != 2 || h.Checks[0].Name != "account:acct_big" || h.Checks[1].Name != "account:acct_new" {
		t.Fatalf("health %s, checks %+v", h, h.Checks)
	}
	if h.Status.Rows != 12 || h.Status.OpenFindings["missed_success"] != 2 {
		t.Errorf("status: %d rows, findings %v; want the two accounts' 12 rows and 2 findings", h.Status.Rows, h.Status.OpenFindings)
	}
	// An account whose external system is down fails its check, by name, while the other's
	// check passes.
	w.gateways["acct_new"].Set("pi_200", "!unavailable")
	w.gateways["acct_new"].Set("pi_201", "!unavailable")
	// acct_new sits out after its first batch, and the round completes without it.
	w.round(f)
	if got := w.cycles(); got["payments@acct_big"] != 3 || got["payments@acct_new"] != 1 {
		t.Errorf("cycles with acct_new down: %v; want acct_big's third, acct_new still at one", got)
	}
	h = f.Health(ctx, reconcile.HealthPolicy{MaxStaleFindings: -1})
	if h.OK || len(h.Reasons()) != 1 || !strings.HasPrefix(h.Reasons()[0], "account acct_new (job payments@acct_new): last_attempt: ") {
		t.Errorf("health with acct_new down: %s", h)
	}
}
