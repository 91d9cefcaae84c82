package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The tests of this file came from attacking the audit as a hostile user or an unlucky
// operator would; each failed before its fix.

// TestAuditCannotConnectSaysWhatTheAuditNeeds: the audit writes nothing, so its advice when
// the database cannot be reached is about the database holding the table and a role that may
// read it, not the one the tests and examples need (a database to create schemas in).
func TestAuditCannotConnectSaysWhatTheAuditNeeds(t *testing.T) {
	f := newAuditFixture(t)
	f.url = "postgres://auditor:s3cret@127.0.0.1:1/shop?sslmode=disable"
	code, out, errs := f.audit(context.Background())
	if code != exitError {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stderr", errs, "cannot connect to PostgreSQL at auditor@127.0.0.1:1/shop (--database-url)",
		"the database that holds the table", "$DATABASE_URL", "SELECT")
	for _, wrong := range []string{"create schemas", "CREATE DATABASE", "TEST_DATABASE_URL", "pg_ctlcluster", "s3cret"} {
		if strings.Contains(errs, wrong) {
			t.Errorf("stderr says %q:\n%s", wrong, errs)
		}
	}
	if strings.Count(errs, "cannot connect") != 1 {
		t.Errorf("the failure is not said once:\n%s", errs)
	}
}

// TestAuditFailureSaidOnce: a failure that stops the run (Stripe refusing the key) is said
// once in each output, not in the summary and again on standard error.
func TestAuditFailureSaidOnce(t *testing.T) {
	for _, format := range []string{"text", "--csv", "--json"} {
		t.Run(format, func(t *testing.T) {
			f := newAuditFixture(t)
			f.plantStatusDrift()
			f.srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Status: 403})
			f.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: 403})
			var args []string
			if format != "text" {
				args = append(args, format)
			}
			code, out, errs := f.audit(context.Background(), args...)
			if code != exitError {
				t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
			}
			const cause = "the API key lacks permission"
			if n := strings.Count(out+errs, cause); n != 1 {
				t.Errorf("the failure is said %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, out, errs)
			}
			if format == "--json" {
				var got auditSummaryJSON
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if !strings.Contains(got.Stopped, cause) {
					t.Errorf("stopped %q lacks the failure", got.Stopped)
				}
			}
		})
	}
}
