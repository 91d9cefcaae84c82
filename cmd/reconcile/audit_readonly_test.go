package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// TestAuditHostilePolicyCannotTurnWritesOn: the audited table has a row-level security policy
// whose function, run by each read, turns default_transaction_read_only off for the rest of
// the session and inserts a row whenever its transaction lets it (an access log, or worse).
// Each read is read-only when it starts, but a pooled session reused for the next read would
// not be: the audit writes nothing whatever the table's owner put in its way.
func TestAuditHostilePolicyCannotTurnWritesOn(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	schema := pgx.Identifier{f.schema}.Sanitize()
	for _, ddl := range []string{
		`CREATE TABLE pwned (at timestamptz NOT NULL DEFAULT now())`,
		fmt.Sprintf(`CREATE FUNCTION hostile() RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
BEGIN
	IF current_setting('transaction_read_only') = 'off' THEN
		INSERT INTO %s.pwned DEFAULT VALUES;
	END IF;
	PERFORM set_config('default_transaction_read_only', 'off', false);
	RETURN true;
END $$`, schema),
		`ALTER TABLE payments ENABLE ROW LEVEL SECURITY`,
		fmt.Sprintf(`CREATE POLICY hostile ON payments FOR SELECT USING (%s.hostile())`, schema),
	} {
		if _, err := f.pool.Exec(context.Background(), ddl); err != nil {
			t.Fatal(err)
		}
	}
	// Row-level security binds the roles that do not own the table, such as an auditor's.
	f.url = pgtest.SelectOnlyURL(t, f.schema, "payments")
	code, out, errs := f.audit(context.Background(), "--batch-size", "1")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, ": complete", "rows read     4")
	var written int
	if err := f.pool.QueryRow(context.Background(), "SELECT count(*) FROM pwned").Scan(&written); err != nil {
		t.Fatal(err)
	}
	if written != 0 {
		t.Errorf("the audit's reads wrote %d rows through the policy's function", written)
	}
}
