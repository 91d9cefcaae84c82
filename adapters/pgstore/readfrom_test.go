package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// charge is a typed row whose columns Config.Columns names at run time.
type charge struct {
	Status   string
	Amount   int64
	Currency string
	Refunded int64
}

// TestReadFromNeedsOnlySelect reads a whole table with ReadFrom as a role that may only SELECT
// it, in a schema without the reconciler's tables, in a read-only session: every row once, in
// key order, with the columns Config.Columns names, the cycle's end fixed on the first read.
func TestReadFromNeedsOnlySelect(t *testing.T) {
	ctx := context.Background()
	admin, schema := pgtest.PoolSchema(t)
	if _, err := admin.Exec(ctx, `CREATE TABLE charges (
		id bigint PRIMARY KEY, pi text, state text, cents bigint, cur text,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day',
		updated_at timestamptz NOT NULL DEFAULT now() - interval '1 day');
		INSERT INTO charges (id, pi, state, cents, cur) SELECT g, 'pi_' || g, 'paid', g * 100, 'usd' FROM generate_series(1, 25) g`); err != nil {
		t.Fatal(err)
	}
	url := pgtest.SelectOnlyURL(t, schema, "charges")
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.NewOf[charge](pool, pgstore.Config{Table: "charges", ExternalIDColumn: "pi",
		Columns: map[string]string{"Status": "state", "Amount": "cents", "Currency": "cur", "Refunded": "-"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Check(ctx); err == nil {
		t.Fatal("Check passed without the reconciler's tables; the test would prove nothing")
	}
	var cur reconcile.Cursor
	var got []reconcile.Record[charge]
	for range 10 {
		b, err := store.ReadFrom(ctx, reconcile.ReadRequest{Limit: 10}, cur)
		if err != nil {
			t.Fatalf("ReadFrom: %v", err)
		}
		if b.Cursor.End != "[25]" {
			t.Fatalf("cycle end %q, want [25]", b.Cursor.End)
		}
		got = append(got, b.Records...)
		if len(b.Records) < 10 {
			break
		}
		cur = b.Cursor
		cur.Position = b.Records[len(b.Records)-1].Key
	}
	if len(got) != 25 {
		t.Fatalf("read %d rows, want 25", len(got))
	}
	for i, r := range got {
		want := charge{Status: "paid", Amount: int64(i+1) * 100, Currency: "usd"}
		if r.Local != want || r.Invalid != "" || r.ExternalID != "pi_"+r.ID {
			t.Fatalf("row %d: %+v, want local %+v", i, r, want)
		}
	}
	// The role cannot write, so nothing was written: the test proves the read needs no more.
	if _, err := pool.Exec(ctx, "CREATE TABLE x (id int)"); err == nil {
		t.Fatal("the SELECT-only role could create a table")
	}
}

func TestColumnsConfig(t *testing.T) {
	pool := (*pgxpool.Pool)(nil)
	for _, tc := range []struct {
		name    string
		columns map[string]string
		want    string
	}{
		{"a name that is no field is refused", map[string]string{"Amout": "cents"}, `Columns names "Amout"`},
		{"a column that is not an identifier is refused", map[string]string{"Amount": "cents; DROP TABLE x"}, "column of struct field Amount"},
		{"two fields on one column are refused", map[string]string{"Amount": "currency"}, "both map to column"},
		{"every field skipped is refused", map[string]string{"Status": "-", "Amount": "-", "Currency": "-", "Refunded": "-"}, "no field mapped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pgstore.NewOf[charge](pool, pgstore.Config{Table: "charges", Columns: tc.columns})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("a string row type takes no Columns", func(t *testing.T) {
		_, err := pgstore.New(pool, pgstore.Config{Table: "charges", Columns: map[string]string{"Status": "state"}})
		if err == nil || !strings.Contains(err.Error(), "StateColumn") {
			t.Fatalf("err %v", err)
		}
	})
}

// TestReadFromRefusesForgedCursors: a cursor whose positions are not keys of the table (a
// caller's bug, or a position kept from another table) is an error, not a read from nowhere.
func TestReadFromRefusesForgedCursors(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE charges (id bigint PRIMARY KEY, external_id text, status text,
		created_at timestamptz, updated_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "charges"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cur := range []reconcile.Cursor{{Position: "not json"}, {Position: "[1, 2]"}, {End: "{\"a\": 1}"}, {Position: "[1]\x00"}} {
		if _, err := store.ReadFrom(ctx, reconcile.ReadRequest{Limit: 10}, cur); err == nil || !strings.Contains(err.Error(), "is not a key of") {
			t.Errorf("cursor %+v: err %v", cur, err)
		}
	}
	if _, err := store.ReadFrom(ctx, reconcile.ReadRequest{Limit: 0}, reconcile.Cursor{}); err == nil {
		t.Error("a limit of 0 was taken")
	}
}
