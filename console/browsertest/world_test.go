package browsertest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
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
// one cycle, and builds a console over it (served by the test), its Config changed by mods.
func newWorld(t *testing.T, mods ...func(*console.Config)) *world {
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
	cfg := console.Config{
		Store:        w.store,
		Jobs:         []string{"sweep"},
		Kinds:        kinds,
		TimeZones:    []string{"UTC", "Asia/Tokyo"},
		Authenticate: headerAuth,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	if cfg.Monitor == nil {
		cfg.Monitor = monitorOf(t, w.store, cfg.Jobs...)
	}
	w.console, err = console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// monitorOf is a Monitor of jobs, each read through sr, that keeps nothing.
func monitorOf(t *testing.T, sr reconcile.StatusReader, jobs ...string) *reconcile.Monitor {
	t.Helper()
	var mj []reconcile.MonitorJob
	for _, job := range jobs {
		mj = append(mj, reconcile.MonitorJob{Name: job, Status: sr})
	}
	m, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: mj, TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kinds are the meanings of the test policy's kinds, as a host passes its policies' table
// (stripepolicy.Kinds()).
var kinds = []reconcile.KindInfo{
	{Kind: "paid_locally_not_externally", Meaning: "The row is paid but Stripe has no successful payment.", Money: true},
	{Kind: "missed_success", Meaning: "Stripe took the payment; the row is still pending."},
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

// The money world's host table: orders with an amount in minor units, a currency, and the
// order reference people search by (a search column).
const ordersDDL = `CREATE TABLE orders (
	id          bigint PRIMARY KEY,
	order_ref   text NOT NULL UNIQUE,
	external_id text NOT NULL,
	status      text NOT NULL,
	amount      bigint NOT NULL,
	currency    text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now() - interval '1 day',
	updated_at  timestamptz NOT NULL DEFAULT now() - interval '1 hour'
)`

// order is an orders row as the store reads it (pgstore.NewOf).
type order struct {
	Status   string `db:"status"`
	Amount   int64  `db:"amount"`
	Currency string `db:"currency"`
}

// charge is what the fake payment provider holds for an order.
type charge struct {
	Status   string
	Amount   int64
	Currency string
}

// classifyMoney compares an order with its charge, in minor units of the same currency, and
// records the fields that differ, amounts formatted in their currency's own decimals.
func classifyMoney(o order, c charge) reconcile.Decision {
	ours, theirs := strings.ToUpper(o.Currency), strings.ToUpper(c.Currency)
	var d reconcile.Decision
	switch {
	case ours != theirs:
		d = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "currency_mismatch"}
		d.Diffs = append(d.Diffs, reconcile.Diff{Field: "currency", Local: ours, External: theirs})
	case o.Amount != c.Amount:
		d = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch"}
	default:
		return reconcile.Decision{Verdict: reconcile.InSync}
	}
	if o.Amount != c.Amount || ours != theirs {
		d.Diffs = append(d.Diffs, reconcile.Diff{Field: "amount", Local: reconcile.FormatAmount(o.Amount, ours), External: reconcile.FormatAmount(c.Amount, theirs)})
	}
	return d
}

// The money world's orders and what the provider charged: a yen amount that differs, a dinar
// order in sync, a dollar order charged in yen, and a dinar amount that differs.
var moneyRows = []struct {
	id       int64
	ref, ext string
	ours     order
	charged  charge
	kind     string    // the finding expected; empty: in sync
	amount   [2]string // the amount's diff as shown: ours, theirs
}{
	{1, "ord-1001", "pi_1YenShort", order{"paid", 1000, "jpy"}, charge{"succeeded", 1200, "jpy"}, "amount_mismatch", [2]string{"JPY 1,000", "JPY 1,200"}},
	{2, "ord-1002", "pi_1DinarOK", order{"paid", 1500, "kwd"}, charge{"succeeded", 1500, "kwd"}, "", [2]string{}},
	{3, "ord-1003", "pi_1WrongCurrency", order{"paid", 1000, "usd"}, charge{"succeeded", 1000, "jpy"}, "currency_mismatch", [2]string{"USD 10.00", "JPY 1,000"}},
	{4, "ord-1004", "pi_1DinarShort", order{"paid", 1500, "kwd"}, charge{"succeeded", 1250, "kwd"}, "amount_mismatch", [2]string{"KWD 1.500", "KWD 1.250"}},
}

// moneyWorld is the orders table reconciled for one cycle by a typed store with the order
// reference as a search column, and the console over it.
type moneyWorld struct {
	store   *pgstore.Store[order]
	console *console.Console
	ids     map[int64]int64 // finding id by order id
}

func newMoneyWorld(t *testing.T) *moneyWorld {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, ordersDDL); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.NewOf[order](pool, pgstore.Config{Table: "orders", AggregateType: "order", SearchColumns: []string{"order_ref"}})
	if err != nil {
		t.Fatal(err)
	}
	charged := map[string]charge{}
	for _, r := range moneyRows {
		if _, err := pool.Exec(ctx, `INSERT INTO orders (id, order_ref, external_id, status, amount, currency) VALUES ($1, $2, $3, $4, $5, $6)`,
			r.id, r.ref, r.ext, r.ours.Status, r.ours.Amount, r.ours.Currency); err != nil {
			t.Fatal(err)
		}
		charged[r.ext] = r.charged
	}
	if _, err := reconcile.RunBatch(ctx, reconcile.Config[order, charge]{
		Job: "orders", Source: store, Sink: store, BatchSize: 10,
		Gateway: reconcile.GatewayFunc[charge](func(_ context.Context, id string) (charge, error) {
			if c, ok := charged[id]; ok {
				return c, nil
			}
			return charge{}, reconcile.ErrNotFound
		}),
		Classifier:    reconcile.ClassifierFunc[order, charge](classifyMoney),
		LocalState:    func(o order) string { return o.Status },
		ExternalState: func(c charge) string { return c.Status },
	}); err != nil {
		t.Fatal(err)
	}
	w := &moneyWorld{store: store, ids: map[int64]int64{}}
	found, err := store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsOpen})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		id, err := strconv.ParseInt(f.RecordID, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		w.ids[id] = f.ID
	}
	w.console, err = console.New(console.Config{
		Store: store, Monitor: monitorOf(t, store, "orders"), Authenticate: headerAuth,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
