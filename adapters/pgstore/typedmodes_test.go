package pgstore_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A typed row reads the same in every query mode: SimpleProtocol's results come in text
// format, which each field's scan plan decodes as it does binary (values at the ends of their
// types, NULLs, an enum, naive times in the store's zone). Not a numeric zero read into a
// string: pgx writes binary's as "0", text's with its scale ("0.000").
func TestATypedRowReadsTheSameInEveryQueryMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s := newOrders(t, orderConfig)
	if _, err := pool.Exec(ctx, `INSERT INTO orders (id, payment_intent, payment_status, amount_cents, fee, tax, currency,
			dispute, order_ref, captured_at, booked_at, due_at, settled_at, note) VALUES
		(1, 'pi_1', 'paid', 9223372036854775807, 999999999.999, 99999999999999999999.25, 'JP', 'needs_response', '',
			'2026-03-01 09:30:00.123456', '4713-01-01 00:00:00 BC', '294276-12-30 00:00:00', '1900-01-01 00:00:00+00', 'NULL'),
		(2, 'pi_2', 'pending', -9223372036854775808, -0.001, -1e-20, NULL, 'lost', NULL, '2026-01-01 00:00:00', 'infinity', NULL, '-infinity', E'\\\\ "q" {a,b}'),
		(3, 'pi_3', 'paid', 0, 1.250, 'NaN', 'usd', NULL, 'x', '2000-02-29 23:59:59.999999', NULL, '2000-02-29', '9999-12-31 23:59:59.999999+00', '')`); err != nil {
		t.Fatal(err)
	}
	read := func(s *pgstore.Store[order]) map[string]reconcile.Record[order] {
		t.Helper()
		b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Match(ctx, reconcile.MatchRequest{ExternalIDs: []string{"pi_1", "pi_2", "pi_3"}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]reconcile.Record[order]{}
		for _, r := range append(b.Records, m.Rows...) {
			r.Local.Captured, r.Local.Due.Time = r.Local.Captured.UTC(), r.Local.Due.Time.UTC()
			if r.Local.Settled != nil {
				utc := r.Local.Settled.UTC()
				r.Local.Settled = &utc
			}
			tax, err := r.Local.Tax.Value()
			if err != nil {
				t.Fatal(err)
			}
			r.Local.Tax = pgtype.Numeric{}
			r.Local.Memo = ""
			r.CreatedAt = r.CreatedAt.UTC()
			if tax != nil {
				r.Local.Memo = tax.(string) // compared with the rest
			}
			out[r.ID+" "+r.Key] = r
		}
		return out
	}
	want := read(s)
	if len(want) != 3 {
		t.Fatalf("%d records; want 3", len(want))
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheDescribe} {
		pc := pool.Config()
		pc.ConnConfig.DefaultQueryExecMode = mode
		mp, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(mp.Close)
		ms, err := pgstore.NewOf[order](mp, orderConfig)
		if err != nil {
			t.Fatal(err)
		}
		got := read(ms)
		for k, w := range want {
			if g := got[k]; !reflect.DeepEqual(g, w) {
				t.Errorf("%v: row %s = %+v,\nwant %+v", mode, k, g, w)
			}
		}
	}
}
