package stripeadapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// covWorld is a payments table whose rows each have a PaymentIntent in stripetest, created at
// the row's created_at (so that the bulk list finds them), pending on both sides: in sync.
type covWorld struct {
	t     *testing.T
	srv   *stripetest.Server
	pool  *pgxpool.Pool
	store *pgstore.Store[string]
	gw    *stripeadapter.ObjectGateway[*stripe.PaymentIntent]
	base  time.Time // the i-th row added is created at base + i seconds
	added int64     // rows added by add
	next  int64     // the next id of a bigint-keyed table
	uuids bool      // the table is keyed by (created_at, id uuid)
}

// newCovWorld makes a payments table keyed by id (or by created_at and a uuid id) with rows
// rows.
func newCovWorld(t *testing.T, rows int, composite bool) *covWorld {
	t.Helper()
	w := &covWorld{t: t, uuids: composite, next: 1, base: time.Now().Add(-3 * time.Hour).Truncate(time.Second)}
	w.srv = stripetest.NewServer(stripetest.Options{})
	t.Cleanup(w.srv.Close)
	w.pool, _ = pgtest.PoolSchema(t)
	ctx := context.Background()
	ddl := `CREATE TABLE payments (id bigint PRIMARY KEY, external_id text, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`
	cfg := pgstore.Config{Table: "payments"}
	if composite {
		ddl = `CREATE TABLE payments (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), external_id text, status text NOT NULL,
			created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, UNIQUE (created_at, id))`
		cfg.KeyColumns = []string{"created_at", "id"}
	}
	if _, err := w.pool.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, w.pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.store, err = pgstore.New(w.pool, cfg); err != nil {
		t.Fatal(err)
	}
	if w.gw, err = stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, stripeadapter.PaymentIntents()); err != nil {
		t.Fatal(err)
	}
	w.add(rows)
	return w
}

// add inserts n rows created after every row so far, each with its intent.
func (w *covWorld) add(n int) {
	w.t.Helper()
	times := make([]time.Time, n)
	for i := range times {
		times[i] = w.base.Add(time.Duration(w.added+int64(i)+1) * time.Second)
	}
	w.added += int64(n)
	w.insertAt(times...)
}

// insertAt inserts one row (with its intent) per creation time.
func (w *covWorld) insertAt(created ...time.Time) {
	w.t.Helper()
	pis := make([]stripetest.PaymentIntent, len(created))
	for i, c := range created {
		pis[i] = stripetest.PaymentIntent{Created: c, Amount: 100}
	}
	ids := w.srv.AddPaymentIntents(pis)
	ctx := context.Background()
	if w.uuids {
		if _, err := w.pool.Exec(ctx, `INSERT INTO payments (external_id, status, created_at, updated_at)
			SELECT e, 'pending', c, now() - interval '1 hour' FROM unnest($1::text[], $2::timestamptz[]) AS t(e, c)`, ids, created); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	if _, err := w.pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at)
		SELECT $1::bigint + o - 1, e, 'pending', c, now() - interval '1 hour'
		FROM unnest($2::text[], $3::timestamptz[]) WITH ORDINALITY AS t(e, c, o)`, w.next, ids, created); err != nil {
		w.t.Fatal(err)
	}
	w.next += int64(len(created))
}

func (w *covWorld) config(gw reconcile.Gateway[*stripe.PaymentIntent], batch int) reconcile.Config[string, *stripe.PaymentIntent] {
	return reconcile.Config[string, *stripe.PaymentIntent]{
		Job: "sweep", Source: w.store, Sink: w.store, Gateway: gw,
		Classifier: stripepolicy.PaymentIntentPolicy(), BatchSize: batch,
	}
}

func (w *covWorld) status(job string) reconcile.Status {
	w.t.Helper()
	st, err := w.store.Status(context.Background(), job)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// cycleStart is what a cycle must cover: the rows present when it starts, and the database
// time then (a row verified in the cycle has an observation at least as recent).
type cycleStart struct {
	at  time.Time
	ids []string
}

func (w *covWorld) startCycle() cycleStart {
	w.t.Helper()
	var c cycleStart
	if err := w.pool.QueryRow(context.Background(), `SELECT now(), coalesce(array_agg(id::text), '{}') FROM payments`).Scan(&c.at, &c.ids); err != nil {
		w.t.Fatal(err)
	}
	return c
}

// covered fails the test unless every row present at c was verified (observed) since c began.
func (w *covWorld) covered(job string, c cycleStart, cycle int) {
	w.t.Helper()
	var missing []string
	if err := w.pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(r ORDER BY r), '{}') FROM unnest($1::text[]) AS r
		WHERE NOT EXISTS (SELECT 1 FROM reconcile_observations o WHERE o.job = $2 AND o.record_id = r AND o.verified_at >= $3)`,
		c.ids, job, c.at).Scan(&missing); err != nil {
		w.t.Fatal(err)
	}
	if len(missing) > 0 {
		w.t.Fatalf("cycle %d: %d of the %d rows present at its start were not verified in it, such as %v",
			cycle, len(missing), len(c.ids), missing[:min(5, len(missing))])
	}
}

// runsPerCycle is how many batches of size batch a cycle over n rows takes: full batches,
// then the short read (possibly empty) that ends it.
func runsPerCycle(n, batch int) int { return n/batch + 1 }

func TestSteadyInsertsBetweenScheduledRunsStillCompleteCycles(t *testing.T) {
	t.Parallel()
	const (
		initial, batch, perRun, runs = 500, 200, 20, 30
	)
	w := newCovWorld(t, initial, false)
	ctx := context.Background()
	r, err := reconcile.New(w.config(w.gw, batch))
	if err != nil {
		t.Fatal(err)
	}
	// The math: a cycle over n rows takes n/200+1 runs, and 20 rows arrive per run.
	wantCycles, rows, left := 0, initial, runsPerCycle(initial, batch)
	for range runs {
		rows += perRun
		if left--; left == 0 {
			wantCycles++
			left = runsPerCycle(rows, batch)
		}
	}
	if wantCycles < 7 {
		t.Fatalf("the math says %d cycles", wantCycles)
	}

	cycles := 0
	start := w.startCycle()
	for run := range runs {
		rep, err := r.RunBatch(ctx)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if rep.RateLimited || rep.Verdicts[reconcile.Unverifiable] > 0 {
			t.Fatalf("run %d: %+v", run, rep)
		}
		if rep.Wrapped {
			w.covered("sweep", start, cycles)
			cycles++
			if st := w.status("sweep"); st.CyclesCompleted != int64(cycles) {
				t.Fatalf("run %d wrapped: status says %d cycles completed, want %d", run, st.CyclesCompleted, cycles)
			}
		}
		w.add(perRun) // the host's traffic between scheduled runs
		if rep.Wrapped {
			start = w.startCycle()
		}
	}
	st := w.status("sweep")
	if cycles != wantCycles || st.CyclesCompleted != int64(wantCycles) {
		t.Fatalf("after %d runs: %d wraps, %d cycles completed; want %d (%d rows per cycle start, batch %d)",
			runs, cycles, st.CyclesCompleted, wantCycles, initial, batch)
	}
}

// A row inserted mid-cycle with a key between the cursor and the cycle's high-water mark (a
// backdated created_at under a (created_at, id) key) is a row of the cycle: it is read in it.
func TestABackdatedRowInsertedMidCycleIsReadInThatCycle(t *testing.T) {
	t.Parallel()
	const batch = 100
	w := newCovWorld(t, 350, true)
	ctx := context.Background()
	r, err := reconcile.New(w.config(w.gw, batch))
	if err != nil {
		t.Fatal(err)
	}
	start := w.startCycle()
	for run := 0; ; run++ {
		if run == 10 {
			t.Fatal("the cycle did not complete in 10 runs")
		}
		rep, err := r.RunBatch(ctx)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if run == 0 {
			// Between the cursor (row 100) and the end (row 350): created just after row 200.
			w.insertAt(w.base.Add(200*time.Second + 500*time.Millisecond))
			start.ids = append(start.ids, w.lastUUID())
		}
		if rep.Wrapped {
			break
		}
		w.add(30) // newer rows keep arriving
	}
	w.covered("sweep", start, 0)
	if st := w.status("sweep"); st.CyclesCompleted != 1 {
		t.Fatalf("%d cycles completed, want 1", st.CyclesCompleted)
	}
}

// lastUUID is the id of the row last inserted with a backdated time: the one with the
// greatest id among rows created at a fraction of a second.
func (w *covWorld) lastUUID() string {
	w.t.Helper()
	var id string
	if err := w.pool.QueryRow(context.Background(), `SELECT id::text FROM payments WHERE date_trunc('second', created_at) <> created_at`).Scan(&id); err != nil {
		w.t.Fatal(err)
	}
	return id
}

// A sharded job's last shard is open upward: rows arriving between ticks land in it, and its
// cycles still complete, each covering the rows present at its start.
func TestAShardedJobCompletesCyclesWhileRowsArriveBetweenTicks(t *testing.T) {
	t.Parallel()
	const batch, perTick, ticks = 100, 20, 45
	w := newCovWorld(t, 500, false)
	ctx := context.Background()
	j, err := pgshard.NewJob(w.store, pgshard.Config{Job: "sweep", Shards: 3, Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := w.config(w.gw, batch)
	cfg.Source, cfg.Sink, cfg.Job = nil, nil, ""
	cycles := 0
	start := w.startCycle()
	for tick := range ticks {
		// One batch a tick (MaxRows 1): rows arrive between any two batches.
		tr, err := pgshard.RunShard(ctx, j, cfg, reconcile.TickBudget{MaxRows: 1})
		if err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
		if !tr.Leased {
			t.Fatalf("tick %d leased no shard: %+v", tick, tr)
		}
		if tr.CycleCompleted {
			w.covered("sweep", start, cycles)
			cycles++
		}
		w.add(perTick)
		if tr.CycleCompleted {
			start = w.startCycle()
		}
	}
	// A cycle over n rows takes about n/100 + 3 ticks (each shard ends with a short read), and
	// 20 rows arrive per tick: 500, 660, 880, 1200 rows at the starts of the first cycles.
	if st := w.status("sweep"); cycles < 3 || st.CyclesCompleted != int64(cycles) {
		t.Fatalf("after %d ticks: %d cycles completed by ticks, %d by status; want at least 3", ticks, cycles, st.CyclesCompleted)
	}
}
