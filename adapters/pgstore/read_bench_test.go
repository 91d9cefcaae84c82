package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// benchPayment is a typed row of four columns of three types.
type benchPayment struct {
	Status    string
	Amount    int64 `db:"amount_cents"`
	Currency  string
	UpdatedAt time.Time `db:"updated_at"`
}

// BenchmarkRead reads batches of 1,000 rows as the state column's text and as a typed row of
// four columns: the difference is the typed row's decoding.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Pool(b)
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		amount_cents bigint NOT NULL, currency text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day',
		updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour');
		INSERT INTO payments (id, external_id, status, amount_cents, currency)
		SELECT i, 'pi_' || i, 'paid', 1000 + i, 'USD' FROM generate_series(1, 1000) i`); err != nil {
		b.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		b.Fatal(err)
	}
	req := reconcile.ReadRequest{Job: "bench", Limit: 1000}
	b.Run("one column", func(b *testing.B) {
		s, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if batch, err := s.Read(ctx, req); err != nil || len(batch.Records) != 1000 {
				b.Fatal(len(batch.Records), err)
			}
		}
	})
	b.Run("typed row of four columns", func(b *testing.B) {
		s, err := pgstore.NewOf[benchPayment](pool, pgstore.Config{Table: "payments"})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if batch, err := s.Read(ctx, req); err != nil || len(batch.Records) != 1000 || batch.Records[0].Invalid != "" {
				b.Fatal(len(batch.Records), err)
			}
		}
	})
}
