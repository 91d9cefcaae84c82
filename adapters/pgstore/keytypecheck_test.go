package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A key column whose values a cursor position cannot carry back as the same key (an array, a
// row, JSON, text that depends on the session's settings) or that has no order to walk by is
// refused by Check, before any read, naming the column and its type; every other type walks
// two whole cycles shared by two sessions of different DateStyle and IntervalStyle, each row
// asked once a cycle.
func TestCheckRefusesKeyTypesTheKeysetCannotWalk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typ     string   // the key column's type
		setup   string   // types the column needs, made first
		vals    []string // the keys, as text, in key order
		pair    bool     // the type has no unique index: the key is (k, id)
		refused string   // what Check's error says, "" for a type that works
	}{
		{name: "an int4range", typ: "int4range", vals: []string{"empty", "[1,3)", "[1,5)", "[2,3)", "(,)"}},
		{name: "a numrange", typ: "numrange", vals: []string{"[-1.5,0)", "[0,1]", "[0,2)"}},
		{name: "a tsvector", typ: "tsvector", vals: []string{"a", "'a b'", "a:1 b:2", "b"}},
		{name: "a bit(4)", typ: "bit(4)", vals: []string{"0000", "0101", "1111"}},
		{name: "a varbit", typ: "varbit", vals: []string{"", "0", "01", "1"}},
		{name: "an enum", typ: "mood", setup: `CREATE TYPE mood AS ENUM ('sad', 'ok, fine', 'hap"py')`, vals: []string{"sad", "ok, fine", `hap"py`}},
		{name: "a bytea", typ: "bytea", vals: []string{`\x`, `\x00`, `\x0001`, `\x5c22`, `\xff`}},
		{name: "a domain over text", typ: "code", setup: `CREATE DOMAIN code AS text CHECK (VALUE <> 'x')`, vals: []string{"", "A", "a", "b"}},
		{name: "a domain over a domain over bigint", typ: "ref", setup: `CREATE DOMAIN num AS bigint; CREATE DOMAIN ref AS num`, vals: []string{"-5", "0", "7"}},
		{name: "a boolean paired with the id", typ: "boolean", pair: true, vals: []string{"false", "false", "true", "true"}},

		{name: "a varchar array", typ: "varchar[]", vals: []string{"{}", "{a}", `{"a,b"}`, "{b,c}"}, refused: `"k" of "payments" is character varying[], an array`},
		{name: "an int array", typ: "int[]", vals: []string{"{1}", "{1,2}", "{2}"}, refused: `"k" of "payments" is integer[], an array`},
		{name: "a domain over an array", typ: "tags", setup: `CREATE DOMAIN tags AS text[]`, vals: []string{"{a}", "{b}"}, refused: `"k" of "payments" is tags, an array`},
		{name: "a composite type", typ: "pair", setup: `CREATE TYPE pair AS (a int, b text)`, vals: []string{"(1,x)", "(1,y)", "(2,x)"}, refused: `"k" of "payments" is pair, a composite`},
		{name: "jsonb", typ: "jsonb", vals: []string{`"a"`, `"b"`, "1", `{"a": 1}`}, refused: `"k" of "payments" is jsonb, JSON`},
		{name: "json", typ: "json", pair: true, vals: []string{`"a"`, "1"}, refused: `"k" of "payments" is json, JSON`},
		{name: "an interval", typ: "interval", vals: []string{"-3 days", "-1 day -02:03:04", "-1 day", "1 day -02:03:04", "1 day"}, refused: `"k" of "payments" is interval, an interval, whose text depends on the session's IntervalStyle`},
		{name: "a range of timestamps", typ: "tsrange", vals: []string{"[2026-01-02,2026-01-03)", "[2026-02-01,2026-02-02)", "[2026-03-01,2026-03-02)", "[2026-04-05,2026-04-06)"}, refused: `"k" of "payments" is tsrange, a range of dates or times, whose text depends on the session's DateStyle`},
		{name: "a daterange", typ: "daterange", vals: []string{"[2026-01-02,2026-01-03)", "[2026-02-01,2026-02-02)", "[2026-03-01,2026-03-02)", "[2026-04-05,2026-04-06)"}, refused: `"k" of "payments" is daterange, a range of dates or times`},
		{name: "money", typ: "money", vals: []string{"-92233720368547758.08", "-1", "0", "1234.56", "92233720368547758.07"}, refused: `"k" of "payments" is money, money, whose text depends on the session's lc_monetary`},
		{name: "a regclass", typ: "regclass", vals: []string{"pg_class", "pg_type"}, refused: `"k" of "payments" is regclass, an object reference (reg*), whose text depends on the session's search_path`},
		{name: "a regtype", typ: "regtype", vals: []string{"integer", "text"}, refused: `"k" of "payments" is regtype, an object reference (reg*)`},
		{name: "an xml", typ: "xml", pair: true, vals: []string{"<a/>", "<b/>"}, refused: `"k" of "payments" is xml, which has no ordering`},
		{name: "a point", typ: "point", pair: true, vals: []string{"(0,0)", "(1,2)"}, refused: `"k" of "payments" is point, which has no ordering`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := pgstore.Config{KeyColumns: []string{"k"}, IDColumn: "id"}
			unique := " UNIQUE"
			if tt.pair {
				cfg.KeyColumns, unique = []string{"k", "id"}, ""
			}
			ddl := []string{`CREATE TABLE payments (id bigint PRIMARY KEY, k ` + tt.typ + ` NOT NULL` + unique + `,
				external_id text NOT NULL, status text NOT NULL,
				created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`}
			if tt.setup != "" {
				ddl = append([]string{tt.setup}, ddl...)
			}
			pool, _ := newStore(t, pgstore.Config{}, ddl...)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, k, external_id, status)
				SELECT n, CAST(v AS `+tt.typ+`), 'pi_' || n, 'paid' FROM unnest($1::text[]) WITH ORDINALITY AS t(v, n)`, tt.vals); err != nil {
				t.Fatal(err)
			}
			cfg.Table = "payments"
			// Two processes whose sessions write dates and intervals differently, taking turns.
			a, err := pgstore.New(variant(t, pool, map[string]string{"DateStyle": "SQL, DMY", "IntervalStyle": "sql_standard"}, nil), cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := pgstore.New(variant(t, pool, map[string]string{"DateStyle": "SQL, MDY", "IntervalStyle": "postgres"}, nil), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.refused != "" {
				err := a.Check(ctx)
				if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), "use a key column of") {
					t.Fatalf("Check = %v; want an error saying %s, and what to use instead", err, tt.refused)
				}
				return
			}
			gw := reconciletest.NewGateway(states(len(tt.vals), "succeeded"))
			for cycle := 1; cycle <= 2; cycle++ {
				for i := 0; ; i++ {
					if i > 2*len(tt.vals) {
						t.Fatalf("cycle %d has not wrapped after %d batches", cycle, i)
					}
					s := a
					if i%2 == 1 {
						s = b
					}
					rep, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
						Classifier: reconciletest.Classifier(), BatchSize: 2})
					if err != nil {
						t.Fatalf("cycle %d, batch %d: %v", cycle, i, err)
					}
					if rep.Wrapped {
						break
					}
				}
				for i := 1; i <= len(tt.vals); i++ {
					if n := gw.Calls(fmt.Sprintf("pi_%d", i)); n != cycle {
						t.Fatalf("after %d cycles, pi_%d (key %s) was asked %d times", cycle, i, tt.vals[i-1], n)
					}
				}
			}
		})
	}
}
