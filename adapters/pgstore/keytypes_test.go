package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// Every key type a host may use, spelled as hostile as its type lets it be, in the query modes
// that bind the commit's arrays differently (binary, typed from Go values, written into the
// statement's text) and with both homes of the observations: a cycle opens findings of half the
// rows, the next, every row in sync again, closes each once (cleared: the findings statement's
// lookup and close by ctid), and every row is verified each time; a third opens one for every
// row. Nothing is counted changed.
func TestEveryKeyTypeOpensAndClosesFindingsInEveryQueryMode(t *testing.T) {
	t.Parallel()
	keys := []struct {
		name string
		typ  string   // the id column's type
		ids  []string // as inserted
		cfg  pgstore.Config
		ddl  string // instead of a table keyed by id alone
	}{
		{name: "bigint at its ends", typ: "bigint", ids: []string{"-9223372036854775808", "-1", "0", "9223372036854775807"}},
		{name: "hostile text", typ: "text", ids: []string{"NULL", "null", "", `"quoted"`, `back\slash`, `\`, "{a,b}", "{}", "a,b", " spaced ",
			"'", "''", "\t\n\r", "é漢字🙂", "(1,2)", "[1]", strings.Repeat("k", 10<<10)}},
		{name: "text compared bytewise (collation C): case differs", typ: `text COLLATE "C"`, ids: []string{"A", "a", "B", "b", "Ä", "ä"}},
		{name: "text under an ICU collation", typ: `text COLLATE "en-x-icu"`, ids: []string{"a", "A", "b", "B", "é", "e"}},
		{name: "char(8) with padding", typ: "char(8)", ids: []string{"a", "ab", " a", "abcdefgh", "a b"}},
		{name: "varchar(12)", typ: "varchar(12)", ids: []string{"x", "X", "x y", "NULL"}},
		{name: "uuid", typ: "uuid", ids: []string{"00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
			"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "a0eebc999c0b4ef8bb6d6bb9bd380a12"}},
		{name: "composite (created_at, uuid)", typ: "uuid", ids: []string{"b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000001",
			"c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
			cfg: pgstore.Config{KeyColumns: []string{"created_at", "id"}},
			ddl: `CREATE TABLE payments (id uuid PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
				created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now(),
				observed_external_status text, last_reconciled_at timestamptz, UNIQUE (created_at, id))`},
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, k := range keys {
		for _, obs := range []pgstore.Observations{pgstore.ObserveInOwnTable, pgstore.ObserveInHostColumns} {
			for _, mode := range modes {
				t.Run(fmt.Sprintf("%s/observations %d/%v", k.name, obs, mode), func(t *testing.T) {
					t.Parallel()
					ddl := k.ddl
					if ddl == "" {
						ddl = `CREATE TABLE payments (id ` + k.typ + ` PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
							created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now(),
							observed_external_status text, last_reconciled_at timestamptz)`
					}
					cfg := k.cfg
					cfg.Observations = obs
					pool, s := newStore(t, cfg, ddl)
					ctx := context.Background()
					// Each row, in insertion order, has external id pi_<n>; created a second apart.
					if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at)
						SELECT CAST(id AS `+strings.Fields(k.typ)[0]+`), 'pi_' || n, 'paid', now() - interval '1 day' + n * interval '1 second', now() - interval '1 hour'
						FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`, k.ids); err != nil {
						t.Fatal(err)
					}
					var n int
					if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&n); err != nil || n != len(k.ids) {
						t.Fatalf("%d rows (%v); want %d", n, err, len(k.ids))
					}
					pc := pool.Config()
					pc.ConnConfig.DefaultQueryExecMode = mode
					mp, err := pgxpool.NewWithConfig(ctx, pc)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(mp.Close)
					ms, err := pgstore.New(mp, s.Config())
					if err != nil {
						t.Fatal(err)
					}
					states := map[string]string{}
					set := func(odd, even string) {
						for i := 1; i <= n; i++ {
							states[fmt.Sprintf("pi_%d", i)] = map[bool]string{true: odd, false: even}[i%2 == 1]
						}
					}
					jc := reconcile.Config[string, string]{Job: "sweep", Source: ms, Sink: ms, Gateway: reconciletest.NewGateway(states),
						Classifier: reconciletest.Classifier(), BatchSize: 3}
					cycle := func(wantOpen, wantCleared int) {
						t.Helper()
						var changed, scanned int
						for _, rep := range reconciletest.Cycle(t, jc, n+2) {
							changed += rep.Changed
							scanned += rep.Scanned
						}
						if scanned != n || changed != 0 {
							t.Fatalf("a cycle scanned %d rows, %d changed; want %d, none", scanned, changed, n)
						}
						var open, cleared int
						byRecord := map[string]int{}
						for _, f := range reconciletest.Findings(t, ms, "sweep") {
							if f.Open() {
								open++
								byRecord[f.RecordID]++
							} else if f.Resolution == reconcile.ResolutionCleared {
								cleared++
							}
						}
						if open != wantOpen || cleared != wantCleared {
							t.Fatalf("%d findings open, %d cleared; want %d, %d", open, cleared, wantOpen, wantCleared)
						}
						for id, c := range byRecord {
							if c > 1 {
								t.Fatalf("record %q has %d open findings", id, c)
							}
						}
						var events, verified int
						if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_finding_events WHERE action = 'resolved'`).Scan(&events); err != nil || events != wantCleared {
							t.Fatalf("%d resolved events (%v); want %d, one a finding closed", events, err, wantCleared)
						}
						q := `SELECT count(*) FROM reconcile_observations WHERE job = 'sweep'`
						if obs == pgstore.ObserveInHostColumns {
							q = `SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL`
						}
						if err := pool.QueryRow(ctx, q).Scan(&verified); err != nil || verified != n {
							t.Fatalf("%d rows verified (%v); want %d", verified, err, n)
						}
					}
					set("canceled", "succeeded")
					cycle((n+1)/2, 0)
					set("succeeded", "succeeded")
					cycle(0, (n+1)/2)
					set("canceled", "canceled")
					cycle(n, (n+1)/2)
				})
			}
		}
	}
}
