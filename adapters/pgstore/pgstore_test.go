package pgstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The host table and store of the tests are the sharded jobs' tests' too.
const paymentsDDL = shardtest.PaymentsDDL

var newStore = shardtest.NewStore

// insertPayments inserts paid rows with the given ids, last changed an hour ago, each with
// external id pi_<id>.
func insertPayments(t testing.TB, pool *pgxpool.Pool, ids ...int64) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM unnest($1::bigint[]) i`, ids); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	pool  *pgxpool.Pool
	store *pgstore.Store[string]
}

func (f fixture) Store() reconcile.Store[string] { return f.store }

func (f fixture) Insert(t testing.TB, rows ...reconciletest.Row) {
	f.each(t, `INSERT INTO payments (id, external_id, status, updated_at, created_at) VALUES ($1, $2, $3, %s, %s)`, rows)
}

var _ reconciletest.Updater = fixture{}

func (f fixture) Update(t testing.TB, rows ...reconciletest.Row) {
	f.each(t, `UPDATE payments SET external_id = $2, status = $3, updated_at = %s, created_at = %s WHERE id = $1`, rows)
}

// each runs stmt for every row, in one batch: $1 its id, $2 its external id, $3 its status, and
// for the first %s its updated_at, now for a Recent row, else an hour ago, for the second its
// created_at, a day ago (as it was, in an update); either one Row.UpdatedAhead or
// Row.CreatedAhead ahead of the database's clock instead, when that is positive.
func (f fixture) each(t testing.TB, stmt string, rows []reconciletest.Row) {
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
	if err := f.pool.SendBatch(context.Background(), b).Close(); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) Delete(t testing.TB, ids ...int64) {
	if _, err := f.pool.Exec(context.Background(), `DELETE FROM payments WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) Verified(t testing.TB, job string, id int64) (time.Time, string, bool) {
	var at time.Time
	var ext string
	err := f.pool.QueryRow(context.Background(), `SELECT verified_at, external_state FROM reconcile_observations
		WHERE job = $1 AND record_id = $2`, job, strconv.FormatInt(id, 10)).Scan(&at, &ext)
	if err == pgx.ErrNoRows {
		return time.Time{}, "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return at, ext, true
}

func (f fixture) Reviewer() reconcile.Reviewer { return f.store }

// Findings returns the job's findings, open and resolved, oldest first.
func (f fixture) Findings(t testing.TB, job string) []reconcile.Finding {
	return reconciletest.Findings(t, f.store, job)
}

func (f fixture) Commands(t testing.TB, job string) []reconcile.Command {
	return commands(t, f.pool, job)
}

func commands(t testing.TB, pool *pgxpool.Pool, job string) []reconcile.Command {
	rows, err := pool.Query(context.Background(), `SELECT event_type, payload FROM reconcile_outbox
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

func TestConformance(t *testing.T) {
	t.Parallel()
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		pool, s := newStore(t, pgstore.Config{})
		return fixture{pool, s}
	})
}

// Arbitrary gateway answers cost their rows one finding each, with a bounded, valid kind: no
// commit fails on a byte PostgreSQL cannot keep or an index entry too long.
func FuzzAnswers(f *testing.F) {
	pool, s := newStore(f, pgstore.Config{})
	reconciletest.FuzzAnswers(f, fixture{pool, s})
}

// statusRow is the conformance table's row read as a typed row: the status and, as a host's
// struct would, other columns of other types.
type statusRow struct {
	Status     string
	ExternalID string     `db:"external_id"`
	Updated    time.Time  `db:"updated_at"`
	Created    *time.Time `db:"created_at"`
}

// statusStore is a store of statusRows seen as the suite's reconcile.Store[string]: its reads
// and matches keep each row's status, and everything else is the typed store's own.
type statusStore struct{ *pgstore.Store[statusRow] }

func statuses(recs []reconcile.Record[statusRow]) []reconcile.Record[string] {
	out := make([]reconcile.Record[string], len(recs))
	for i, r := range recs {
		out[i] = reconcile.Record[string]{Key: r.Key, ID: r.ID, ExternalID: r.ExternalID, Local: r.Local.Status,
			CreatedAt: r.CreatedAt, Recent: r.Recent, Invalid: r.Invalid, Version: r.Version}
		if r.Invalid == "" && (r.Local.ExternalID != r.ExternalID || r.Local.Updated.IsZero() || r.Local.Created == nil) {
			out[i].Invalid = fmt.Sprintf("statusStore: typed row %+v does not hold its own columns", r.Local)
		}
	}
	return out
}

func (s statusStore) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[string], error) {
	b, err := s.Store.Read(ctx, req)
	return reconcile.Batch[string]{Cursor: b.Cursor, Records: statuses(b.Records)}, err
}

func (s statusStore) Match(ctx context.Context, req reconcile.MatchRequest) (reconcile.MatchResult[string], error) {
	m, err := s.Store.Match(ctx, req)
	return reconcile.MatchResult[string]{Rows: statuses(m.Rows), Elsewhere: m.Elsewhere}, err
}

type typedFixture struct {
	fixture
	typed statusStore
}

func (f typedFixture) Store() reconcile.Store[string] { return f.typed }

// The suite over a typed row: the sweep, lanes, commits and review of a store of a struct
// behave as those of the one-column store.
func TestConformanceOfATypedRow(t *testing.T) {
	t.Parallel()
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		pool, s := newStore(t, pgstore.Config{})
		typed, err := pgstore.NewOf[statusRow](pool, s.Config())
		if err != nil {
			t.Fatal(err)
		}
		return typedFixture{fixture{pool, s}, statusStore{typed}}
	})
}
