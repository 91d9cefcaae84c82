package pgstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// ordersDDL is a host table with a column of each type a typed row reads, and no status
// column: a store of a struct reads its fields' columns, not Config.StateColumn.
const ordersDDL = `CREATE TYPE dispute_status AS ENUM ('needs_response', 'won', 'lost');
CREATE TABLE orders (
	id             bigint PRIMARY KEY,
	payment_intent text NOT NULL,
	payment_status text NOT NULL,
	amount_cents   bigint,
	fee            numeric(12, 3),
	tax            numeric,
	currency       char(3),
	dispute        dispute_status,
	order_ref      text,
	captured_at    timestamp without time zone,
	booked_at      timestamp without time zone,
	due_at         timestamp without time zone,
	settled_at     timestamptz,
	note           text,
	created_at     timestamptz NOT NULL DEFAULT now() - interval '1 day',
	updated_at     timestamptz NOT NULL DEFAULT now() - interval '1 hour'
)`

// order is a typed row of orders: each field reads a column in its own type.
type order struct {
	Status   string `db:"payment_status"`
	Money           // amount_cents and currency
	Fee      string // numeric as text, untagged: column fee
	Tax      pgtype.Numeric
	Dispute  *string          // an enum, nullable
	OrderRef sql.NullString   `db:"order_ref"`
	Captured time.Time        `db:"captured_at"` // naive: in Config.TimeZone
	Booked   pgtype.Timestamp `db:"booked_at"`   // naive, as stored
	Due      sql.NullTime     `db:"due_at"`      // naive: in Config.TimeZone
	Settled  *time.Time       `db:"settled_at"`
	Note     pgtype.Text
	Memo     string `db:"-"`
	hidden   int    //nolint:unused // unexported: not a column
}

// Money is embedded in rows of the tests: its fields are the row's own.
type Money struct {
	Amount   int64 `db:"amount_cents"`
	Currency string
}

var orderConfig = pgstore.Config{Table: "orders", ExternalIDColumn: "payment_intent", TimeZone: "Asia/Tokyo"}

// newOrders gives the test its own schema with the orders table, the reconciler's tables and a
// store of orders over it.
func newOrders(t *testing.T, cfg pgstore.Config) (*pgxpool.Pool, *pgstore.Store[order]) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, ordersDDL); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, cfg.Tables); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.NewOf[order](pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pool, s
}

// insertOrders inserts paid USD orders 1..n of 10.00, pi_<id>, ord-<id>, captured on New Year's Day.
func insertOrders(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO orders (id, payment_intent, payment_status, amount_cents, fee, tax, currency, order_ref, captured_at)
		SELECT i, 'pi_' || i, 'paid', 1000, 0.3, 0, 'USD', 'ord-' || i, '2026-01-01' FROM generate_series(1, $1) i`, n); err != nil {
		t.Fatal(err)
	}
}

func TestATypedRowReadsEachColumnIntoItsFieldInItsOwnType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s := newOrders(t, orderConfig)
	if _, err := pool.Exec(ctx, `INSERT INTO orders (id, payment_intent, payment_status, amount_cents, fee, tax, currency,
			dispute, order_ref, captured_at, booked_at, due_at, settled_at, note) VALUES
		(1, 'pi_1', 'paid', 123450, 12.345, 99999999999999999999.25, 'JPY', 'needs_response', 'ord-1',
			'2026-03-01 09:30:00', '2026-03-01 09:30:00', '2026-03-01 09:30:00', '2026-03-01 09:30:00+00', 'first'),
		(2, 'pi_2', 'pending', -5, 0, 0, 'KWD', NULL, NULL, '2026-01-01 00:00:00', NULL, NULL, NULL, NULL)`); err != nil {
		t.Fatal(err)
	}
	needs := "needs_response"
	settled := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	want := map[string]order{
		"1": {Status: "paid", Money: Money{Amount: 123450, Currency: "JPY"}, Fee: "12.345", Dispute: &needs,
			OrderRef: sql.NullString{String: "ord-1", Valid: true},
			// 09:30 in Tokyo, the store's zone, is 00:30 UTC.
			Captured: time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC),
			Booked:   pgtype.Timestamp{Time: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC), Valid: true},
			Due:      sql.NullTime{Time: time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC), Valid: true},
			Settled:  &settled, Note: pgtype.Text{String: "first", Valid: true}},
		"2": {Status: "pending", Money: Money{Amount: -5, Currency: "KWD"}, Fee: "0", // pgx drops a zero's scale
			Captured: time.Date(2025, 12, 31, 15, 0, 0, 0, time.UTC)},
	}
	wantTax := map[string]string{"1": "99999999999999999999.25", "2": "0"}
	check := func(how string, recs []reconcile.Record[order]) {
		t.Helper()
		if len(recs) != 2 {
			t.Fatalf("%s: %d records, want 2", how, len(recs))
		}
		for _, r := range recs {
			got := r.Local
			tax, err := got.Tax.Value()
			if err != nil || tax != wantTax[r.ID] {
				t.Errorf("%s: row %s: tax %v (%v), want %s", how, r.ID, tax, err, wantTax[r.ID])
			}
			got.Tax = pgtype.Numeric{}
			got.Captured, got.Due.Time = got.Captured.UTC(), got.Due.Time.UTC()
			if got.Settled != nil {
				utc := got.Settled.UTC()
				got.Settled = &utc
			}
			if r.Invalid != "" || !reflect.DeepEqual(got, want[r.ID]) {
				t.Errorf("%s: row %s = %+v (invalid %q),\nwant %+v", how, r.ID, got, r.Invalid, want[r.ID])
			}
		}
	}
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	check("Read", b.Records)
	m, err := s.Match(ctx, reconcile.MatchRequest{ExternalIDs: []string{"pi_1", "pi_2"}})
	if err != nil {
		t.Fatal(err)
	}
	check("Match", m.Rows)
}

func TestAValueItsFieldCannotHoldMakesOnlyItsRowInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s := newOrders(t, orderConfig)
	insertOrders(t, pool, 3)
	if _, err := pool.Exec(ctx, `UPDATE orders SET amount_cents = NULL WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatalf("a NULL in one row failed the batch: %v", err)
	}
	var invalid []string
	for _, r := range b.Records {
		if r.Invalid != "" {
			invalid = append(invalid, r.ID+": "+r.Invalid)
			if r.Local != (order{}) {
				t.Errorf("invalid row %s has local state %+v, want the zero order", r.ID, r.Local)
			}
		} else if r.Local.Amount != 1000 || r.Local.OrderRef.String != "ord-"+r.ID {
			t.Errorf("row %s = %+v, want its own values", r.ID, r.Local)
		}
	}
	if len(b.Records) != 3 || len(invalid) != 1 ||
		!strings.HasPrefix(invalid[0], "2: column amount_cents (struct field Money.Amount): ") || !strings.Contains(invalid[0], "NULL") {
		t.Fatalf("%d records, invalid %q; want 3, row 2's naming its column and the NULL", len(b.Records), invalid)
	}

	// The engine records it for review and moves on.
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded:1000", "pi_2": "succeeded:1000", "pi_3": "succeeded:1000"})
	reconciletest.Cycle(t, orderJob("sweep", s, gw), 3)
	fs := reconciletest.Findings(t, s, "sweep")
	if len(fs) != 1 || fs[0].Kind != reconcile.KindInvalidRow || fs[0].RecordID != "2" || gw.Calls("pi_2") != 0 || gw.Calls("") != 2 {
		t.Fatalf("findings %+v, %d calls for row 2, %d in all; want one invalid_row finding for row 2, which was not asked about", fs, gw.Calls("pi_2"), gw.Calls(""))
	}
}

// amountPolicy judges an order against a status-and-amount external state "succeeded:1000".
var amountPolicy = reconcile.ClassifierFunc[order, string](func(o order, ext string) reconcile.Decision {
	status, amount, _ := strings.Cut(ext, ":")
	switch {
	case o.Status == "paid" && status == "succeeded" && amount != fmt.Sprint(o.Amount):
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch",
			Diffs: []reconcile.Diff{{Field: "amount", Local: reconcile.FormatAmount(o.Amount, o.Currency), External: amount}}}
	case o.Status == "paid" && status == "succeeded":
		return reconcile.Decision{Verdict: reconcile.InSync}
	}
	return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "status_mismatch"}
})

func orderJob(job string, s *pgstore.Store[order], gw reconcile.Gateway[string]) reconcile.Config[order, string] {
	return reconcile.Config[order, string]{Job: job, Source: s, Sink: s, Gateway: gw, Classifier: amountPolicy,
		LocalState: func(o order) string { return o.Status }, BatchSize: 4}
}

func TestATypedStoreRunsShardedReportsStatusAndSearchesItsColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := orderConfig
	cfg.SearchColumns = []string{"order_ref", "amount_cents", "currency"}
	cfg.Filter = pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "currency", Op: pgstore.In, Value: []string{"USD", "JPY"}}}}}
	pool, s := newOrders(t, cfg)
	insertOrders(t, pool, 20)
	if _, err := pool.Exec(ctx, `UPDATE orders SET amount_cents = 1500 WHERE id IN (7, 13);
		UPDATE orders SET currency = 'EUR' WHERE id = 20`); err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{}
	for i := 1; i <= 20; i++ {
		ext[fmt.Sprintf("pi_%d", i)] = "succeeded:1000"
	}
	gw := reconciletest.NewGateway(ext)
	jobs := []*pgshard.Job[order]{shardtest.NewJob(t, s, pgshard.Config{Shards: 3}), shardtest.NewJob(t, s, pgshard.Config{Shards: 3})}
	jc := orderJob("", s, gw)
	jc.Source, jc.Sink = nil, nil
	shardtest.RunCycle(t, s, jobs, jc, 1, 100)

	fs := reconciletest.Findings(t, s, "sweep")
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s %s %s %v", f.RecordID, f.Kind, f.Local, f.Diffs))
	}
	want := []string{"13 amount_mismatch paid [{amount USD 15.00 1000}]", "7 amount_mismatch paid [{amount USD 15.00 1000}]"}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
	for i := 1; i <= 20; i++ {
		if n := gw.Calls(fmt.Sprintf("pi_%d", i)); (n == 0) != (i == 20) {
			t.Errorf("pi_%d asked %d times; want every row but the EUR one, outside the filter", i, n)
		}
	}
	st, err := jobs[0].Status(ctx, "sweep")
	if err != nil || st.Rows != 19 || st.CyclesCompleted != 1 || st.OpenFindings["amount_mismatch"] != 2 {
		t.Fatalf("status %+v, %v; want 19 rows, a cycle, 2 open amount mismatches", st, err)
	}

	for _, tt := range []struct{ search, want string }{
		{"ord-7", "7"},              // a text column
		{"1500", "13 7"},            // a bigint column, in its own type
		{"pi_13", "13"},             // the external id
		{"7", "7"},                  // the record id
		{"ord-", ""},                // whole values only
		{"USD", "13 7"},             // a char(3) column
		{"pi_7x", ""},               // no bigint holds it: the amount is not searched, and nothing fails
		{"1000", ""},                // the other rows' amount: rows without findings
		{"9223372036854775808", ""}, // past a bigint, still no failure
	} {
		fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Search: tt.search})
		var ids []string
		for _, f := range fs {
			ids = append(ids, f.RecordID)
		}
		slices.Sort(ids)
		if err != nil || strings.Join(ids, " ") != tt.want {
			t.Errorf("search %q = %q, %v; want %q", tt.search, ids, err, tt.want)
		}
		// The count has the same search, its search columns included, without the listing's
		// columns (which read the aggregate type otherwise).
		if n, err := s.CountFindings(ctx, reconcile.FindingQuery{Search: tt.search}); err != nil || n != len(ids) {
			t.Errorf("count of search %q = %d, %v; want %d", tt.search, n, err, len(ids))
		}
	}
}

func TestNewOfRefusesARowTypeItCannotMap(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	cfg := pgstore.Config{Table: "orders"}
	for _, tt := range []struct {
		name string
		newf func() error
		want string
	}{
		{"an int", func() error { _, err := pgstore.NewOf[int](pool, cfg); return err }, "neither a string nor a struct"},
		{"a pointer to a struct", func() error { _, err := pgstore.NewOf[*order](pool, cfg); return err }, "neither a string nor a struct"},
		{"a struct of no fields", func() error { _, err := pgstore.NewOf[struct{}](pool, cfg); return err }, "no field mapped to a column"},
		{"a struct of unexported and skipped fields", func() error {
			_, err := pgstore.NewOf[struct {
				a int
				B int `db:"-"`
			}](pool, cfg)
			return err
		}, "no field mapped to a column"},
		{"two fields on one column", func() error {
			_, err := pgstore.NewOf[struct {
				Amount int64
				Cents  int64 `db:"amount"`
			}](pool, cfg)
			return err
		}, `struct fields Amount and Cents both map to column "amount"`},
		{"an embedded struct's field on a column taken", func() error {
			_, err := pgstore.NewOf[struct {
				Money
				Total int64 `db:"amount_cents"`
			}](pool, cfg)
			return err
		}, `struct fields Money.Amount and Total both map to column "amount_cents"`},
		{"a tag that is no identifier", func() error {
			_, err := pgstore.NewOf[struct {
				Amount int64 `db:"amount cents"`
			}](pool, cfg)
			return err
		}, `column of struct field Amount "amount cents" is not a plain SQL identifier`},
		{"a search column that is no identifier", func() error {
			c := cfg
			c.SearchColumns = []string{"order-ref"}
			_, err := pgstore.NewOf[order](pool, c)
			return err
		}, `SearchColumns[0] "order-ref" is not a plain SQL identifier`},
	} {
		if err := tt.newf(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewOf = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestCheckNamesTheStructFieldOrColumnTheTableLacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, ordersDDL); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil { // Check verifies them too
		t.Fatal(err)
	}
	type withRefund struct {
		Status   string `db:"payment_status"`
		Refunded int64  `db:"amount_refunded"`
	}
	for _, tt := range []struct {
		name  string
		check func() error
		want  string
	}{
		{"a struct field with no column", func() error {
			s, err := pgstore.NewOf[withRefund](pool, orderConfig)
			if err != nil {
				return err
			}
			return s.Check(ctx)
		}, `pgstore: struct field Refunded (column amount_refunded): table "orders" has no such column`},
		{"an untagged field whose lowercased name is no column", func() error {
			s, err := pgstore.NewOf[struct{ PaymentStatus string }](pool, orderConfig)
			if err != nil {
				return err
			}
			return s.Check(ctx)
		}, `struct field PaymentStatus (column paymentstatus): table "orders" has no such column`},
		{"a search column the table lacks", func() error {
			c := orderConfig
			c.SearchColumns = []string{"order_id"}
			s, err := pgstore.NewOf[order](pool, c)
			if err != nil {
				return err
			}
			return s.Check(ctx)
		}, `table "orders" has no column "order_id"`},
		{"a string store needs its state column", func() error {
			s, err := pgstore.New(pool, orderConfig)
			if err != nil {
				return err
			}
			return s.Check(ctx)
		}, `table "orders" has no column "status"`},
	} {
		if err := tt.check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	s, err := pgstore.NewOf[order](pool, orderConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check of a struct store over a table without a status column = %v, want nil", err)
	}
}

func TestCheckRefusesAFieldThatCannotHoldItsColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := newOrders(t, orderConfig)
	type statusAsNumber struct {
		Status int64 `db:"payment_status"` // text
		Amount int64 `db:"amount_cents"`
	}
	s, err := pgstore.NewOf[statusAsNumber](pool, orderConfig)
	if err != nil {
		t.Fatal(err)
	}
	// An empty table has nothing to judge by: the mismatch shows only once a row exists.
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check over an empty table = %v, want nil", err)
	}
	insertOrders(t, pool, 2)
	s, err = pgstore.NewOf[statusAsNumber](pool, orderConfig)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check(ctx)
	if err == nil || !strings.Contains(err.Error(), "struct field Status (int64) cannot hold column payment_status (text)") {
		t.Fatalf("Check = %v, want it to name the field that cannot hold its column", err)
	}
	// A NULL is a fault of its row, not of the row type.
	if _, err := pool.Exec(ctx, `UPDATE orders SET amount_cents = NULL`); err != nil {
		t.Fatal(err)
	}
	type amount struct {
		Amount int64 `db:"amount_cents"`
	}
	ok, err := pgstore.NewOf[amount](pool, orderConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := ok.Check(ctx); err != nil {
		t.Fatalf("Check with a NULL its field cannot take = %v, want nil", err)
	}
}

// TestCheckJudgesTheTypeNotTheFirstRowsValue: the row that Check samples first holds a value
// its field cannot hold (a fraction in a numeric column read as int64) while the column's
// other values fit. That is a fault of the row, an invalid_row finding when it is read, not a
// field that cannot hold its column: Check passes, and the other rows are read.
func TestCheckJudgesTheTypeNotTheFirstRowsValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := newOrders(t, orderConfig)
	if _, err := pool.Exec(ctx, `INSERT INTO orders (id, payment_intent, payment_status, tax)
		SELECT i, 'pi_' || i, 'paid', CASE WHEN i = 1 THEN 1.5 ELSE 2 END FROM generate_series(1, 3) i`); err != nil {
		t.Fatal(err)
	}
	type taxAsInt struct {
		Tax int64
	}
	s, err := pgstore.NewOf[taxAsInt](pool, orderConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check = %v, want nil: the column's other values fit the field", err)
	}
	b, err := s.ReadFrom(ctx, reconcile.ReadRequest{Limit: 10}, reconcile.Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	var invalid []string
	for _, r := range b.Records {
		if r.Invalid != "" {
			invalid = append(invalid, r.ID)
		} else if r.Local.Tax != 2 {
			t.Errorf("row %s = %+v, want tax 2", r.ID, r.Local)
		}
	}
	if len(b.Records) != 3 || len(invalid) != 1 || invalid[0] != "1" {
		t.Fatalf("%d records, invalid %q; want 3, row 1 invalid", len(b.Records), invalid)
	}
}
