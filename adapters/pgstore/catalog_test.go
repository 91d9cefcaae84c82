package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// variant opens a second pool on the same schema as pool, with extra session settings or a
// tracer.
func variant(t *testing.T, pool *pgxpool.Pool, params map[string]string, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.ConnConfig.Tracer = tracer
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestCheckRefusesTablesThatWouldLoseOrConfuseRows(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{}, paymentsDDL,
		`ALTER TABLE payments ADD COLUMN order_id text NOT NULL DEFAULT '', ADD COLUMN ref text, ADD COLUMN score float8 NOT NULL DEFAULT 0,
			ADD COLUMN touched text NOT NULL DEFAULT ''`)
	tests := []struct {
		name string
		cfg  pgstore.Config
		want string
	}{
		{"a row id that is not unique", pgstore.Config{IDColumn: "order_id"}, "IDColumn [order_id]"},
		{"a nullable row id", pgstore.Config{IDColumn: "ref"}, `"ref" of "payments" is nullable`},
		{"a floating-point key", pgstore.Config{KeyColumns: []string{"score", "id"}}, "floating-point"},
		{"an updated_at that is not a timestamp", pgstore.Config{UpdatedAtColumn: "touched"}, `"touched" of "payments" is text, not a timestamp`},
		{"an unknown time zone", pgstore.Config{TimeZone: "Mars/Olympus"}, "Mars/Olympus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Table = "payments"
			s, err := pgstore.New(pool, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error mentioning %s", err, tt.want)
			}
		})
	}
	if _, err := pgstore.New(pool, pgstore.Config{Table: "payments", TimeZone: "UTC'; DROP TABLE payments; --"}); err == nil {
		t.Fatal("New accepted a time zone with a quote in it")
	}
}

// TestCheckSaysAViewIsNotATable: a view's columns are nullable to the catalog and it has no
// unique index, so its key cannot be trusted. Check says that it is a view, rather than ask
// for a NOT NULL its owner cannot add.
func TestCheckSaysAViewIsNotATable(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE VIEW payments_view AS SELECT * FROM payments`,
		`CREATE MATERIALIZED VIEW payments_snapshot AS SELECT * FROM payments`)
	for _, table := range []string{"payments_view", "payments_snapshot"} {
		s, err := pgstore.New(pool, pgstore.Config{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "is a view") || strings.Contains(err.Error(), "NOT NULL") {
			t.Errorf("Check over %s = %v, want an error saying it is a view", table, err)
		}
	}
}

func TestTheCursorMeansTheSameRowWhateverTheSessionsDateStyle(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{}, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`)
	ctx := context.Background()
	// One row a day through January: 02/01 means 2 January to a DMY session, 1 February to MDY.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT i, 'pi_' || i, 'paid', timestamptz '2026-01-01 00:00:00+00' + (i - 1) * interval '1 day'
		FROM generate_series(1, 31) i`); err != nil {
		t.Fatal(err)
	}
	cfg := pgstore.Config{Table: "payments", KeyColumns: []string{"created_at", "id"}}
	dmy, err := pgstore.New(variant(t, pool, map[string]string{"DateStyle": "SQL, DMY", "TimeZone": "Asia/Tokyo"}, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mdy, err := pgstore.New(variant(t, pool, map[string]string{"DateStyle": "SQL, MDY", "TimeZone": "America/Los_Angeles"}, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(states(31, "succeeded"))
	// Alternate processes batch by batch, as two workers taking turns would.
	scanned := 0
	for i := 0; ; i++ {
		s := dmy
		if i%2 == 1 {
			s = mdy
		}
		rep, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: "styles", Source: s, Sink: s, Gateway: gw,
			Classifier: reconciletest.Classifier(), BatchSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Wrapped {
			break
		}
		scanned += rep.Scanned
	}
	for i := 1; i <= 31; i++ {
		if n := gw.Calls(fmt.Sprintf("pi_%d", i)); n != 1 {
			t.Fatalf("pi_%d asked %d times in a cycle shared by a DMY and an MDY session, want 1 (%d rows scanned)", i, n, scanned)
		}
	}
}

func TestGraceOnATimestampWithoutTimeZoneDoesNotDependOnTheSessionZone(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{}, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC') - interval '1 day',
		updated_at timestamp NOT NULL)`)
	ctx := context.Background()
	// Row 1 changed a second ago, row 2 an hour ago, both written in UTC as Rails does.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'pending', (now() AT TIME ZONE 'UTC') - interval '1 second'),
		(2, 'pi_2', 'pending', (now() AT TIME ZONE 'UTC') - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	for _, zone := range []string{"Asia/Tokyo", "America/Los_Angeles"} {
		t.Run("in a session in "+zone, func(t *testing.T) {
			s, err := pgstore.New(variant(t, pool, map[string]string{"TimeZone": zone}, nil), pgstore.Config{Table: "payments"})
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Read(ctx, reconcile.ReadRequest{Job: zone, Limit: 10, Grace: reconcile.DefaultGrace})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Records) != 2 || !b.Records[0].Recent || b.Records[1].Recent {
				t.Fatalf("records %+v; want row 1 recent and row 2 not", b.Records)
			}
			st, err := s.Status(ctx, zone)
			if err != nil {
				t.Fatal(err)
			}
			if h := st.Lag.Hours(); h < 23.9 || h > 24.1 {
				t.Fatalf("lag %v, want about a day (rows created a day ago, never verified)", st.Lag)
			}
		})
	}
}

func TestACursorRowAtVersionZeroIsAdvancedNotFoughtOver(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// An operator (or a tool) created the job's cursor by hand.
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_cursors (job) VALUES ('sweep')`); err != nil {
		t.Fatal(err)
	}
	f := fixture{pool, s}
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "paid"})
	reconciletest.Cycle(t, reconciletest.Config(f, "sweep", reconciletest.NewGateway(states(1, "succeeded")), 10), 3)
}

// roundTrips counts what a connection sends: each query, and each pipelined batch as one.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func TestABatchCostsTheSameRoundTripsWhateverItsSize(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, CASE WHEN i % 3 = 0 THEN 'pending' ELSE 'paid' END, now() - interval '1 hour'
		FROM generate_series(1, 2000) i`); err != nil {
		t.Fatal(err)
	}
	trips := &roundTrips{}
	s, err := pgstore.New(variant(t, pool, nil, trips), pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil { // catalog reads happen once, not per batch
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(states(2000, "succeeded"))
	perBatch := map[int]int64{}
	for _, size := range []int{10, 1000} {
		trips.n.Store(0)
		rep, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: fmt.Sprint("size", size), Source: s, Sink: s,
			Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: size})
		if err != nil || rep.Scanned != size || rep.NewFindings == 0 {
			t.Fatalf("batch of %d: %+v, %v", size, rep, err)
		}
		perBatch[size] = trips.n.Load()
	}
	if perBatch[10] != perBatch[1000] || perBatch[1000] > 6 {
		t.Fatalf("round trips per batch: %v; want the same small number for 10 rows and 1000", perBatch)
	}
	t.Logf("round trips per batch: %v", perBatch)
}

func TestNoConnectionIsHeldWhileTheGatewayIsAsked(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	f := fixture{pool, s}
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "paid"}, reconciletest.Row{ID: 2, ExternalID: "pi_2", Local: "pending"})
	var held atomic.Int32
	gw := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		held.Store(max(held.Load(), pool.Stat().AcquiredConns()))
		return "succeeded", nil
	})
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
		Classifier: reconciletest.Classifier(), Concurrency: 2}, 3)
	if h := held.Load(); h != 0 {
		t.Fatalf("%d connections were checked out while the gateway was asked, want 0", h)
	}
}

// A host's table rarely has every column under the default name; the error about a missing
// or mistyped one must say which Config field names it and what the store reads it for, or
// the host cannot tell that updated_at is what makes a row in flight.
func TestCheckNamesTheConfigFieldOfAMissingColumnAndWhatItIsFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (order_no bigint PRIMARY KEY, stripe_id text, status text,
		placed_at timestamptz, changed_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	named := pgstore.Config{Table: "orders", KeyColumns: []string{"order_no"}, ExternalIDColumn: "stripe_id",
		UpdatedAtColumn: "changed_at", CreatedAtColumn: "placed_at"}
	with := func(edit func(*pgstore.Config)) pgstore.Config {
		c := named
		edit(&c)
		return c
	}
	for _, tt := range []struct {
		name string
		cfg  pgstore.Config
		want string
	}{
		{"no updated_at", with(func(c *pgstore.Config) { c.UpdatedAtColumn = "" }),
			`pgstore: table "orders" has no column "updated_at": set Config.UpdatedAtColumn to the timestamp of a row's last change ` +
				`(rows changed within the grace period are in flight, not asked about)`},
		{"no created_at", with(func(c *pgstore.Config) { c.CreatedAtColumn = "" }),
			`pgstore: table "orders" has no column "created_at": set Config.CreatedAtColumn to the timestamp of a row's creation ` +
				`(a never-verified row's lag counts from it; the bulk fetch lists the external objects created around it)`},
		{"no external_id", with(func(c *pgstore.Config) { c.ExternalIDColumn = "" }),
			`pgstore: table "orders" has no column "external_id": set Config.ExternalIDColumn to the column holding the external object's id`},
		{"no id", with(func(c *pgstore.Config) { c.KeyColumns = nil }),
			`pgstore: table "orders" has no column "id": set Config.KeyColumns[0] to the columns the sweep walks the table by, unique together (the keyset)`},
		{"an updated_at that is text", with(func(c *pgstore.Config) { c.UpdatedAtColumn = "status" }),
			`pgstore: column "status" of "orders" is text, not a timestamp: set Config.UpdatedAtColumn to the timestamp of a row's last change ` +
				`(rows changed within the grace period are in flight, not asked about)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := pgstore.New(pool, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(ctx); err == nil || err.Error() != tt.want {
				t.Errorf("Check = %v\nwant     %s", err, tt.want)
			}
		})
	}
	s, err := pgstore.New(pool, named)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check with every column named = %v, want nil", err)
	}
}
