package pgstore_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A char(n) key must come back whole in cursor positions: cast as "character" (what the
// catalog calls it) it would be char(1), and the sweep would restart from the first letter.
func TestACharKeyKeepsItsWholeValueInTheCursor(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{Table: "orders", KeyColumns: []string{"code"}},
		`CREATE TABLE orders (code char(6) PRIMARY KEY, external_id text, status text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now() - interval '1 day')`,
		`INSERT INTO orders (code, status) SELECT 'a' || lpad(i::text, 5, '0'), 'pending' FROM generate_series(1, 7) AS i`)
	ctx := context.Background()
	var seen []string
	for range 10 {
		b, err := s.Read(ctx, reconcile.ReadRequest{Job: "orders", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Records) == 0 {
			break
		}
		for _, r := range b.Records {
			seen = append(seen, r.ID)
		}
		if _, err := s.Commit(ctx, reconcile.Commit{Job: "orders", Cursor: b.Cursor, Next: b.Records[len(b.Records)-1].Key}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 7 || seen[6] != "a00007" {
		t.Fatalf("read %v, want the 7 codes once each, in order", seen)
	}
}
