package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A sweep's commit checks its rows as read against one scan of the keyset range they were read
// from (hosttable.Spec.ObserveInRange). These tests put the changes at the ends of that range,
// where a wrong bound would show.

// afterEachRead is a Source that runs fn after every read, with the batch read.
type afterEachRead struct {
	reconcile.Source[string]
	fn func(b reconcile.Batch[string])
}

func (r *afterEachRead) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[string], error) {
	b, err := r.Source.Read(ctx, req)
	if err == nil {
		r.fn(b)
	}
	return b, err
}

// verifiedIDs are the ids of job sweep's observed rows, in text order.
func verifiedIDs(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT record_id FROM reconcile_observations WHERE job = 'sweep' ORDER BY record_id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A row changed between its read and its commit at either end of a batch is left unverified
// and counted changed, and the row at the other end is verified: in the cycle's first batch
// (its range open below), in a batch after a position, and in the wrap, whose range ends at
// the cycle's high-water mark. The next cycle, nothing changed, verifies every row.
func TestARowChangedAtEitherEndOfItsBatchIsNotVerified(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			hostColumns := l.cfg.Observations == pgstore.ObserveInHostColumns
			pool, s := newStore(t, l.cfg, l.ddl...)
			ctx := context.Background()
			exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at)
				SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM generate_series(1, 10) i`)
			// Batches 1-4, 5-8 and the wrap's 9-10: the first row of one, the last of the next,
			// the first of the wrap, changed as if by the host (a new xmin; updated_at an hour ago, out of the grace).
			change := map[int64]bool{1: true, 8: true, 9: true}
			cycle := 0
			src := &afterEachRead{Source: s, fn: func(b reconcile.Batch[string]) {
				for _, r := range b.Records {
					var id int64
					if _, err := fmt.Sscan(r.ID, &id); err == nil && cycle == 0 && change[id] {
						exec(t, pool, `UPDATE payments SET status = status, updated_at = now() - interval '1 hour' WHERE id = $1`, id)
					}
				}
			}}
			cfg := reconcile.Config[string, string]{Job: "sweep", Source: src, Sink: s, BatchSize: 4, Classifier: reconciletest.Classifier(),
				Gateway: reconciletest.NewGateway(states(10, "succeeded"))}
			for i, want := range []struct {
				wrapped bool
				changed int64
				ends    [2]int64 // the batch's first and last row
			}{{false, 1, [2]int64{1, 4}}, {false, 8, [2]int64{5, 8}}, {true, 9, [2]int64{9, 10}}} {
				rep, err := reconcile.RunBatch(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Scanned != 4 && !want.wrapped || rep.Wrapped != want.wrapped || rep.Changed != 1 {
					t.Fatalf("batch %d: report %+v; want row %d alone changed", i+1, rep, want.changed)
				}
				for _, id := range want.ends {
					if verified := !verifiedAt(t, pool, hostColumns, id).IsZero(); verified == (id == want.changed) {
						t.Fatalf("batch %d: row %d verified %v; want only the unchanged end of rows %v verified", i+1, id, verified, want.ends)
					}
				}
			}
			cycle++
			before := verifiedAt(t, pool, hostColumns, 2)
			for _, rep := range reconciletest.Cycle(t, cfg, 3) {
				if rep.Changed != 0 {
					t.Fatalf("second cycle: report %+v; want nothing changed", rep)
				}
			}
			for id := int64(1); id <= 10; id++ {
				if at := verifiedAt(t, pool, hostColumns, id); !at.After(before) {
					t.Fatalf("second cycle: row %d last verified %v; want after the first cycle's %v", id, at, before)
				}
			}
		})
	}
}

// With a composite key of every type a key column may take, the row whose key was moved past
// the cycle's end after its read is left unverified and counted changed, as is the batch's
// first row changed; a row inserted into the batch's range after its read is neither verified
// nor counted; the batch's other rows, its last included, are verified. In the cycle's first
// batch (its range open below) and in the wrap after it.
func TestACompositeKeyMovedOutOfItsBatchOrInsertedIntoItIsNotVerified(t *testing.T) {
	t.Parallel()
	keys := []struct {
		name, typ string
		vals      []string // seven distinct keys
		past      string   // a key past every other
	}{
		{"timestamptz", "timestamptz", []string{"2026-01-01", "2026-01-02", "2026-01-03 12:00", "2026-01-04", "2026-01-05", "2026-01-06", "2026-01-07"}, "2999-01-01"},
		{"text under an ICU collation", `text COLLATE "en-x-icu"`, []string{"a", "B", "c", "D", "é", "F", "g"}, "zzz"},
		{"text compared bytewise", `text COLLATE "C"`, []string{"A", "B", "a", "b", "c", "d", "e"}, "~"},
		{"char(4)", "char(4)", []string{" a", "a", "a b", "ab", "b", "c", "d"}, "zzzz"},
		{"uuid", "uuid", []string{"00000000-0000-0000-0000-000000000001", "10000000-0000-0000-0000-000000000000", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
			"b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "d0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
			"e0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}, "ffffffff-ffff-ffff-ffff-ffffffffffff"},
	}
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{KeyColumns: []string{"k", "id"}}, `CREATE TABLE payments (k `+k.typ+` NOT NULL, id bigint PRIMARY KEY,
				external_id text NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now() - interval '1 day',
				updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour', UNIQUE (k, id))`)
			ctx := context.Background()
			exec(t, pool, `INSERT INTO payments (k, id, external_id, status)
				SELECT CAST(k AS `+strings.Fields(k.typ)[0]+`), n, 'pi_' || n, 'paid' FROM unnest($1::text[]) WITH ORDINALITY AS t(k, n)`, k.vals)
			// Batches of four and three (the wrap). After each read: its first row changed, its
			// second moved past the cycle's end, a row inserted right after its first (the same
			// k, a greater id).
			var moved, changed, inserted []string
			src := &afterEachRead{Source: s, fn: func(b reconcile.Batch[string]) {
				if len(b.Records) < 3 {
					return
				}
				first, second := b.Records[0].ID, b.Records[1].ID
				exec(t, pool, `UPDATE payments SET status = status WHERE id = $1::bigint`, first)
				exec(t, pool, `UPDATE payments SET k = $2 WHERE id = $1::bigint`, second, k.past)
				var id string
				if err := pool.QueryRow(ctx, `INSERT INTO payments (k, id, external_id, status)
					SELECT k, 100 + id, 'pi_' || 100 + id, 'paid' FROM payments WHERE id = $1::bigint RETURNING id::text`, first).Scan(&id); err != nil {
					t.Fatal(err)
				}
				changed, moved, inserted = append(changed, first), append(moved, second), append(inserted, id)
			}}
			gw := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) { return "succeeded", nil })
			cfg := reconcile.Config[string, string]{Job: "sweep", Source: src, Sink: s, BatchSize: 4, Classifier: reconciletest.Classifier(), Gateway: gw}
			for i, wrapped := range []bool{false, true} {
				rep, err := reconcile.RunBatch(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Wrapped != wrapped || rep.Changed != 2 {
					t.Fatalf("batch %d: report %+v; want its first and second rows changed", i+1, rep)
				}
			}
			// Of the seven rows, two a batch were changed or moved; none inserted is verified.
			var want []string
			for n := 1; n <= len(k.vals); n++ {
				if id := fmt.Sprint(n); !slices.Contains(changed, id) && !slices.Contains(moved, id) {
					want = append(want, id)
				}
			}
			if got := verifiedIDs(t, pool); !slices.Equal(got, want) {
				t.Fatalf("verified %v; want %v (changed %v, moved %v, inserted %v)", got, want, changed, moved, inserted)
			}
		})
	}
}
