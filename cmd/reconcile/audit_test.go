package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/leaktest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
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

// goBuild builds the package in dir with go build's flags added and returns the binary's path:
// "." is this command, for the tests that need it in a process of its own (signals, a
// terminal, its peak memory).
func goBuild(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	name := filepath.Base(dir)
	if dir == "." {
		name = "reconcile"
	}
	bin := filepath.Join(t.TempDir(), name)
	args := append(append([]string{"build"}, flags...), "-o", bin, dir)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
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
	mustContain(t, "stderr", errs, "No drift: every row read is in sync with Stripe (exit 0).")
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

// TestAuditHostileValues stores in the table what a hostile or broken writer could: escape
// sequences, forged lines, bidirectional overrides, a 10 KB status, a formula. No control
// character reaches the terminal in text, JSON or CSV output, and every value is still shown.
func TestAuditHostileValues(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid" + hostile, amount: 1000, remote: "succeeded"})
	f.add(row{local: strings.Repeat("x", 10<<10), amount: 1000, remote: "succeeded"})
	if _, err := f.pool.Exec(context.Background(), `UPDATE payments SET stripe_id = 'pi_' || $1 WHERE id = 2`, hostile); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "--json", "--csv"} {
		t.Run(format, func(t *testing.T) {
			var args []string
			if format != "text" {
				args = append(args, format)
			}
			code, out, errs := f.audit(context.Background(), args...)
			if code != exitNegative {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			for name, s := range map[string]string{"stdout": out, "stderr": errs} {
				for _, r := range s {
					if r != '\n' && safetext.Line(string(r)) != string(r) {
						t.Fatalf("%s %s holds the raw control %U:\n%q", format, name, r, s)
					}
				}
			}
			switch format {
			case "text", "--csv":
				mustContain(t, format, out, `paid\x1b]0;pwned\x07`, `\u202e`)
			case "--json":
				var got auditSummaryJSON
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("not JSON: %v", err)
				}
				if len(got.Findings) != 2 || !strings.Contains(got.Findings[0].Local+got.Findings[1].Local, "paid"+hostile) {
					t.Errorf("the hostile value is not kept as it is: %+v", got.Findings)
				}
			}
		})
	}
}

// TestAuditNeverPrintsTheKey talks to a server that quotes the key it was given back in
// every error (a proxy, a broken fake), with a key in Stripe's shape and ones that the
// redaction of Stripe-shaped keys does not recognize, one with characters JSON escapes: none
// is printed, in any output.
func TestAuditNeverPrintsTheKey(t *testing.T) {
	for _, key := range []string{"sk_live_51EchoedBackKeyABCDEFGH", "sk_Ab1-hunter2-no-known-shape", `sk_Ab1"hunter2\xyzzy<plugh>`} {
		for _, status := range []int{http.StatusUnauthorized, http.StatusBadRequest} {
			t.Run(fmt.Sprintf("%d %.6s", status, key), func(t *testing.T) {
				f := newAuditFixture(t)
				f.plantStatusDrift()
				echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					msg, _ := json.Marshal(fmt.Sprintf("Invalid API Key provided: %s (you sent %s)", got, got))
					fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":%s}}`, msg)
				}))
				defer echo.Close()
				f.env[keyEnv] = key
				for _, format := range []string{"--json", "--csv", "--grace=10m"} {
					var out, errb bytes.Buffer
					e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return f.env[k] }}
					code := runAudit(context.Background(), e, []string{"--database-url", f.url, "--schema", f.schema, "--table", "payments",
						"--external-id-column", "stripe_id", "--stripe-base-url", echo.URL, "--patience", "1s", format})
					if code == exitOK {
						t.Errorf("exit 0 against a server that answers only errors")
					}
					// hunter2: the key as --json writes it, its quote and backslash escaped.
					if strings.Contains(out.String()+errb.String(), key) || strings.Contains(out.String()+errb.String(), key[:12]) ||
						strings.Contains(out.String()+errb.String(), "hunter2") {
						t.Fatalf("the key was printed:\n%s\n%s", out.String(), errb.String())
					}
					if status == http.StatusUnauthorized && !strings.Contains(out.String()+errb.String(), "[redacted key]") {
						t.Errorf("the server's error is not shown (redacted):\n%s", errb.String())
					}
				}
			})
		}
	}
}

// TestAuditNeverPrintsTheKeyEncoded: the server quotes the key back with its characters that
// are not letters or digits encoded (percent-encoded as in a URL or a form, \u escapes of a
// JSON text decoded once, HTML character references): neither the redaction of Stripe-shaped
// keys nor a search for the exact key sees it, yet it is the key to whoever reads the report.
func TestAuditNeverPrintsTheKeyEncoded(t *testing.T) {
	encodings := map[string]func(byte) string{
		"percent":           func(c byte) string { return fmt.Sprintf("%%%02X", c) },
		"percent lowercase": func(c byte) string { return fmt.Sprintf("%%%02x", c) },
		"json escape":       func(c byte) string { return fmt.Sprintf(`\\u%04x`, c) },
		"html decimal":      func(c byte) string { return fmt.Sprintf("&#%d;", c) },
		"html hex":          func(c byte) string { return fmt.Sprintf("&#x%X;", c) },
	}
	for _, key := range []string{"sk_live_51EchoedBackKeyABCDEFGH", "sk_Ab1-hunter2-xyzzy-plugh"} {
		var parts []string // the key's parts of five letters or digits or more: what reads as the key
		for _, p := range strings.FieldsFunc(key, func(r rune) bool { return r == '_' || r == '-' }) {
			if len(p) >= 5 {
				parts = append(parts, p)
			}
		}
		for name, enc := range encodings {
			var encoded string
			for i := range len(key) {
				if c := key[i]; c == '_' || c == '-' {
					encoded += enc(c)
				} else {
					encoded += string(c)
				}
			}
			t.Run(fmt.Sprintf("%s %.6s", name, key), func(t *testing.T) {
				auditQuotedBack(t, key, `"Invalid API Key provided: `+encoded+`"`, func(format, printed string) {
					for _, p := range parts {
						if strings.Contains(printed, p) {
							t.Fatalf("%s: the key was printed (%s):\n%s", format, p, printed)
						}
					}
					mustContain(t, format, printed, "Invalid API Key provided: [redacted key]")
				})
			})
		}
	}
}

// TestAuditNeverPrintsTheKeySplit: the server quotes the key back cut in two (a line folded by
// a proxy, an invisible character, an ellipsis): the pattern of Stripe keys hides at most the
// part that begins like one, and the exact key is not there to find. No stretch of 16 of the
// key's characters is printed.
func TestAuditNeverPrintsTheKeySplit(t *testing.T) {
	const key = "sk_live_51EchoedBackKeyABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz"
	for _, sep := range []string{"\n", "\r\n  ", "\u200b", "…", " "} {
		for _, at := range []int{1, 20, 60} {
			t.Run(fmt.Sprintf("%q at %d", sep, at), func(t *testing.T) {
				msg, _ := json.Marshal("Invalid API Key provided: " + key[:at] + sep + key[at:])
				auditQuotedBack(t, key, string(msg), func(format, printed string) {
					for i := 0; i+16 <= len(key); i++ {
						if strings.Contains(printed, key[i:i+16]) {
							t.Fatalf("%s: %q of the key was printed:\n%s", format, key[i:i+16], printed)
						}
					}
					mustContain(t, format, printed, "Invalid API Key provided: ")
				})
			})
		}
	}
}

// auditQuotedBack audits one row with key against a server that answers every call with a 400
// whose message is message (JSON, as it is sent: a finding whose detail is the message), in
// text, --json and --csv, and calls check with what each printed, stdout and stderr.
func auditQuotedBack(t *testing.T, key, message string, check func(format, printed string)) {
	t.Helper()
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":%s}}`, message)
	}))
	defer echo.Close()
	f.env[keyEnv] = key
	for _, format := range []string{"text", "--json", "--csv"} {
		args := []string{"--stripe-base-url", echo.URL, "--patience", "1s"}
		if format != "text" {
			args = append(args, format)
		}
		code, out, errs := f.audit(context.Background(), args...)
		if code != exitNegative {
			t.Fatalf("%s: exit %d, want 1\n%s\n%s", format, code, out, errs)
		}
		check(format, out+errs)
	}
}

// TestAuditKeyInTheTable: a row holds the key itself (pasted into the wrong column). The key
// is not in a shape the redaction of Stripe keys recognizes, yet it is not printed: the audit
// hides the exact key it was given from everything it prints, also where --json escapes its
// quote, backslash or angle bracket.
func TestAuditKeyInTheTable(t *testing.T) {
	for _, key := range []string{"sk_Ab1-hunter2-no-known-shape", `sk_Ab1"hunter2\xyzzy<plugh>`} {
		srv := stripetest.NewServer(stripetest.Options{Key: key})
		defer srv.Close()
		f := newAuditFixture(t)
		f.srv, f.env[keyEnv] = srv, key
		f.add(row{local: "paid " + key, amount: 1000, remote: "succeeded"})
		for _, format := range []string{"--json", "--csv", "--grace=10m"} {
			code, out, errs := f.audit(context.Background(), format)
			if code != exitNegative {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			if strings.Contains(out+errs, key) || strings.Contains(out+errs, "hunter2") || !strings.Contains(out+errs, "paid [redacted key]") {
				t.Fatalf("%s %.6s: the key was printed, or the row not shown:\n%s\n%s", format, key, out, errs)
			}
		}
	}
}

func TestAuditCommandLine(t *testing.T) {
	f := newAuditFixture(t)
	for _, tc := range []struct {
		name string
		env  map[string]string // nil: the fixture's
		args []string
		want string
	}{
		{"without --table", nil, []string{"--table", ""}, "--table is required"},
		{"with the key as a flag", nil, []string{"--key", "sk_live_x"}, "the Stripe key is read from $STRIPE_SECRET_KEY only; a flag would land in your shell history"},
		{"with the key as --stripe-key=", nil, []string{"--stripe-key=sk_live_x"}, "--stripe-key: the Stripe key is read from $STRIPE_SECRET_KEY only"},
		{"without a key", map[string]string{}, nil, "$STRIPE_SECRET_KEY is not set"},
		{"with an unknown object", nil, []string{"--object", "charge"}, `--object "charge": want one of payment_intent, subscription, invoice, checkout_session`},
		{"with --money for subscriptions", nil, []string{"--object", "subscription", "--money"}, "--money: a subscription has no amounts"},
		{"with a money column without --money", nil, []string{"--amount-column", "cents"}, "--amount-column is read for payment_intent --money, not for --object payment_intent (add --money"},
		{"with an invoice column for payments", nil, []string{"--amount-due-column", "due"}, "--amount-due-column is read for invoice"},
		{"with a rate of zero", nil, []string{"--rate", "0"}, "--rate 0: want more than 0 and at most 100"},
		{"with a rate above Stripe's limit", nil, []string{"--rate", "1000"}, "--rate 1000"},
		{"with a rate that is not a number", nil, []string{"--rate", "NaN"}, "--rate NaN"},
		{"with --json and --csv", nil, []string{"--json", "--csv"}, "--json and --csv: choose one"},
		{"with a column that is not an identifier", nil, []string{"--state-column", "status; DROP TABLE payments"}, "StateColumn"},
		{"with a typed column that is not an identifier", nil, []string{"--money", "--amount-column", "a\"b"}, "column of struct field Amount"},
		{"with an argument", nil, []string{"payments"}, `unexpected argument "payments"`},
		{"with an unknown flag", nil, []string{"--tabel", "x"}, "flag provided but not defined: -tabel"},
		{"with a bad account", nil, []string{"--stripe-account", "bob"}, `--stripe-account "bob"`},
		{"with a zero batch", nil, []string{"--batch-size", "0"}, "--batch-size 0"},
		{"with two schemas", nil, []string{"--table-schema", "other"}, "--schema and --table-schema name different schemas"},
		{"with a schema-qualified table", nil, []string{"--schema", "", "--table", "billing.payments"}, "--table billing.payments: give the schema apart: --schema billing --table payments"},
		{"with a hostile table", nil, []string{"--table", `a"; drop table x;--`}, `Table "a\"; drop table x;--" is not a plain SQL identifier`},
		{"with a hostile schema", nil, []string{"--schema", `x"; drop table payments;--`}, "is not a plain SQL identifier"},
		{"with a 10 KB table", nil, []string{"--table", strings.Repeat("p", 10<<10)}, "is not a plain SQL identifier"},
		{"with a NUL in a column", nil, []string{"--external-id-column", "stripe_id\x00"}, `ExternalIDColumn "stripe_id\x00" is not a plain SQL identifier`},
		{"with a bidi override in a column", nil, []string{"--created-at-column", "created\u202e"}, "is not a plain SQL identifier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := f.env
			if tc.env != nil {
				f.env = tc.env
			}
			defer func() { f.env = saved }()
			code, out, errs := f.audit(context.Background(), tc.args...)
			if code != exitUsage || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "reconcile audit --help") {
				t.Fatalf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errs)
			}
			if strings.Contains(errs, "reading table") {
				t.Errorf("a usage error after the audit started:\n%s", errs)
			}
			if len(f.srv.Log()) > 0 {
				t.Errorf("Stripe was called")
			}
		})
	}
}

// TestAuditInterrupted cancels the run's context (Ctrl-C) after its first batches: the audit
// prints what it found so far, says it was interrupted, and exits 1 for the drift found, or 3
// when it found none (an audit cut short cannot call the table in sync).
func TestAuditInterrupted(t *testing.T) {
	for _, drift := range []bool{true, false} {
		t.Run(fmt.Sprintf("drift %v", drift), func(t *testing.T) {
			f := newAuditFixture(t)
			first := "paid"
			if drift {
				first = "pending"
			}
			f.add(row{local: first, amount: 1000, remote: "succeeded"})
			for range 20 {
				f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
			}
			f.srv.SetLatency(20 * time.Millisecond)
			opts := leaktest.IgnoreCurrent()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for len(f.srv.Log()) < 3 && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				cancel()
			}()
			code, out, errs := f.audit(ctx, "--batch-size", "1")
			// Nothing the audit started outlives it; the Stripe client's idle keep-alive
			// connections are the process's.
			http.DefaultTransport.(*http.Transport).CloseIdleConnections()
			leaktest.VerifyNone(t, opts)
			want := exitError
			if drift {
				want = exitNegative
				mustContain(t, "stdout", out, "missed_success")
			}
			if code != want {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, want, out, errs)
			}
			mustContain(t, "stdout", out, "interrupted (Ctrl-C): what was found so far")
			if strings.Contains(out, "rows read     21") {
				t.Errorf("the run was not interrupted:\n%s", out)
			}
			noInSync(t, out, errs)
		})
	}
}

// TestAuditGraceZero judges the rows changed a moment ago too.
func TestAuditGraceZero(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	code, out, errs := f.audit(context.Background(), "--grace", "0", "--json")
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	if code != exitNegative || got.InFlight != 0 || got.Verified != 4 || len(got.Findings) != 3 {
		t.Errorf("exit %d, %+v", code, got)
	}
}

// TestAuditFutureUpdatedAt: a row paid here and canceled at Stripe whose updated_at lies a
// decade ahead (a skewed clock, a bad import, a hostile writer) was in flight at every run, so
// the audit said "no drift" and exited 0, whatever --grace. Its time is impossible: the row is
// the invalid_row finding that says so (exit 1), and Stripe is not asked about it.
func TestAuditFutureUpdatedAt(t *testing.T) {
	f := newAuditFixture(t)
	ctx := context.Background()
	ids := f.add(row{local: "paid", amount: 3000, remote: "canceled"}, row{local: "paid", amount: 1000, remote: "succeeded"})
	if _, err := f.pool.Exec(ctx, `UPDATE payments SET updated_at = now() + interval '10 years' WHERE stripe_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	for _, grace := range []string{"10m", "0"} {
		code, out, errs := f.audit(ctx, "--json", "--grace", grace)
		var got auditSummaryJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("--grace %s: %v\n%s\n%s", grace, err, out, errs)
		}
		if code != exitNegative || got.ExitCode != exitNegative || got.Rows != 2 || got.Verified != 1 || got.InFlight != 0 || len(got.Findings) != 1 {
			t.Fatalf("--grace %s: exit %d, %+v; want exit 1, one row verified and one finding", grace, code, got)
		}
		fd := got.Findings[0]
		if fd.Kind != "invalid_row" || fd.RecordID != "1" || fd.ExternalID != ids[0] || fd.Verdict != "needs_review" ||
			!strings.HasPrefix(fd.Detail, "updated_at ") || !strings.Contains(fd.Detail, " UTC is in the future: more than 5m0s ahead of the database's clock") {
			t.Fatalf("--grace %s: finding %+v; want row 1's invalid_row finding saying its updated_at is in the future", grace, fd)
		}
	}
	code, out, errs := f.audit(ctx)
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "invalid_row", "is in the future")
	mustContain(t, "stderr", errs, "Drift found: 1 findings (exit 1)")
	for _, r := range f.srv.Log() {
		if strings.Contains(r.Path, ids[0]) {
			t.Errorf("Stripe was asked about the row with the impossible time: %s %s", r.Method, r.Path)
		}
	}
}

func TestAuditFindsInvoiceDrift(t *testing.T) {
	f := newAuditFixture(t)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `CREATE TABLE invoices (id bigint PRIMARY KEY, stripe_invoice_id text, status text, currency text,
		due bigint, paid bigint, remaining bigint, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	add := func(id int, local string, paid int64, remote stripe.InvoiceStatus, remotePaid int64) {
		f.created = f.created.Add(time.Second)
		inv := f.srv.AddInvoice(stripetest.Invoice{Status: remote, Currency: "eur", AmountDue: 5000, AmountPaid: remotePaid, Created: f.created})
		if _, err := f.pool.Exec(ctx, `INSERT INTO invoices VALUES ($1, $2, $3, 'eur', 5000, $4::bigint, 5000 - $4::bigint, $5, $5)`, id, inv, local, paid, f.created); err != nil {
			t.Fatal(err)
		}
	}
	add(1, "paid", 5000, stripe.InvoiceStatusPaid, 5000) // in sync
	add(2, "open", 0, stripe.InvoiceStatusPaid, 5000)    // paid at Stripe
	add(3, "void", 0, stripe.InvoiceStatusOpen, 0)       // voided here only
	code, out, errs := f.audit(ctx, "--object", "invoice", "--table", "invoices", "--external-id-column", "stripe_invoice_id",
		"--amount-due-column", "due", "--amount-paid-column", "paid", "--amount-remaining-column", "remaining")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "InvoicePolicy", "rows read     3", "verified      3", "missed_payment", "voided_locally_not_externally")
	mustContain(t, "stderr", errs, "Drift found: 2 findings")
}

func TestAuditFindsCheckoutDrift(t *testing.T) {
	f := newAuditFixture(t)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `CREATE TABLE orders (id bigint PRIMARY KEY, session text, status text, payment_status text,
		shipped boolean, currency text, total bigint, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	add := func(id int, status, payment string, shipped bool, remote stripe.CheckoutSessionStatus, remotePayment stripe.CheckoutSessionPaymentStatus) {
		f.created = f.created.Add(time.Second)
		cs := f.srv.AddCheckoutSession(stripetest.CheckoutSession{Status: remote, PaymentStatus: remotePayment, AmountTotal: 2000, Currency: "usd", Created: f.created})
		if _, err := f.pool.Exec(ctx, `INSERT INTO orders VALUES ($1, $2, $3, $4, $5, 'usd', 2000, $6, $6)`, id, cs, status, payment, shipped, f.created); err != nil {
			t.Fatal(err)
		}
	}
	add(1, "complete", "paid", true, stripe.CheckoutSessionStatusComplete, stripe.CheckoutSessionPaymentStatusPaid)   // in sync
	add(2, "open", "unpaid", false, stripe.CheckoutSessionStatusComplete, stripe.CheckoutSessionPaymentStatusPaid)    // paid, not fulfilled
	add(3, "complete", "paid", true, stripe.CheckoutSessionStatusComplete, stripe.CheckoutSessionPaymentStatusUnpaid) // shipped unpaid
	code, out, errs := f.audit(ctx, "--object", "checkout_session", "--table", "orders", "--external-id-column", "session",
		"--fulfilled-column", "shipped", "--amount-total-column", "total")
	if code != exitNegative {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "CheckoutPolicy", "rows read     3", "verified      3")
	mustContain(t, "stderr", errs, "Drift found: 2 findings")
}

// TestAuditMaxFindings keeps the first --max-findings findings and counts the others by kind:
// the exit code and the counts are the whole audit's.
func TestAuditMaxFindings(t *testing.T) {
	f := newAuditFixture(t)
	for range 5 {
		f.add(row{local: "pending", amount: 1000, remote: "succeeded"})
	}
	code, out, errs := f.audit(context.Background(), "--max-findings", "2", "--json")
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	if code != exitNegative || len(got.Findings) != 2 || got.NotListed != 3 || len(got.Kinds) != 1 || got.Kinds[0].Count != 5 {
		t.Errorf("exit %d, %+v", code, got)
	}
	code, out, _ = f.audit(context.Background(), "--max-findings", "0")
	mustContain(t, "stdout", out, "findings      5   the first 0 are listed; 5 more are counted by kind only (--max-findings)")
	if code != exitNegative || strings.Contains(out, "Findings:") {
		t.Errorf("exit %d\n%s", code, out)
	}
}
