package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
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

// TestAuditBaseURLCredentialsNeverPrinted: a --stripe-base-url with credentials in it (a
// proxy's) is shown without its password, in the first lines and in any error that quotes it.
func TestAuditBaseURLCredentialsNeverPrinted(t *testing.T) {
	const password = "hunter2pw"
	f := newAuditFixture(t)
	f.plantStatusDrift()
	for _, tc := range []struct {
		name, url string
		want      int
	}{
		{"answering", strings.Replace(f.srv.URL(), "http://", "http://proxyuser:"+password+"@", 1), exitNegative},
		{"down", "http://proxyuser:" + password + "@127.0.0.1:1", exitError},
	} {
		for _, format := range []string{"text", "--json", "--csv"} {
			t.Run(tc.name+" "+format, func(t *testing.T) {
				args := []string{"--stripe-base-url", tc.url, "--patience", "1s"}
				if format != "text" {
					args = append(args, format)
				}
				code, out, errs := f.audit(context.Background(), args...)
				if code != tc.want {
					t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.want, out, errs)
				}
				if strings.Contains(out+errs, password) {
					t.Fatalf("the base URL's password was printed:\n%s\n%s", out, errs)
				}
				mustContain(t, "stderr", errs, "proxyuser")
			})
		}
	}
}

// TestAuditBadBaseURL: a --stripe-base-url that cannot be a URL of an API (a typo, no scheme,
// a stray dot after the port) is a wrong command line, said at once, not every row
// unverifiable after retrying for --patience.
func TestAuditBadBaseURL(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	for _, u := range []string{
		f.srv.URL() + ".",
		strings.TrimPrefix(f.srv.URL(), "http://"),
		"ftp://127.0.0.1:21",
		"http://",
		"http://u:s3cretpw@127.0.0.1:99999",
		"http://127.0.0.1:1/\x1b]0;pwned\x07",
	} {
		t.Run(u, func(t *testing.T) {
			code, out, errs := f.audit(context.Background(), "--stripe-base-url", u, "--patience", "1s")
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errs)
			}
			mustContain(t, "stderr", errs, "--stripe-base-url")
			if strings.Contains(errs, "s3cretpw") || strings.Contains(errs, "\x1b") {
				t.Errorf("stderr quotes the password or a control character:\n%q", errs)
			}
		})
	}
	if n := len(f.srv.Log()); n > 0 {
		t.Errorf("Stripe was called %d times", n)
	}
}

// TestAuditSaysWhyRowsAreUnverifiable: when Stripe cannot be asked, the report says what the
// calls failed with (once, the first failure), not only how many rows were left unverified.
func TestAuditSaysWhyRowsAreUnverifiable(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"}, row{local: "paid", amount: 1000, remote: "succeeded"})
	f.srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Status: 503})
	f.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: 503})
	code, out, errs := f.audit(context.Background(), "--patience", "1s")
	if code != exitError {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stdout", out, "unverifiable  2", "503")
	code, out, errs = f.audit(context.Background(), "--patience", "1s", "--json")
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitError {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if !strings.Contains(got.FirstFailure, "503") {
		t.Errorf("first_failure %q lacks the failure", got.FirstFailure)
	}
}

// TestAuditFirstFailureOnlyWhenRowsWentUnverified: a call failed (the list, answered 400)
// but every row was verified after all, one at a time. The text report says nothing of that
// failure, and --json does not either: first_failure is why rows are unverifiable.
func TestAuditFirstFailureOnlyWhenRowsWentUnverified(t *testing.T) {
	f := newAuditFixture(t)
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"}, row{local: "paid", amount: 1000, remote: "succeeded"})
	f.srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Status: 400, Message: "the list refused"})
	code, out, errs := f.audit(context.Background())
	if code != exitOK || strings.Contains(out+errs, "the list refused") {
		t.Fatalf("exit %d, want 0 and no word of the list's failure\n%s\n%s", code, out, errs)
	}
	code, out, errs = f.audit(context.Background(), "--json")
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if got.Unverifiable != 0 || got.FirstFailure != "" {
		t.Errorf("unverifiable %d, first_failure %q; want 0 and none", got.Unverifiable, got.FirstFailure)
	}
}

// TestAuditKeyWithSurroundingWhitespace: a key read from a file or a .env written on Windows
// keeps a trailing newline or CR. The audit takes the key without it, rather than send a
// header Go refuses and call every row unverifiable; a key with whitespace inside is refused.
func TestAuditKeyWithSurroundingWhitespace(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	key := f.srv.Key()
	for _, k := range []string{key + "\n", key + "\r\n", " " + key + "\t"} {
		f.env[keyEnv] = k
		code, out, errs := f.audit(context.Background(), "--patience", "1s")
		if code != exitNegative {
			t.Errorf("key %q: exit %d, want 1\n%s\n%s", k, code, out, errs)
		}
	}
	f.env[keyEnv] = key[:6] + " " + key[6:]
	code, out, errs := f.audit(context.Background(), "--patience", "1s")
	if code != exitUsage || strings.Contains(out+errs, key[6:]) {
		t.Errorf("a key with a space inside: exit %d, want 2, key not printed\n%s\n%s", code, out, errs)
	}
}

// failingWriter fails every write, as standard output does on a full disk (> /dev/full) or
// when it was closed.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) {
	return 0, errors.New("write /dev/stdout: no space left on device")
}

// TestAuditReportNotWritten: "reconcile audit --csv > drift.csv" on a full disk. The report is
// lost, so the exit code may not be the one of a written report (1, drift found: the operator
// would open an empty file); it is 3, and standard error says why.
func TestAuditReportNotWritten(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	for _, format := range []string{"text", "--json", "--csv"} {
		t.Run(format, func(t *testing.T) {
			args := []string{"--database-url", f.url, "--schema", f.schema, "--table", "payments", "--external-id-column", "stripe_id",
				"--stripe-base-url", f.srv.URL(), "--rate", "100"}
			if format != "text" {
				args = append(args, format)
			}
			var errb bytes.Buffer
			e := &env{stdout: failingWriter{}, stderr: &errb, getenv: func(k string) string { return f.env[k] }}
			code := runAudit(context.Background(), e, args)
			if code != exitError {
				t.Errorf("exit %d, want 3\n%s", code, errb.String())
			}
			mustContain(t, "stderr", errb.String(), "the report could not be written", "no space left on device")
			if strings.Contains(errb.String(), "(exit 1)") {
				t.Errorf("stderr announces exit 1:\n%s", errb.String())
			}
		})
	}
}

// TestProgressLineFitsTheTerminal: at a million rows the progress line is longer than a
// terminal of 80 columns; on a terminal it keeps what fits, most telling first (rows, ETA,
// findings), and never wraps; elsewhere it is whole.
func TestProgressLineFitsTheTerminal(t *testing.T) {
	start := time.Now()
	tl := newTally(start, 10)
	tl.rows, tl.verified, tl.found, tl.calls = 123_456, 123_000, 12, 1_234
	for _, tc := range []struct {
		tty  bool
		cols int
		want []string
		not  []string
	}{
		{false, 0, []string{"123,456 rows read of ~1,000,000", "ETA 1h", "12 findings", "123,000 verified", "1,234 Stripe calls"}, nil},
		{true, 80, []string{"123,456 rows read of ~1,000,000", "ETA 1h", "12 findings"}, []string{"Stripe calls"}},
		{true, 30, []string{"123,456 rows read of ~1,000,…"}, []string{"ETA"}},
	} {
		var b bytes.Buffer
		p := newProgress(&b, tc.tty, tc.cols, tl, 1_000_000)
		p.draw(start.Add(10 * time.Minute))
		line := strings.TrimPrefix(strings.TrimSuffix(b.String(), "\n"), "\r\x1b[K")
		if tc.tty && len([]rune(line)) >= tc.cols {
			t.Errorf("%d columns: a line of %d: %q", tc.cols, len([]rune(line)), line)
		}
		mustContain(t, fmt.Sprintf("%d columns", tc.cols), line, tc.want...)
		for _, n := range tc.not {
			if strings.Contains(line, n) {
				t.Errorf("%d columns: %q holds %q", tc.cols, line, n)
			}
		}
	}
}

// TestAuditStatusMapForSubscriptions: a subscriptions table that keeps its own status words
// (ACTIVE, cancelled) is read through --status-map into Stripe's, as a payments table is into
// the payment policy's: without it every row would be an unexpected pair.
func TestAuditStatusMapForSubscriptions(t *testing.T) {
	f := newAuditFixture(t)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `CREATE TABLE subscriptions (
		id bigint PRIMARY KEY, stripe_subscription_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for i, r := range []struct {
		local  string
		remote stripe.SubscriptionStatus
	}{
		{"ACTIVE", stripe.SubscriptionStatusActive},      // in sync
		{"ACTIVE", stripe.SubscriptionStatusCanceled},    // canceled at Stripe
		{"cancelled", stripe.SubscriptionStatusActive},   // ended here, still billed
		{"cancelled", stripe.SubscriptionStatusCanceled}, // in sync
	} {
		f.created = f.created.Add(time.Second)
		id := f.srv.AddSubscription(stripetest.Subscription{Status: r.remote, Created: f.created})
		if _, err := f.pool.Exec(ctx, `INSERT INTO subscriptions VALUES ($1, $2, $3, $4, $4)`, i+1, id, r.local, f.created); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--object", "subscription", "--table", "subscriptions", "--external-id-column", "stripe_subscription_id", "--json"}
	code, out, errs := f.audit(ctx, append(args, "--status-map", "ACTIVE=active,cancelled=canceled")...)
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitNegative {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	kinds := map[string]int{}
	for _, k := range got.Kinds {
		kinds[k.Kind] = k.Count
	}
	if len(kinds) != 2 || kinds["subscription_canceled_externally"] != 1 || kinds["billing_without_access"] != 1 {
		t.Errorf("kinds %v, want subscription_canceled_externally and billing_without_access", kinds)
	}
	for _, fd := range got.Findings {
		if fd.Local != "ACTIVE" && fd.Local != "cancelled" {
			t.Errorf("a finding records %q, not the table's own status", fd.Local)
		}
	}
	// The map's targets are the object's statuses in Stripe's words.
	code, _, errs = f.audit(ctx, append(args, "--status-map", "ACTIVE=paid")...)
	if code != exitUsage || !strings.Contains(errs, "incomplete, incomplete_expired, trialing, active, past_due, canceled, unpaid, paused") {
		t.Errorf("a payment status for a subscription: exit %d\n%s", code, errs)
	}
}

// TestAuditPatienceBoundsRetryAfter: Stripe (or a proxy) answers 429 with Retry-After: 3600.
// The audit does not sleep the hour before seeing that --patience ran out: it gives up after
// --patience and says so. (The test's deadline only catches a hang.)
func TestAuditPatienceBoundsRetryAfter(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	for _, r := range []stripetest.Route{stripetest.ListPaymentIntents, stripetest.RetrievePaymentIntent} {
		f.srv.Inject(r, stripetest.Fault{Status: 429, Header: http.Header{"Retry-After": {"3600"}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, out, errs := f.audit(ctx, "--patience", "1s")
	if code != exitError || ctx.Err() != nil {
		t.Fatalf("exit %d (context: %v), want 3\n%s\n%s", code, ctx.Err(), out, errs)
	}
	mustContain(t, "stdout", out, "stopped: Stripe rate limited every call for 1s (--patience)")
}

// TestAuditIDsThatCannotBeAsked: rows whose external id is NULL, empty, of another object
// (ch_...), or names no object at Stripe. None is asked about as if valid or counted in sync:
// the first three are invalid_external_id, the last missing_externally, and the rest of the
// table is audited.
func TestAuditIDsThatCannotBeAsked(t *testing.T) {
	f := newAuditFixture(t)
	ctx := context.Background()
	for range 4 {
		f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	}
	f.add(row{local: "paid", amount: 1000}) // pi_madeup...: no such intent
	f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	for id, v := range map[int]any{1: nil, 2: "", 3: "ch_3MmlLrLkdIwHu7ix0snN0B15"} {
		if _, err := f.pool.Exec(ctx, `UPDATE payments SET stripe_id = $1 WHERE id = $2`, v, id); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := f.audit(ctx, "--json")
	var got auditSummaryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitNegative {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	byRecord := map[string]string{}
	for _, fd := range got.Findings {
		byRecord[fd.RecordID] = fd.Kind
	}
	want := map[string]string{"1": "invalid_external_id", "2": "invalid_external_id", "3": "invalid_external_id", "5": "missing_externally"}
	if fmt.Sprint(byRecord) != fmt.Sprint(want) || got.Rows != 6 || !got.Complete {
		t.Errorf("findings %v, want %v; %+v", byRecord, want, got)
	}
	for _, r := range f.srv.Log() {
		if strings.Contains(r.Path, "ch_") {
			t.Errorf("Stripe was asked about a charge id as an intent: %s", r.Path)
		}
	}
}

// TestAuditHostileStripeAnswers: what the server says reaches the report (an error's message
// as the first failure or the failure that stopped the run, an object's status as Stripe's
// state), and a hostile server or proxy says escape sequences, OSC 8 links, BEL, CR, bidi
// overrides. None reaches the terminal raw, in any format, and the CSV has no formula cell.
func TestAuditHostileStripeAnswers(t *testing.T) {
	const evil = "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07" + hostile + "=HYPERLINK(\"http://evil\")"
	jsonEvil, _ := json.Marshal(evil)
	for _, answer := range []string{"error 500", "error 401", "status"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch answer {
			case "error 500", "error 401":
				code := http.StatusInternalServerError
				if answer == "error 401" {
					code = http.StatusUnauthorized
				}
				w.WriteHeader(code)
				fmt.Fprintf(w, `{"error":{"type":"api_error","message":%s}}`, jsonEvil)
			default:
				id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
				if strings.HasPrefix(r.URL.Path, "/v1/payment_intents") && r.URL.Path != "/v1/payment_intents" {
					fmt.Fprintf(w, `{"id":%q,"object":"payment_intent","status":%s,"amount":1000,"currency":"usd","created":1}`, id, jsonEvil)
					return
				}
				w.WriteHeader(http.StatusInternalServerError) // the list fails: each row is retrieved
				fmt.Fprint(w, `{"error":{"type":"api_error","message":"down"}}`)
			}
		}))
		for _, format := range []string{"text", "--json", "--csv"} {
			t.Run(answer+" "+format, func(t *testing.T) {
				f := newAuditFixture(t)
				f.add(row{local: "paid", amount: 1000, remote: "succeeded"}, row{local: "pending", amount: 1000, remote: "succeeded"})
				args := []string{"--stripe-base-url", srv.URL, "--patience", "1s"}
				if format != "text" {
					args = append(args, format)
				}
				code, out, errs := f.audit(context.Background(), args...)
				if code == exitOK || code == exitUsage {
					t.Fatalf("exit %d\n%s\n%s", code, out, errs)
				}
				for name, s := range map[string]string{"stdout": out, "stderr": errs} {
					for _, r := range s {
						if r != '\n' && safetext.Line(string(r)) != string(r) {
							t.Fatalf("%s holds the raw control %U:\n%q", name, r, s)
						}
					}
				}
				if !strings.Contains(out+errs, "evil.example") {
					t.Errorf("the server's words are not shown (escaped):\n%s\n%s", out, errs)
				}
				if format == "--csv" {
					recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
					if err != nil {
						t.Fatal(err)
					}
					for _, rec := range recs[1:] {
						for _, c := range rec {
							if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
								t.Errorf("a formula cell: %q", c)
							}
						}
					}
				}
			})
		}
		srv.Close()
	}
}

// TestAuditLiveKeyNotSentInClear: a live key is not sent over plain http to another machine
// (a typo for https, a proxy URL copied without its s): exit 2, nothing sent. Test keys may
// go to a stripe-mock container over http, and any key to this machine.
func TestAuditLiveKeyNotSentInClear(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	for _, tc := range []struct {
		key, url string
		refused  bool
	}{
		{"sk_live_51AbcDefGhiJklMnoPqr", "http://stripe-proxy.internal:8080", true},
		{"rk_live_51AbcDefGhiJklMnoPqr", "http://10.0.0.7", true},
		{"sk_test_51AbcDefGhiJklMnoPqr", "http://stripe-mock:12111", false},
		{"sk_live_51AbcDefGhiJklMnoPqr", "http://127.0.0.1:1", false},
		{"sk_live_51AbcDefGhiJklMnoPqr", "http://localhost:1", false},
		{"sk_live_51AbcDefGhiJklMnoPqr", "http://[::1]:1", false},
	} {
		f.env[keyEnv] = tc.key
		code, out, errs := f.audit(context.Background(), "--stripe-base-url", tc.url, "--patience", "1ms")
		if refused := code == exitUsage && strings.Contains(errs, "https"); refused != tc.refused {
			t.Errorf("%.8s to %s: exit %d, refused %v, want %v\n%s\n%s", tc.key, tc.url, code, refused, tc.refused, out, errs)
		}
	}
}

// TestAuditUnknownConnectedAccount: --stripe-account names an account the key cannot reach
// (a typo, or one that was disconnected). Stripe answers 403 quoting the key; the audit stops
// at once with exit 3 and Stripe's explanation, said once, the key redacted.
func TestAuditUnknownConnectedAccount(t *testing.T) {
	f := newAuditFixture(t)
	f.plantStatusDrift()
	code, out, errs := f.audit(context.Background(), "--stripe-account", "acct_1NoSuchAccount0000")
	if code != exitError {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
	}
	mustContain(t, "stderr", errs, "does not have access to account 'acct_1NoSuchAccount0000'", "[redacted key]")
	if n := strings.Count(out+errs, "does not have access"); n != 1 || strings.Contains(out+errs, f.srv.Key()) {
		t.Errorf("said %d times, or the key printed:\n%s\n%s", n, out, errs)
	}
}
