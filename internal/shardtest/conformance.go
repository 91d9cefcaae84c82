package shardtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// LeaseStore is the sharded jobs over a store, one shard each, seen as one reconcile.Store: its
// reads and commits go through a lease of the job's one shard, taken on first use and kept
// until the test ends, so that the conformance suite runs over pgshard's Lease. Status comes
// from the sharded job, lanes and review from the store, as a host running a sharded sweep
// beside lanes has them.
type LeaseStore struct {
	t     testing.TB
	store *pgstore.Store[string]

	mu     sync.Mutex
	jobs   map[string]*pgshard.Job[string]
	leases map[string]*pgshard.Lease[string]
}

// NewLeaseStore returns the LeaseStore over s; its leases are released when t ends.
func NewLeaseStore(t testing.TB, s *pgstore.Store[string]) *LeaseStore {
	ls := &LeaseStore{t: t, store: s, jobs: map[string]*pgshard.Job[string]{}, leases: map[string]*pgshard.Lease[string]{}}
	t.Cleanup(func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		for _, l := range ls.leases {
			if err := l.Release(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	return ls
}

var (
	_ reconciletest.LaneStore = (*LeaseStore)(nil)
	_ reconcile.StatusReader  = (*LeaseStore)(nil)
)

// job returns the sharded job named name, of one shard.
func (s *LeaseStore) job(name string) (*pgshard.Job[string], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[name]; ok {
		return j, nil
	}
	j, err := pgshard.NewJob(s.store, pgshard.Config{Job: name, Shards: 1})
	if err != nil {
		return nil, err
	}
	s.jobs[name] = j
	return j, nil
}

// lease returns the lease of job's shard, acquiring it on first use.
func (s *LeaseStore) lease(ctx context.Context, job string) (*pgshard.Lease[string], error) {
	j, err := s.job(job)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[job]; ok {
		return l, nil
	}
	l, err := j.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	s.leases[job] = l
	return l, nil
}

// Read reads through the lease of the job's shard.
func (s *LeaseStore) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[string], error) {
	l, err := s.lease(ctx, req.Job)
	if err != nil {
		return reconcile.Batch[string]{}, err
	}
	return l.Read(ctx, req)
}

// Commit commits through the lease of the job's shard.
func (s *LeaseStore) Commit(ctx context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	l, err := s.lease(ctx, c.Job)
	if err != nil {
		return reconcile.CommitResult{}, err
	}
	return l.Commit(ctx, c)
}

// RecordFailure records through the lease of the job's shard.
func (s *LeaseStore) RecordFailure(ctx context.Context, job string, cause error) error {
	l, err := s.lease(ctx, job)
	if err != nil {
		return err
	}
	return l.RecordFailure(ctx, job, cause)
}

// Status is the sharded job's.
func (s *LeaseStore) Status(ctx context.Context, job string) (reconcile.Status, error) {
	j, err := s.job(job)
	if err != nil {
		return reconcile.Status{}, err
	}
	return j.Status(ctx, job)
}

// Match is the store's.
func (s *LeaseStore) Match(ctx context.Context, req reconcile.MatchRequest) (reconcile.MatchResult[string], error) {
	return s.store.Match(ctx, req)
}

// ReadLane is the store's.
func (s *LeaseStore) ReadLane(ctx context.Context, job, lane string) (reconcile.Cursor, error) {
	return s.store.ReadLane(ctx, job, lane)
}

// CommitLane is the store's.
func (s *LeaseStore) CommitLane(ctx context.Context, c reconcile.LaneCommit) (reconcile.CommitResult, error) {
	return s.store.CommitLane(ctx, c)
}

// Fixture is the conformance suite's fixture over the payments table of NewStore: Sweep is
// what the suite runs (the store, or a LeaseStore over it), PG the store under it.
type Fixture struct {
	Pool  *pgxpool.Pool
	PG    *pgstore.Store[string]
	Sweep reconcile.Store[string]
}

var (
	_ reconciletest.Fixture = Fixture{}
	_ reconciletest.Updater = Fixture{}
)

// Store is the store the suite runs, Sweep.
func (f Fixture) Store() reconcile.Store[string] { return f.Sweep }

// Insert inserts rows, each last changed an hour ago unless Recent.
func (f Fixture) Insert(t testing.TB, rows ...reconciletest.Row) {
	f.each(t, `INSERT INTO payments (id, external_id, status, updated_at, created_at) VALUES ($1, $2, $3, %s, %s)`, rows)
}

// Update changes rows in place.
func (f Fixture) Update(t testing.TB, rows ...reconciletest.Row) {
	f.each(t, `UPDATE payments SET external_id = $2, status = $3, updated_at = %s, created_at = %s WHERE id = $1`, rows)
}

// each runs stmt for every row, in one batch: $1 its id, $2 its external id, $3 its status, and
// for the first %s its updated_at, now for a Recent row, else an hour ago, for the second its
// created_at, a day ago (as it was, in an update); either one Row.UpdatedAhead or
// Row.CreatedAhead ahead of the database's clock instead, when that is positive.
func (f Fixture) each(t testing.TB, stmt string, rows []reconciletest.Row) {
	b := &pgx.Batch{}
	for _, r := range rows {
		updated, created := "now() - interval '1 hour'", "now() - interval '1 day'"
		if r.Recent {
			updated = "now()"
		}
		if strings.HasPrefix(stmt, "UPDATE") {
			created = "created_at"
		}
		if r.UpdatedAhead > 0 {
			updated = fmt.Sprintf("now() + make_interval(secs => %f)", r.UpdatedAhead.Seconds())
		}
		if r.CreatedAhead > 0 {
			created = fmt.Sprintf("now() + make_interval(secs => %f)", r.CreatedAhead.Seconds())
		}
		b.Queue(fmt.Sprintf(stmt, updated, created), r.ID, r.ExternalID, r.Local)
	}
	if err := f.Pool.SendBatch(context.Background(), b).Close(); err != nil {
		t.Fatal(err)
	}
}

// Delete deletes rows.
func (f Fixture) Delete(t testing.TB, ids ...int64) {
	if _, err := f.Pool.Exec(context.Background(), `DELETE FROM payments WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
}

// Verified reads the job's observation of the row from the observations table.
func (f Fixture) Verified(t testing.TB, job string, id int64) (time.Time, string, bool) {
	var at time.Time
	var ext string
	err := f.Pool.QueryRow(context.Background(), `SELECT verified_at, external_state FROM reconcile_observations
		WHERE job = $1 AND record_id = $2`, job, strconv.FormatInt(id, 10)).Scan(&at, &ext)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, "", false
	case err != nil:
		t.Fatal(err)
	}
	return at, ext, true
}

// Reviewer is the store.
func (f Fixture) Reviewer() reconcile.Reviewer { return f.PG }

// Commands reads the job's repair commands from the outbox, oldest first.
func (f Fixture) Commands(t testing.TB, job string) []reconcile.Command {
	rows, err := f.Pool.Query(context.Background(), `SELECT event_type, payload FROM reconcile_outbox
		WHERE payload->>'job' = $1 ORDER BY id`, job)
	if err != nil {
		t.Fatal(err)
	}
	var out []reconcile.Command
	var name string
	var payload []byte
	_, err = pgx.ForEachRow(rows, []any{&name, &payload}, func() error {
		c, err := reconcile.DecodeCommand(name, payload)
		out = append(out, c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// HostFixture is the Fixture over a store that keeps observations in the host table's columns
// (HostColumnsDDL).
type HostFixture struct{ Fixture }

// VerifiedAtCommit: with observations in host columns the verified time is the commit's (see
// pgstore.ObserveInHostColumns).
func (HostFixture) VerifiedAtCommit() bool { return true }

// Verified reads the row's observation from its host columns.
func (f HostFixture) Verified(t testing.TB, job string, id int64) (time.Time, string, bool) {
	var at *time.Time
	var ext *string
	err := f.Pool.QueryRow(context.Background(), `SELECT last_reconciled_at, observed_external_status FROM payments WHERE id = $1`, id).Scan(&at, &ext)
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

// HostColumnsDDL is the payments table with observation columns, and an updated_at trigger that
// stamps every update that does not set updated_at itself: the reconciler's own writes touch
// the rows it judges, as a host's trigger would.
var HostColumnsDDL = []string{`CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now(),
		observed_external_status text, last_reconciled_at timestamptz)`,
	`CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN
		IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN NEW.updated_at := now(); END IF; RETURN NEW; END$$`,
	`CREATE TRIGGER touch BEFORE UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION touch()`}
