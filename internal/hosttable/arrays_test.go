package hosttable

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// The commit's arrays reach PostgreSQL as []string and []pgtype.Timestamptz do, in every
// query mode a host's pool may use, hostile values and NULLs included.
func TestArraysEncodeAsSlices(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	at := time.Date(2026, 12, 5, 22, 30, 0, 123456000, time.UTC)
	textCases := map[string][]string{
		"nil":     nil,
		"empty":   {},
		"hostile": {"", "NULL", "null", `"quoted"`, `back\slash`, "{braces}", "a,b", " spaced ", "\t\n\r\x01", "é漢字🙂", strings.Repeat("x", 10<<10)},
	}
	timeCases := map[string][]pgtype.Timestamptz{
		"nil":   nil,
		"empty": {},
		"mixed": {{Time: at, Valid: true}, {}, {Time: at.Add(-time.Hour), Valid: true}, {InfinityModifier: pgtype.Infinity, Valid: true}},
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		for name, vals := range textCases {
			var want, got []string
			var wantNull, gotNull bool
			if err := pool.QueryRow(ctx, "SELECT $1::text[], $1::text[] IS NULL", mode, vals).Scan(&want, &wantNull); err != nil {
				t.Fatalf("%v %s: []string: %v", mode, name, err)
			}
			if err := pool.QueryRow(ctx, "SELECT $1::text[], $1::text[] IS NULL", mode, texts(vals)).Scan(&got, &gotNull); err != nil {
				t.Fatalf("%v %s: texts: %v", mode, name, err)
			}
			if wantNull != gotNull || strings.Join(want, "\x00") != strings.Join(got, "\x00") || len(want) != len(got) {
				t.Errorf("%v %s: texts gave %q (NULL %v), []string %q (NULL %v)", mode, name, got, gotNull, want, wantNull)
			}
		}
		for name, vals := range timeCases {
			var want, got string
			if err := pool.QueryRow(ctx, "SELECT coalesce($1::timestamptz[]::text, 'NULL')", mode, vals).Scan(&want); err != nil {
				t.Fatalf("%v %s: []Timestamptz: %v", mode, name, err)
			}
			if err := pool.QueryRow(ctx, "SELECT coalesce($1::timestamptz[]::text, 'NULL')", mode, times(vals)).Scan(&got); err != nil {
				t.Fatalf("%v %s: times: %v", mode, name, err)
			}
			if got != want {
				t.Errorf("%v %s: times gave %s, []Timestamptz %s", mode, name, got, want)
			}
		}
	}
}

// The arrays allocate nothing per element as pgx encodes them.
func BenchmarkEncodeArrays(b *testing.B) {
	m := pgtype.NewMap()
	ids := make([]string, 1000)
	ats := make([]pgtype.Timestamptz, 1000)
	for i := range ids {
		ids[i] = strings.Repeat("k", i%20)
		ats[i] = pgtype.Timestamptz{Time: time.Unix(int64(i), 0), Valid: i%3 != 0}
	}
	var buf []byte
	for _, c := range []struct {
		name string
		oid  uint32
		v    any
	}{
		{"[]string", pgtype.TextArrayOID, ids}, {"texts", pgtype.TextArrayOID, texts(ids)},
		{"[]Timestamptz", pgtype.TimestamptzArrayOID, ats}, {"times", pgtype.TimestamptzArrayOID, times(ats)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = m.Encode(c.oid, pgtype.BinaryFormatCode, c.v, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
