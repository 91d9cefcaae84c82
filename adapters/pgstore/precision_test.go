package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

func TestTimeColumnsWithAPrecisionAreTimeColumns(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{Table: "precise", Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "created_at", Op: pgstore.Within, Value: time.Hour}}}}},
		`CREATE TABLE precise (id bigint PRIMARY KEY, external_id text, status text, created_at timestamptz(3) NOT NULL DEFAULT now(), updated_at timestamp(0) NOT NULL DEFAULT now())`)
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check on timestamptz(3) and timestamp(0) columns: %v", err)
	}
}
