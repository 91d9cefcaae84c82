package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// auditPaymentsDDL is a payments table as a service might keep it, with its own column names.
const auditPaymentsDDL = `CREATE TABLE payments (
	id         bigint PRIMARY KEY,
	stripe_id  text,
	status     text,
	amount     bigint,
	currency   text,
	refunded   bigint,
	dispute    text,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL)`

// auditFixture is a schema with a payments table, and a stripetest server over HTTP.
type auditFixture struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
	srv    *stripetest.Server
	url    string // the database, as the admin role
	env    map[string]string
	// created is the next row's creation time, a second apart, as its intent's.
	created time.Time
}

func newAuditFixture(t *testing.T) *auditFixture {
	t.Helper()
	pool, schema := pgtest.PoolSchema(t)
	if _, err := pool.Exec(context.Background(), auditPaymentsDDL); err != nil {
		t.Fatal(err)
	}
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	return &auditFixture{t: t, pool: pool, schema: schema, srv: srv, url: pgtest.URL(t),
		env:     map[string]string{keyEnv: srv.Key()},
		created: time.Now().Add(-48 * time.Hour).Truncate(time.Second)}
}

// row is one payments row and its intent at Stripe.
type row struct {
	local        string
	amount       int64
	remote       stripe.PaymentIntentStatus // "": no intent at Stripe (the row's id is made up)
	remoteAmount int64                      // 0: amount
	refunded     int64                      // the row's refunded column
	recent       bool                       // updated now: in flight
}

// add inserts rows with ids from the next free one, each with its intent, and returns the
// intents' ids.
func (f *auditFixture) add(rows ...row) []string {
	f.t.Helper()
	ctx := context.Background()
	var ids []string
	for _, r := range rows {
		var n int
		if err := f.pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) + 1 FROM payments").Scan(&n); err != nil {
			f.t.Fatal(err)
		}
		f.created = f.created.Add(time.Second)
		pi := fmt.Sprintf("pi_madeup%016d", n)
		if r.remote != "" {
			pi = f.srv.AddPaymentIntent(stripetest.PaymentIntent{Status: r.remote, Amount: cmp(r.remoteAmount, r.amount), Currency: "usd", Created: f.created})
		}
		updated := f.created
		if r.recent {
			updated = time.Now()
		}
		if _, err := f.pool.Exec(ctx, `INSERT INTO payments VALUES ($1, $2, $3, $4, 'usd', $5, NULL, $6, $7)`,
			n, pi, r.local, r.amount, r.refunded, f.created, updated); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, pi)
	}
	return ids
}

func cmp(v, d int64) int64 {
	if v == 0 {
		return d
	}
	return v
}

// audit runs "reconcile audit" over the fixture's table and Stripe with args added.
func (f *auditFixture) audit(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	f.t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return f.env[k] }}
	base := []string{"--database-url", f.url, "--schema", f.schema, "--table", "payments", "--external-id-column", "stripe_id",
		"--stripe-base-url", f.srv.URL(), "--rate", "100"}
	code = runAudit(ctx, e, append(base, args...))
	return code, out.String(), errb.String()
}

// writes are the requests made to Stripe other than GETs.
func (f *auditFixture) writes() []string {
	var w []string
	for _, r := range f.srv.Log() {
		if r.Method != "GET" {
			w = append(w, r.Method+" "+r.Path)
		}
	}
	return w
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}

// plantStatusDrift adds a row in sync, a missed success, a row paid here and canceled at
// Stripe, and a row in flight.
func (f *auditFixture) plantStatusDrift() {
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"},
		row{local: "pending", amount: 2000, remote: "succeeded"},
		row{local: "paid", amount: 3000, remote: "canceled"},
		row{local: "pending", amount: 4000, remote: "succeeded", recent: true})
}

func TestAuditFindsStatusDrift(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	code, out, errs := f.audit(context.Background())
	if code != exitNegative {
		t.Fatalf("exit %d, want 1 (drift)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	mustContain(t, "stderr", errs, "reading table", "payments", "It writes nothing", "Drift found: 2 findings (exit 1)")
	mustContain(t, "stdout", out, ": complete, in",
		"rows read     4", "verified      3", "in flight     1",
		"missed_success", "Stripe took the payment; the row is still pending",
		"paid_locally_not_externally", "The row is paid (or fulfilled) but Stripe has no successful payment")
	if w := f.writes(); len(w) > 0 {
		t.Errorf("the audit wrote to Stripe: %v", w)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errs)
}

func TestAuditJSONAndCSV(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	f.add(row{local: "=HYPERLINK(\"http://evil\")", amount: 1, remote: "succeeded"})
	code, out, errs := f.audit(context.Background(), "--json")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json is not JSON: %v\n%s", err, out)
	}
	if got.Rows != 5 || got.Verified != 4 || got.InFlight != 1 || len(got.Findings) != 3 || !got.Complete || got.ExitCode != 1 {
		t.Errorf("summary %+v", got)
	}
	kinds := map[string]int{}
	for _, k := range got.Kinds {
		kinds[k.Kind] = k.Count
		if k.Meaning == "" {
			t.Errorf("kind %s without meaning", k.Kind)
		}
	}
	if kinds["missed_success"] != 1 || kinds["paid_locally_not_externally"] != 1 {
		t.Errorf("kinds %v", kinds)
	}

	code, out, errs = f.audit(context.Background(), "--csv")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("--csv is not CSV: %v\n%s", err, out)
	}
	if len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(auditCSVHeader, ",") {
		t.Fatalf("csv:\n%s", out)
	}
	var formula bool
	for _, r := range recs[1:] {
		for _, c := range r {
			if strings.HasPrefix(c, "=") {
				t.Errorf("a cell a spreadsheet would run: %q", c)
			}
			if strings.HasPrefix(c, "'=HYPERLINK") {
				formula = true
			}
		}
	}
	if !formula {
		t.Errorf("the planted formula is not in the file:\n%s", out)
	}
	mustContain(t, "stderr", errs, "rows read", "Drift found")
}

func TestAuditNoDrift(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"}, row{local: "failed", amount: 1000, remote: "canceled"})
	code, out, errs := f.audit(context.Background())
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stderr", errs, "No drift: every row read that was not in flight is in sync with Stripe (exit 0).")
}

func TestAuditFindsMoneyDrift(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"}) // in sync
	f.add(row{local: "paid", amount: 1000, remote: "succeeded", remoteAmount: 1200})
	refunded := f.add(row{local: "paid", amount: 5000, remote: "succeeded"})[0]
	if _, err := f.srv.Refund(refunded, 0); err != nil {
		t.Fatal(err)
	}
	booked := f.add(row{local: "paid", amount: 5000, remote: "succeeded", refunded: 5000})[0] // refunded here and at Stripe: in sync
	if _, err := f.srv.Refund(booked, 0); err != nil {
		t.Fatal(err)
	}
	disputed := f.add(row{local: "paid", amount: 7000, remote: "succeeded"})[0]
	if _, err := f.srv.Dispute(disputed, 0, stripe.DisputeStatusLost, time.Time{}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := f.audit(context.Background(), "--money", "--amount-refunded-column", "refunded", "--dispute-status-column", "dispute")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "money policy", "rows read     5", "verified      5",
		"amount_mismatch", "amount: USD 10.00 ≠ USD 12.00", "missed_refund", "dispute_lost", "A dispute was lost")
	mustContain(t, "stderr", errs, "Drift found: 3 findings", "Amount=amount", "AmountRefunded=refunded", "not read, taken as empty: amount-captured-column")
	if w := f.writes(); len(w) > 0 {
		t.Errorf("the audit wrote to Stripe: %v", w)
	}
}

func TestAuditFindsSubscriptionDrift(t *testing.T) {
	f := newAuditFixture(t)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `CREATE TABLE subscriptions (
		id uuid PRIMARY KEY DEFAULT gen_random_uuid(), stripe_subscription_id text NOT NULL, stripe_status text NOT NULL,
		cancels boolean, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, UNIQUE (created_at, id))`); err != nil {
		t.Fatal(err)
	}
	add := func(local string, remote stripe.SubscriptionStatus, cancels bool) {
		f.created = f.created.Add(time.Second)
		id := f.srv.AddSubscription(stripetest.Subscription{Status: remote, Created: f.created, CancelAtPeriodEnd: cancels})
		if _, err := f.pool.Exec(ctx, `INSERT INTO subscriptions (stripe_subscription_id, stripe_status, cancels, created_at, updated_at)
			VALUES ($1, $2, false, $3, $3)`, id, local, f.created); err != nil {
			t.Fatal(err)
		}
	}
	add("active", stripe.SubscriptionStatusActive, false)   // in sync
	add("active", stripe.SubscriptionStatusCanceled, false) // canceled at Stripe
	add("canceled", stripe.SubscriptionStatusActive, false) // ended here, still billed
	add("active", stripe.SubscriptionStatusActive, true)    // Stripe ends it at the period's end
	code, out, errs := f.audit(ctx, "--object", "subscription", "--table", "subscriptions", "--key-columns", "created_at,id",
		"--external-id-column", "stripe_subscription_id", "--state-column", "stripe_status", "--cancel-at-period-end-column", "cancels")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "SubscriptionPolicy", "rows read     4", "verified      4",
		"subscription_canceled_externally", "billing_without_access", "cancellation_scheduled_externally")
	mustContain(t, "stderr", errs, "Drift found: 3 findings")
}

// TestAuditSelectOnlyRole runs the audit as a role that may only SELECT the table: it has no
// right to create or write anything, so a run that completes proves the audit needs none.
func TestAuditSelectOnlyRole(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	f.url = pgtest.SelectOnlyURL(t, f.schema, "payments")
	code, out, errs := f.audit(context.Background())
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, ": complete", "rows read     4", "missed_success", "paid_locally_not_externally")
	var tables int
	if err := f.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = $1", f.schema).Scan(&tables); err != nil || tables != 1 {
		t.Errorf("tables in the schema: %d, %v; want the payments table alone", tables, err)
	}
}

// TestAuditRateLimitStorm answers 429 to the first calls: the audit slows down, waits and
// asks again, and ends with every row verified and the same findings as without the storm.
func TestAuditRateLimitStorm(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	for _, r := range []stripetest.Route{stripetest.ListPaymentIntents, stripetest.RetrievePaymentIntent} {
		f.srv.Inject(r, stripetest.Fault{Status: 429, Times: 4})
	}
	code, out, errs := f.audit(context.Background(), "--json", "--batch-size", "2")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Complete || got.Rows != 4 || got.Verified != 3 || got.Unverifiable != 0 || len(got.Findings) != 2 || got.RateLimited == 0 {
		t.Errorf("after a 429 storm: %+v", got)
	}
}

// TestAuditOutage: Stripe answers nothing but 503. Every row is unverifiable: the audit says
// so, claims no row in sync, and exits 3.
func TestAuditOutage(t *testing.T) {
	f := newAuditFixture(t)
	for range 5 {
		f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	}
	for _, r := range []stripetest.Route{stripetest.ListPaymentIntents, stripetest.RetrievePaymentIntent} {
		f.srv.Inject(r, stripetest.Fault{Status: 503})
	}
	code, out, errs := f.audit(context.Background(), "--patience", "1s", "--batch-size", "2")
	if code != exitError {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "verified      0", "unverifiable  5")
	mustContain(t, "stderr", errs, "5 rows could not be verified: it cannot say they are in sync (exit 3)")
	noInSync(t, out, errs)
}

// noInSync fails if the output claims any row in sync.
func noInSync(t *testing.T, outs ...string) {
	t.Helper()
	for _, s := range outs {
		if strings.Contains(s, "No drift:") || strings.Contains(s, "in sync with Stripe") {
			t.Errorf("reported as in sync:\n%s", s)
		}
	}
}

// TestAuditGivesUp: Stripe rate limits every call. The audit retries for --patience, then
// stops, says why, and exits 3.
func TestAuditGivesUp(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"}, row{local: "paid", amount: 1000, remote: "succeeded"})
	for _, r := range []stripetest.Route{stripetest.ListPaymentIntents, stripetest.RetrievePaymentIntent} {
		f.srv.Inject(r, stripetest.Fault{Status: 429})
	}
	code, out, errs := f.audit(context.Background(), "--patience", "1s")
	if code != exitError {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "stopped: Stripe rate limited every call for 1s (--patience)", "rows read     0")
	mustContain(t, "stderr", errs, "did not complete: it cannot say the table is in sync (exit 3)")
	noInSync(t, out, errs)
}

// TestAuditOneRowUnverifiable: Stripe fails for one object only. The audit completes, counts
// the row unverifiable, and does not call the table in sync.
func TestAuditOneRowUnverifiable(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	bad := f.add(row{local: "paid", amount: 1000, remote: "succeeded"})[0]
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	f.srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Status: 500})
	f.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: 500, ID: bad})
	code, out, errs := f.audit(context.Background(), "--json")
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errs)
	}
	if code != exitError || !got.Complete || got.Unverifiable != 1 || got.Verified != 2 || got.ExitCode != exitError {
		t.Errorf("exit %d, %+v", code, got)
	}
}
