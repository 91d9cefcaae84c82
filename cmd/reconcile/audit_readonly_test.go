package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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

// TestAuditSaysRowSecurityHidesRows: the table's row-level security lets the auditor's role
// see only some rows (a tenant's, say). The audit cannot read the others and cannot tell how
// many there are: it says, in each format, that only the rows the role may see were read,
// rather than "every row read is in sync" alone.
func TestAuditSaysRowSecurityHidesRows(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"}, row{local: "paid", amount: 2000, remote: "succeeded"},
		row{local: "pending", amount: 3000, remote: "succeeded"})
	for _, ddl := range []string{
		`ALTER TABLE payments ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY paid_only ON payments FOR SELECT USING (status = 'paid')`,
	} {
		if _, err := f.pool.Exec(context.Background(), ddl); err != nil {
			t.Fatal(err)
		}
	}
	const note = "row-level security"
	for _, tc := range []struct {
		name       string
		selectOnly bool
		format     string
	}{
		{"the owner", false, "text"},
		{"a reader", true, "text"},
		{"a reader", true, "--json"},
		{"a reader", true, "--csv"},
	} {
		t.Run(tc.name+" "+tc.format, func(t *testing.T) {
			f.url = pgtest.URL(t)
			if tc.selectOnly {
				f.url = pgtest.SelectOnlyURL(t, f.schema, "payments")
			}
			var args []string
			if tc.format != "text" {
				args = append(args, tc.format)
			}
			code, out, errs := f.audit(context.Background(), args...)
			if !tc.selectOnly {
				// The owner is not bound by the policy: every row is read, the drift found.
				if code != exitNegative || strings.Contains(out+errs, note) {
					t.Fatalf("exit %d, want 1 with no word of row security\n%s\n%s", code, out, errs)
				}
				return
			}
			if code != exitOK {
				t.Fatalf("exit %d, want 0 (the rows read are in sync)\n%s\n%s", code, out, errs)
			}
			switch tc.format {
			case "--json":
				var got struct {
					RowSecurity bool   `json:"row_security"`
					Verdict     string `json:"verdict"`
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatal(err)
				}
				if !got.RowSecurity || !strings.Contains(got.Verdict, note) {
					t.Errorf("row_security %v, verdict %q", got.RowSecurity, got.Verdict)
				}
			default:
				mustContain(t, "stderr", errs, note)
				if tc.format == "text" {
					mustContain(t, "stdout", out, note)
				}
			}
		})
	}
}
