package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// TestAuditMemoryFlat audits a table of 100,000 rows and one of 1,000,000 with the command
// built as users get it, in a process of its own, and compares the two runs' peak resident set
// sizes: what the audit holds must not grow with the rows. Only the audit is measured, not this
// process with its fake Stripe, earlier tests' leftovers and the collector's timing. One row in a
// hundred has its intent at Stripe and is verified (the list calls, the look-ahead, the policy),
// ten of those drifted; the others changed a moment ago and are in flight, which costs no call
// but goes through the same read, judgment and commit. Run it alone with -run
// TestAuditMemoryFlat -v to see the figures.
func TestAuditMemoryFlat(t *testing.T) {
	// Without the race detector even when the tests run with it (it multiplies memory), and with
	// the collector's defaults whatever the environment says: the figures are a user's.
	bin, measure := goBuild(t, ".", "-race=false"), newPeakRSS(t)
	env := []string{"GOGC=100", "GOMEMLIMIT=off"}
	peak := map[int]uint64{}
	for _, n := range []int{100_000, 1_000_000} {
		f := newAuditFixture(t)
		start := time.Now()
		f.plantMany(n)
		planted := time.Since(start)
		start = time.Now()
		code, out, errs, rss := measure.run(t, context.Background(), append(env, keyEnv+"="+f.srv.Key()), bin, "audit",
			"--database-url", f.url, "--schema", f.schema, "--table", "payments", "--external-id-column", "stripe_id",
			"--stripe-base-url", f.srv.URL(), "--rate", "100", "--json", "--batch-size", "5000")
		took := time.Since(start)
		if code != exitNegative {
			t.Fatalf("%d rows: exit %d, want 1\n%.2000s\n%s", n, code, out, errs)
		}
		var got auditSummaryJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if !got.Complete || got.Rows != n || got.Verified != n/100 || got.InFlight != n-n/100 || len(got.Findings) != 10 {
			t.Fatalf("%d rows: %+v", n, got)
		}
		peak[n] = rss
		t.Logf("%d rows: planted in %s, audited in %s (%d Stripe calls); the audit's peak resident set %.1f MB",
			n, planted.Round(time.Millisecond), took.Round(time.Millisecond), got.Calls, float64(rss)/1e6)
	}
	// Flat: ten times the rows may not add more than a small, fixed margin (the collector's
	// timing against a batch of 5,000 rows in flight), never something that grows with the rows
	// (an observation kept per row would be over 100 MB at a million).
	if peak[1_000_000] > peak[100_000]+32<<20 {
		t.Errorf("the audit's peak resident set was %.1f MB at 1,000,000 rows against %.1f MB at 100,000: memory grows with the rows",
			float64(peak[1_000_000])/1e6, float64(peak[100_000])/1e6)
	}
}

// plantMany fills the payments table with n rows by generate_series: every hundredth row has
// its intent at Stripe, created a second after the previous one, and ten of them are pending
// where Stripe succeeded; the others were updated now, so they are in flight.
func (f *auditFixture) plantMany(n int) {
	f.t.Helper()
	base := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	pis := make([]stripetest.PaymentIntent, 0, n/100)
	for g := 100; g <= n; g += 100 {
		pis = append(pis, stripetest.PaymentIntent{ID: fmt.Sprintf("pi_audit%016d", g), Status: stripe.PaymentIntentStatusSucceeded,
			Amount: 1000, Currency: "usd", Created: base.Add(time.Duration(g/100) * time.Second)})
	}
	f.srv.AddPaymentIntents(pis)
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO payments
		SELECT g, 'pi_audit' || lpad(g::text, 16, '0'),
			CASE WHEN g % 100 = 0 AND g <= 1000 THEN 'pending' ELSE 'paid' END, 1000, 'usd', 0, NULL,
			$1::timestamptz + (g / 100) * interval '1 second',
			CASE WHEN g % 100 = 0 THEN $1::timestamptz + (g / 100) * interval '1 second' ELSE now() END
		FROM generate_series(1, $2::int) g`, base, n); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.pool.Exec(context.Background(), "ANALYZE payments"); err != nil {
		f.t.Fatal(err)
	}
}
