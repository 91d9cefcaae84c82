package pgledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// BenchmarkBooked asks a ledger of two tables (200,000 payments, 20,000 refunds, indexed by
// the id they are booked under) for one page of members: 100 keys, one round trip.
func BenchmarkBooked(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Pool(b)
	if _, err := pool.Exec(ctx, `
		CREATE TABLE payments (id bigint PRIMARY KEY, intent text NOT NULL, amount bigint NOT NULL, currency text NOT NULL);
		CREATE INDEX ON payments (intent);
		INSERT INTO payments SELECT i, 'pi_' || i, 1000, 'usd' FROM generate_series(1, 200000) i;
		CREATE TABLE refunds (id bigint PRIMARY KEY, intent text NOT NULL, amount bigint NOT NULL, currency text NOT NULL);
		CREATE INDEX ON refunds (intent);
		INSERT INTO refunds SELECT i, 'pi_' || (i * 10), 100, 'usd' FROM generate_series(1, 20000) i;
		ANALYZE payments; ANALYZE refunds;`); err != nil {
		b.Fatal(err)
	}
	l, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{
		{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent"},
		{Name: "refunds", Kind: tieout.KindRefund, IDColumn: "intent", Negate: true},
	}})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]tieout.Key, 0, 100)
	for i := range 90 {
		keys = append(keys, tieout.Key{Kind: tieout.KindPayment, ID: fmt.Sprintf("pi_%d", 1000+i*1777)})
	}
	for i := range 10 {
		keys = append(keys, tieout.Key{Kind: tieout.KindRefund, ID: fmt.Sprintf("pi_%d", 10*(1+i*1500))})
	}
	for b.Loop() {
		got, err := l.Booked(ctx, keys)
		if err != nil || len(got) != 100 {
			b.Fatalf("%d records, %v", len(got), err)
		}
	}
}
