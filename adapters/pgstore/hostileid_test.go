package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// hostileTextIDs is SQL of text ids, one row each: every character from U+0001 to U+00FF
// alone, the JSON-sensitive ones among others, line and paragraph separators, a byte order
// mark, JSON-looking text, the empty id and one of 100,000 characters.
const hostileTextIDs = `SELECT chr(i) FROM generate_series(1, 255) AS i
	UNION ALL VALUES (E'a\u2028b'), (E'\u2029'), (E'\ufeff'), (E'\ufeffx'), ('"'), (E'\\"'), (E'\\\\u0000'), ('null'), ('[1]'), ('["a"]'),
		(''), (E'x\u0001\u001f\u007f\u0080\u009f'), ('𝄞🙂'), (repeat('k', 100000)), (repeat('k', 99999) || 'l')`

// A cycle over ids of every type that reads its key as the id alone, and some beside them,
// with hostile values at the ends of the type or of JSON's escaping, in batches of seven:
// every row is asked once and verified, none is read twice or skipped, none counted changed,
// in this cycle and the next. The cursor's positions are the keys the reader wrote.
func TestACycleOverHostileIDsAsksEveryRowOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, typ, ids string
		pre            []string
	}{
		{name: "text", typ: "text", ids: hostileTextIDs},
		{name: "text under an ICU collation", typ: `text COLLATE "en-x-icu"`, ids: hostileTextIDs},
		{name: "text under a case-insensitive ICU collation", typ: "text COLLATE ci", ids: hostileTextIDs,
			pre: []string{`CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`}},
		{name: "varchar", typ: "varchar", ids: hostileTextIDs},
		{name: "smallint", typ: "smallint", ids: `SELECT i FROM generate_series(-32768, -32758) AS i UNION ALL SELECT i FROM generate_series(-3, 3) AS i
			UNION ALL SELECT i FROM generate_series(32757, 32767) AS i`},
		{name: "integer", typ: "integer", ids: `SELECT i FROM generate_series(-2147483648, -2147483638) AS i UNION ALL SELECT i FROM generate_series(2147483637, 2147483647) AS i`},
		{name: "bigint", typ: "bigint", ids: `SELECT i FROM generate_series(-9223372036854775808, -9223372036854775798) AS i
			UNION ALL SELECT i FROM generate_series(9223372036854775797, 9223372036854775807) AS i`},
		{name: "uuid", typ: "uuid", ids: `SELECT md5(i::text)::uuid FROM generate_series(1, 30) AS i
			UNION ALL VALUES ('00000000-0000-0000-0000-000000000000'::uuid), ('ffffffff-ffff-ffff-ffff-ffffffffffff')`},
		{name: "a domain over text", typ: "textid", ids: "SELECT x::textid FROM (" + hostileTextIDs + ") AS s(x)", pre: []string{`CREATE DOMAIN textid AS text`}},
		{name: "a domain over bigint", typ: "bigid", ids: `SELECT i::bigid FROM generate_series(9223372036854775797, 9223372036854775807) AS i`,
			pre: []string{`CREATE DOMAIN bigid AS bigint`}},
		{name: "oid", typ: "oid", ids: `SELECT i::bigint::oid FROM generate_series(4294967280, 4294967295) AS i UNION ALL SELECT i::oid FROM generate_series(0, 5) AS i`},
		{name: "numeric", typ: "numeric", ids: `VALUES (-1e30), (-0.5), (0), (0.10), (0.1000001), (1e-20), (123456789012345678901234567890.123)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ddl := append(c.pre, `CREATE TABLE payments (id `+c.typ+` PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
				created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`)
			pool, s := newStore(t, pgstore.Config{}, ddl...)
			ctx := context.Background()
			tag, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status)
				SELECT t.id, 'pi_' || md5(t.id::text), 'paid' FROM (`+c.ids+`) AS t(id) ON CONFLICT DO NOTHING`)
			if err != nil {
				t.Fatal(err)
			}
			n := int(tag.RowsAffected())
			var mu sync.Mutex
			asked := map[string]int{}
			gw := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				asked[id]++
				return "succeeded", nil
			})
			cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, BatchSize: 7, Classifier: reconciletest.Classifier(), Gateway: gw}
			for cycle := 1; cycle <= 2; cycle++ {
				clear(asked)
				scanned := 0
				for b := 0; ; b++ {
					if b > n/7+2 {
						t.Fatalf("cycle %d: %d batches and not wrapped; %d rows", cycle, b, n)
					}
					rep, err := reconcile.RunBatch(ctx, cfg)
					if err != nil {
						t.Fatalf("cycle %d, batch %d: %v", cycle, b+1, err)
					}
					if rep.Changed != 0 {
						t.Fatalf("cycle %d, batch %d: report %+v; want no row changed", cycle, b+1, rep)
					}
					scanned += rep.Scanned
					if rep.Wrapped {
						break
					}
				}
				if scanned != n || len(asked) != n {
					t.Fatalf("cycle %d: scanned %d rows, asked about %d; want each of %d once", cycle, scanned, len(asked), n)
				}
				for id, k := range asked {
					if k != 1 {
						t.Fatalf("cycle %d: %s asked %d times; want once", cycle, id, k)
					}
				}
				var observed int
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_observations WHERE job = 'sweep'`).Scan(&observed); err != nil {
					t.Fatal(err)
				}
				if observed != n {
					t.Fatalf("cycle %d: %d rows observed; want %d", cycle, observed, n)
				}
			}
		})
	}
}
