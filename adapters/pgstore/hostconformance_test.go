package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// hostFixture is the conformance fixture over a store that keeps observations in the host
// table's columns, whose updated_at trigger stamps every update that does not set updated_at
// itself: the reconciler's own writes touch the rows it judges, as a host's trigger would.
type hostFixture struct{ fixture }

// VerifiedAtCommit: with observations in host columns the verified time is the commit's (see
// pgstore.ObserveInHostColumns).
func (hostFixture) VerifiedAtCommit() bool { return true }

func (f hostFixture) Verified(t testing.TB, job string, id int64) (time.Time, string, bool) {
	var at *time.Time
	var ext *string
	err := f.pool.QueryRow(context.Background(), `SELECT last_reconciled_at, observed_external_status FROM payments WHERE id = $1`, id).Scan(&at, &ext)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, "", false
	case err != nil:
		t.Fatal(err)
	case at == nil:
		return time.Time{}, "", false
	}
	return *at, *ext, true
}

// The suite over observations in host columns: one set of columns for every job, written by the
// reconciler into the rows it judges.
func TestConformanceWithObservationsInHostColumns(t *testing.T) {
	t.Parallel()
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		pool, s := newStore(t, pgstore.Config{Observations: pgstore.ObserveInHostColumns}, shardtest.HostColumnsDDL...)
		return hostFixture{fixture{pool, s}}
	})
}
