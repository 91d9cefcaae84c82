package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// hostile is what the external side, a handler or a person may store: a terminal title, a
// clipboard write, a screen clear, a bell, a line forged after a newline, a DEL, a C1 escape
// (CSI) and a right-to-left override.
const hostile = "\x1b]0;pwned\a\x1b]52;c;cm0gLXJmIH4=\a\x1b[2J\x1b[H" + "looks fine\nFORGED   approved by the CFO\r" + "\x7f\u009b2J\u202e"

// escaped is hostile as text output prints it.
const escaped = `\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[Hlooks fine\nFORGED   approved by the CFO\r\x7f\u009b2J\u202e`

// hostileWorld is a schema whose stored texts are all hostile: a finding's kind, states,
// detail, diffs, resolver and note; a repair command's error; the job's last failure.
func hostileWorld(t *testing.T) (url, schema string, findingID int64) {
	t.Helper()
	ctx := context.Background()
	pool, schema := pgtest.PoolSchema(t)
	if _, err := pool.Exec(ctx, shardtest.PaymentsDDL); err != nil {
		t.Fatal(err)
	}
	tables := pgstore.Tables{Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		t.Fatal(err)
	}
	for i, local := range []string{"paid" + hostile, "pending"} {
		if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES ($1, $2, $3, now() - interval '1 hour')`,
			i+1, "pi_"+string(rune('1'+i)), local); err != nil {
			t.Fatal(err)
		}
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	classify := reconcile.ClassifierFunc[string, string](func(local, external string) reconcile.Decision {
		if local == "pending" {
			return reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed" + hostile, Command: "Apply"}
		}
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "odd" + hostile, Detail: "detail" + hostile,
			Diffs: []reconcile.Diff{{Field: "status" + hostile, Local: "ours" + hostile, External: "theirs" + hostile}}}
	})
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "payments", Source: store, Sink: store,
		Gateway: reconciletest.NewGateway(map[string]string{"pi_1": "canceled" + hostile, "pi_2": "succeeded"}), Classifier: classify, BatchSize: 10}, 3)
	if err := store.RecordFailure(ctx, "payments", errors.New("failure"+hostile)); err != nil {
		t.Fatal(err)
	}
	killCommands(t, pool, tables, "Apply", errors.New("handler"+hostile))
	// The store keeps a kind printable (reconcile.MaxKind), so the finding is found by its
	// prefix; its other texts are stored as they came.
	all, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payments"})
	fs := slices.DeleteFunc(all, func(f reconcile.Finding) bool { return !strings.HasPrefix(f.Kind, "odd") })
	if err != nil || len(fs) != 1 {
		t.Fatalf("the hostile finding: %v, %v", all, err)
	}
	if err := store.ResolveFinding(ctx, fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "eve" + hostile, Note: "note" + hostile}); err != nil {
		t.Fatal(err)
	}
	return pgtest.URL(t), schema, fs[0].ID
}

// Text output prints every stored value escaped: no control character reaches the terminal, and
// no stored newline starts a line.
func TestTextOutputEscapesWhatWasStored(t *testing.T) {
	t.Parallel()
	url, schema, id := hostileWorld(t)
	db := []string{"--database-url", url, "--schema", schema}
	show := []string{"findings", "show", strconv.FormatInt(id, 10)}
	eachPrinting(t, show, db, func(what, out, errOut string) {
		for _, line := range strings.Split(out+errOut, "\n") {
			if strings.ContainsAny(line, "\x1b\a\r") || strings.HasPrefix(line, "FORGED") {
				t.Errorf("%s printed %q", what, line)
			}
		}
		if !strings.Contains(out, escaped) {
			t.Errorf("%s does not show the stored values escaped:\n%s", what, out)
		}
	})
	_, out, _ := runTool(t, append(show, db...)...)
	// (The kind is not among them: the store made it printable when it was recorded.)
	for _, want := range []string{"canceled", "paid", "detail", "status", "ours", "theirs", "eve", "note"} {
		if !strings.Contains(out, want+escaped) {
			t.Errorf("findings show lacks %q escaped:\n%s", want+hostile, out)
		}
	}
	_, out, _ = runTool(t, append([]string{"dead"}, db...)...)
	if !strings.Contains(out, "handler"+escaped) {
		t.Errorf("dead lacks the handler's error escaped:\n%s", out)
	}
}

// --json output is JSON whatever was stored, every value as it was stored, and, as text output,
// sends the terminal no control character: what JSON does not escape itself (DEL, C1, bidi
// controls) is written as a JSON escape.
func TestJSONOutputIsJSONWhateverWasStored(t *testing.T) {
	t.Parallel()
	url, schema, id := hostileWorld(t)
	db := []string{"--database-url", url, "--schema", schema, "--json"}
	show := []string{"findings", "show", strconv.FormatInt(id, 10)}
	eachPrinting(t, show, db, func(what, out, _ string) {
		if !json.Valid([]byte(out)) {
			t.Errorf("%s printed invalid JSON:\n%s", what, out)
		}
		if safe := safetext.Lines(out); safe != out {
			t.Errorf("%s printed characters a terminal acts on:\n%q", what, out)
		}
	})
	_, out, _ := runTool(t, append(show, db...)...)
	var f findingJSON
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("findings show --json: %v\n%s", err, out)
	}
	for _, c := range []struct{ field, got, want string }{
		{"local", f.Local, "paid" + hostile}, {"external", f.External, "canceled" + hostile},
		{"detail", f.Detail, "detail" + hostile}, {"resolved_by", f.ResolvedBy, "eve" + hostile},
		{"resolution_note", f.ResolutionNote, "note" + hostile},
	} {
		if c.got != c.want {
			t.Errorf("findings show --json: %s is %q; want %q, as stored", c.field, c.got, c.want)
		}
	}
}

// eachPrinting runs each command that prints stored values (show among them), with extra
// after its own arguments, and has check look at what it printed; a command that fails (but
// health saying unhealthy) fails t.
func eachPrinting(t *testing.T, show, extra []string, check func(what, out, errOut string)) {
	t.Helper()
	for _, args := range [][]string{
		{"status", "--job", "payments", "--table", "payments"},
		{"health", "--job", "payments", "--table", "payments"},
		{"findings", "list", "--status", "all"},
		show,
		{"dead"},
	} {
		args = append(slices.Clone(args), extra...)
		what := strings.Join(args, " ")
		code, out, errOut := runTool(t, args...)
		if code != exitOK && !(args[0] == "health" && code == exitNegative) {
			t.Fatalf("%s: exit %d\n%s%s", what, code, out, errOut)
		}
		check(what, out, errOut)
	}
}

// connecting lists a command line of every command that connects, each of which would print the
// connection in its error.
var connecting = [][]string{
	{"migrate"},
	{"status", "--job", "payments", "--table", "payments"},
	{"health", "--job", "payments", "--table", "payments"},
	{"findings", "list"},
	{"findings", "show", "1"},
	{"findings", "resolve", "1", "--actor", "alice", "--note", "checked"},
	{"findings", "reopen", "1", "--actor", "alice", "--note", "checked"},
	{"dead"},
	{"redrive", "1", "--actor", "alice"},
}

// unreachable connection strings that hold secrets under several names, in both forms pgx
// takes, and one pgx cannot parse (whose own error quotes it); where each points.
var secretURLs = []struct{ url, shown string }{
	{"postgres://ops:pw-s3cret@127.0.0.1:1/ledger?sslmode=disable&sslpassword=ssl-s3cret", "ops@127.0.0.1:1/ledger"},
	{"host=127.0.0.1 port=1 user=ops dbname=ledger password=pw-s3cret sslpassword='ssl s3cret' sslmode=disable", "ops@127.0.0.1:1/ledger"},
	{"postgres://ops@127.0.0.1:1/ledger?sslpassword=ssl-s3cret&sslmode=bogus", "ops@127.0.0.1:1/ledger"},
}

// checkConnectionError fails the test if a command's error shows more of the connection than
// where it points.
func checkConnectionError(t *testing.T, what, shown string, code int, out, errOut string) {
	t.Helper()
	wantCode(t, what, code, exitError, out, errOut)
	for _, s := range []string{"s3cret", "password", "sslmode", "xxxxx"} {
		// The help that follows the first line shows an example URL, with "password" in it.
		if first, _, _ := strings.Cut(errOut, "\n"); strings.Contains(first, s) {
			t.Errorf("%s: the error shows %q:\n%s", what, s, errOut)
		}
	}
	if strings.Contains(errOut, "s3cret") || !strings.Contains(errOut, " at "+shown+" (") {
		t.Errorf("%s: the error %q; want it to name %s and nothing more", what, errOut, shown)
	}
}

func TestNoCommandPrintsTheConnectionsParameters(t *testing.T) {
	t.Parallel()
	for _, u := range secretURLs {
		for _, args := range connecting {
			args := append(slices.Clone(args), "--database-url", u.url)
			code, out, errOut := runTool(t, args...)
			checkConnectionError(t, strings.Join(args[:len(args)-1], " ")+" --database-url "+u.url, u.shown, code, out, errOut)
		}
	}
}

func TestNoCommandPrintsTheParametersOfDATABASE_URL(t *testing.T) {
	// t.Setenv: not parallel.
	for _, u := range secretURLs {
		t.Setenv("DATABASE_URL", u.url)
		for _, args := range connecting {
			code, out, errOut := runTool(t, args...)
			checkConnectionError(t, "DATABASE_URL="+u.url+" "+strings.Join(args, " "), u.shown, code, out, errOut)
		}
	}
}
