package browsertest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/console"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The host table of the test (as in the console's own tests).
const paymentsDDL = `CREATE TABLE payments (
	id          text PRIMARY KEY,
	external_id text NOT NULL,
	status      text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now() - interval '1 day',
	updated_at  timestamptz NOT NULL DEFAULT now() - interval '1 hour'
)`

// world is a database with one reconciled job and the console over it: the part of the
// console tests' world (console/world_test.go) that the browser test uses.
type world struct {
	pool    *pgxpool.Pool
	store   *pgstore.Store[string]
	console *console.Console
	ids     map[string]int64 // open finding id by record id, after the first cycle
}

// The sweep job's planted drift: records 1–2 missed their success webhook (Repairable, with a
// command), 3–4 are paid locally but canceled at Stripe (NeedsReview), 5–6 are in sync.
var sweepRows = []struct{ id, ext, local, remote string }{
	{"1", "pi_1TestMissed0001", "pending", "succeeded"},
	{"2", "pi_1TestMissed0002", "pending", "succeeded"},
	{"3", "pi_1TestCanceled03", "paid", "canceled"},
	{"4", "pi_1TestCanceled04", "paid", "canceled"},
	{"5", "pi_1TestInSync0005", "paid", "succeeded"},
	{"6", "pi_1TestInSync0006", "paid", "succeeded"},
}

// newWorld migrates a schema of the test's own, plants the sweep job's drift, reconciles it for
// one cycle, and builds a console over it (served by the test).
func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{pool: pgtest.Pool(t), ids: map[string]int64{}}
	if _, err := w.pool.Exec(ctx, paymentsDDL); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, w.pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.store, err = pgstore.New(w.pool, pgstore.Config{Table: "payments", AggregateType: "payment"}); err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{}
	for _, r := range sweepRows {
		if _, err := w.pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) VALUES ($1, $2, $3)`, r.id, r.ext, r.local); err != nil {
			t.Fatal(err)
		}
		ext[r.ext] = r.remote
	}
	reconciletest.Cycle(t, reconcile.Config[string, string]{
		Job: "sweep", Source: w.store, Sink: w.store, Gateway: reconciletest.NewGateway(ext),
		Classifier: reconciletest.Classifier(), BatchSize: 4,
	}, 5)
	open, err := w.store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsOpen})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range open {
		w.ids[f.RecordID] = f.ID
	}
	w.console, err = console.New(console.Config{
		Store:        w.store,
		Jobs:         []string{"sweep"},
		Authenticate: headerAuth,
		StatusTTL:    -1,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// headerAuth is the test's Authenticate: the actor named by the X-Test-User header.
func headerAuth(r *http.Request) (string, error) {
	if u := r.Header.Get("X-Test-User"); u != "" {
		return u, nil
	}
	return "", errors.New("no X-Test-User header")
}

// finding reads a finding from the database, not through the console.
func (w *world) finding(t *testing.T, id int64) reconcile.FindingDetail {
	t.Helper()
	d, err := w.store.Finding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
