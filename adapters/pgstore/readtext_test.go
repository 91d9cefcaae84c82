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
)

// A read's and a lane's match's key, id and version are the text the server writes for them
// (jsonb_build_array of the key columns, id::text, xmin::text), in every query mode, whether the
// server or the reader writes it: a key that is an integer, text or uuid id alone comes as the
// id and the version as the xid, which the reader turns into text itself. Integers at their
// ends, beside the keys the server still writes. A match returns each row as the read does.
func TestAReadAndAMatchReturnKeyIDAndVersionAsTheServerWritesThem(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ddl  string
		ids  string   // SQL of the rows' ids, one row each
		keys []string // Config.KeyColumns, none: id
	}{
		{name: "smallint id", ddl: "id smallint PRIMARY KEY", ids: "VALUES (-32768), (-1), (0), (1), (32767)"},
		{name: "integer id", ddl: "id integer PRIMARY KEY", ids: "VALUES (-2147483648), (-10), (0), (99), (100), (2147483647)"},
		{name: "bigint id", ddl: "id bigint PRIMARY KEY", ids: "VALUES (-9223372036854775808), (-1), (0), (9223372036854775807)"},
		// Every ASCII character but NUL, alone and among others, and some beyond.
		{name: "text id", ddl: "id text PRIMARY KEY", ids: `SELECT chr(i) FROM generate_series(1, 127) AS i
			UNION ALL VALUES ('12'), ('"q"'), (E'a\\b\u0001c\u001fd\u007f'), ('é漢字🙂'), (E'\u2028\u2029'), (''), ('null'), (repeat('k', 10000))`},
		{name: "varchar id", ddl: "id varchar(20) PRIMARY KEY", ids: `VALUES (E'x\ty'), ('"'), (E'\\'), ('X'), (E'\u007f')`},
		{name: "text id under an ICU collation", ddl: `id text COLLATE "en-x-icu" PRIMARY KEY`, ids: `VALUES ('a'), ('A'), ('é'), ('e'), (E'\n')`},
		{name: "uuid id", ddl: "id uuid PRIMARY KEY", ids: `VALUES ('00000000-0000-0000-0000-000000000000'::uuid), ('FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF'),
			('{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'), ('0123456789abcdefFEDCBA9876543210')`},
		{name: "bigint id keyed with another column", ddl: "id bigint PRIMARY KEY, region int NOT NULL, UNIQUE (region, id)",
			ids: "VALUES (-9223372036854775808), (7), (9223372036854775807)", keys: []string{"region", "id"}},
		{name: "integer id keyed by a text column", ddl: "id integer PRIMARY KEY, code text NOT NULL UNIQUE",
			ids: "VALUES (-2147483648), (5), (2147483647)", keys: []string{"code"}},
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, c := range cases {
		for _, obs := range []pgstore.Observations{pgstore.ObserveInOwnTable, pgstore.ObserveInHostColumns} {
			t.Run(fmt.Sprintf("%s/observations %d", c.name, obs), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				pool, s := newStore(t, pgstore.Config{KeyColumns: c.keys, IDColumn: "id", Observations: obs},
					`CREATE TABLE payments (`+c.ddl+`, external_id text, status text NOT NULL,
						created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour',
						observed_external_status text, last_reconciled_at timestamptz)`)
				var extra, extraVal string
				switch {
				case len(c.keys) == 2:
					extra, extraVal = ", region", ", 3"
				case len(c.keys) == 1:
					extra, extraVal = ", code", ", 'c' || t.id::text"
				}
				if _, err := pool.Exec(ctx, `INSERT INTO payments (id, status, external_id`+extra+`) SELECT t.id, 'paid', 'pi ' || t.id::text`+extraVal+` FROM (`+c.ids+`) AS t(id)`); err != nil {
					t.Fatal(err)
				}
				keys := c.keys
				if keys == nil {
					keys = []string{"id"}
				}
				want := map[string][3]string{} // by id: key, id, version
				var exts []string
				rows, err := pool.Query(ctx, `SELECT id::text, jsonb_build_array(`+strings.Join(keys, ", ")+`)::text, xmin::text, external_id FROM payments`)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var id, key, xmin, ext string
					if err := rows.Scan(&id, &key, &xmin, &ext); err != nil {
						t.Fatal(err)
					}
					want[id] = [3]string{key, id, xmin}
					exts = append(exts, ext)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				for _, mode := range modes {
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
					job := fmt.Sprint("sweep ", mode)
					b, err := ms.Read(ctx, reconcile.ReadRequest{Job: job, Limit: 1000})
					if err != nil {
						t.Fatal(err)
					}
					if len(b.Records) != len(want) {
						t.Fatalf("%v: read %d rows; want %d", mode, len(b.Records), len(want))
					}
					for _, r := range b.Records {
						w, ok := want[r.ID]
						switch {
						case !ok:
							t.Fatalf("%v: read id %q; want one of %v", mode, r.ID, want)
						case r.Key != w[0]:
							t.Errorf("%v: id %s: key %q; want %q", mode, r.ID, r.Key, w[0])
						case obs == pgstore.ObserveInOwnTable && r.Version != w[2]:
							t.Errorf("%v: id %s: version %q; want xmin %q", mode, r.ID, r.Version, w[2])
						case r.Invalid != "" || r.Recent:
							t.Errorf("%v: id %s: invalid %q, recent %v; want neither", mode, r.ID, r.Invalid, r.Recent)
						}
					}
					// A lane's match of every row, before the commit changes any.
					m, err := ms.Match(ctx, reconcile.MatchRequest{ExternalIDs: exts})
					if err != nil {
						t.Fatal(err)
					}
					if len(m.Rows) != len(want) || len(m.Elsewhere) != 0 {
						t.Fatalf("%v: matched %d rows, elsewhere %v; want %d rows", mode, len(m.Rows), m.Elsewhere, len(want))
					}
					read := map[string]reconcile.Record[string]{}
					for _, r := range b.Records {
						read[r.ID] = r
					}
					for _, r := range m.Rows {
						w, ok := want[r.ID]
						switch {
						case !ok:
							t.Fatalf("%v: matched id %q; want one of %v", mode, r.ID, want)
						case r.Key != w[0]:
							t.Errorf("%v: match: id %s: key %q; want %q", mode, r.ID, r.Key, w[0])
						case obs == pgstore.ObserveInOwnTable && r.Version != w[2]:
							t.Errorf("%v: match: id %s: version %q; want xmin %q", mode, r.ID, r.Version, w[2])
						case r != read[r.ID]:
							t.Errorf("%v: match: %+v; want the row as read, %+v", mode, r, read[r.ID])
						}
					}
					// The version is what a commit checks the row against: unchanged, it is judged.
					last := b.Records[len(b.Records)-1]
					res, err := ms.Commit(ctx, reconcile.Commit{Job: job, Cursor: b.Cursor, Next: last.Key,
						Outcomes: []reconcile.Outcome{{RecordID: last.ID, Local: "paid", External: "succeeded",
							Decision: reconcile.Decision{Verdict: reconcile.InSync}, Verified: true, Version: last.Version}}})
					if err != nil || res.Changed != 0 {
						t.Fatalf("%v: commit: %+v, %v; want the row judged as read", mode, res, err)
					}
				}
			})
		}
	}
}
