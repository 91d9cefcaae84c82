package pgstore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A batch within a cycle costs three round trips, whatever its size: the cursor and the rows
// read together, the writes (the transaction begun in their pipeline), and COMMIT.
func TestABatchCostsThreeRoundTrips(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	rt := &roundTrips{}
	s, err := pgstore.New(variant(t, pool, nil, rt), pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	answers := states(20, "succeeded")
	answers["pi_10"], answers["pi_14"] = "canceled", "canceled" // findings in batches 3 and 4
	cfg := reconciletest.Config(fixture{pool, s}, "sweep", reconciletest.NewGateway(answers), 4)
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for batch := 1; batch <= 5; batch++ {
		before := rt.n.Load()
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The cycle's first batch also fixes its high-water mark; the second commits through
		// a connection that may not have prepared the statements yet.
		if n := rt.n.Load() - before; batch > 2 && n != 3 {
			t.Errorf("batch %d (%d rows) took %d round trips, want 3", batch, rep.Scanned, n)
		}
	}
}

// A read after another process moved the cursor starts where that process left it, not where
// this store's own last commit did.
func TestAReadAfterAnotherProcessMovedTheCursorStartsThere(t *testing.T) {
	t.Parallel()
	pool, a := newStore(t, pgstore.Config{})
	b, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	insertPayments(t, pool, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	gw := reconciletest.NewGateway(states(12, "succeeded"))
	run := func(s *pgstore.Store[string]) reconcile.Report {
		t.Helper()
		rep, err := reconcile.RunBatch(context.Background(), reconciletest.Config(fixture{pool, s}, "sweep", gw, 3))
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	run(a) // rows 1-3: the cycle's first batch
	run(a) // rows 4-6
	run(b) // rows 7-9, by another process
	run(a) // rows 10-12
	for i := 1; i <= 12; i++ {
		if n := gw.Calls("pi_" + strconv.Itoa(i)); n != 1 {
			t.Errorf("pi_%d asked %d times, want once", i, n)
		}
	}
	if rep := run(a); !rep.Wrapped || rep.Scanned != 0 {
		t.Errorf("the fifth batch %+v, want the cycle's end", rep)
	}
}

// A key of integer columns is read as the text jsonb writes for it, as a key of any other type
// is: a position written by one release, or one commit's, reads back the same in the next.
func TestAnIntegerKeyReadsAsJSONBWritesIt(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{KeyColumns: []string{"region", "shard", "id"}}, `CREATE TABLE payments (
		region smallint NOT NULL, shard integer NOT NULL, id bigint PRIMARY KEY,
		external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`,
		`CREATE UNIQUE INDEX ON payments (region, shard, id)`)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO payments (region, shard, id, external_id, status)
		VALUES (-32768, -2147483648, -9223372036854775808, 'pi_a', 'paid'), (0, 0, 0, 'pi_b', 'paid'),
			(7, 12, 9223372036854775807, 'pi_c', 'paid')`); err != nil {
		t.Fatal(err)
	}
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil || len(b.Records) != 3 {
		t.Fatalf("read %d rows, %v; want 3", len(b.Records), err)
	}
	for _, r := range b.Records {
		var want string
		if err := pool.QueryRow(ctx, `SELECT jsonb_build_array(region, shard, id)::text FROM payments WHERE id::text = $1`, r.ID).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if r.Key != want {
			t.Errorf("row %s: key %q, want %q as jsonb writes it", r.ID, r.Key, want)
		}
	}
}
