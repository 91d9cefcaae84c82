package hosttable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// Times at the ends of timestamptz's calendar (4713 BC, year 0, five-digit years, a zone
// offset in seconds, -infinity) bind as []pgtype.Timestamptz does in every query mode, the
// text fallback included; text PostgreSQL cannot keep (a NUL, bytes that are not UTF-8) fails
// with the same error as a []string's, never stored altered.
func TestArraysAtTheEndsAndWithTextPostgreSQLRefuses(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	ends := []pgtype.Timestamptz{
		{Time: time.Date(-4712, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true},
		{Time: time.Date(0, 12, 31, 23, 59, 59, 999999000, time.UTC), Valid: true},
		{Time: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true},
		{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), Valid: true},
		{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true},
		{Time: time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC), Valid: true},
		{Time: time.Date(2026, 1, 1, 0, 0, 0, 1, time.FixedZone("odd", 3600+17)), Valid: true},
		{InfinityModifier: pgtype.NegativeInfinity, Valid: true},
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		var got, want string
		if err := pool.QueryRow(ctx, "SELECT $1::timestamptz[]::text", mode, ends).Scan(&want); err != nil {
			t.Fatalf("%v: []Timestamptz: %v", mode, err)
		}
		if err := pool.QueryRow(ctx, "SELECT $1::timestamptz[]::text", mode, times(ends)).Scan(&got); err != nil {
			t.Fatalf("%v: times: %v", mode, err)
		}
		if got != want {
			t.Errorf("%v: times gave %s, []Timestamptz %s", mode, got, want)
		}
		for _, v := range []string{"a\x00b", "\x00", "ok\xff", "\xc3"} {
			var s []string
			wantErr := pool.QueryRow(ctx, "SELECT $1::text[]", mode, []string{"x", v}).Scan(&s)
			gotErr := pool.QueryRow(ctx, "SELECT $1::text[]", mode, texts{"x", v}).Scan(&s)
			var wantPg, gotPg *pgconn.PgError
			if !errors.As(wantErr, &wantPg) || !errors.As(gotErr, &gotPg) || gotPg.Code != wantPg.Code {
				t.Errorf("%v %q: texts: %v; []string: %v; want the same refusal", mode, v, gotErr, wantErr)
			}
		}
	}
}
