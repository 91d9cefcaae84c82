package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// leakedKey is what a careless repair handler put in its error: the dead commands and the
// findings' histories hold it, and the tool must not print it.
const leakedKey = "sk_live_51HleakedKeyABCDEFGHIJ"

// world is a schema with a payments table, the reconciler's tables, and one completed cycle of
// job "payments" over payments 1..5: 1–2 missed successes (Repairable, each with an
// ApplyPaymentSucceeded command, which then went dead with leakedKey in its error), 3–4 paid
// locally but canceled at Stripe (NeedsReview paid_locally_not_externally), 5 in sync.
type world struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
	url    string
	store  *pgstore.Store[string]
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	pool, schema := pgtest.PoolSchema(t)
	w := &world{t: t, pool: pool, schema: schema, url: pgtest.URL(t)}
	if _, err := pool.Exec(ctx, shardtest.PaymentsDDL); err != nil {
		t.Fatal(err)
	}
	tables := pgstore.Tables{Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{}
	for i := 1; i <= 5; i++ {
		local, remote := "paid", "succeeded"
		switch {
		case i <= 2:
			local = "pending"
		case i <= 4:
			remote = "canceled"
		}
		if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES ($1, $2, $3, now() - interval '1 hour')`,
			i, fmt.Sprintf("pi_%d", i), local); err != nil {
			t.Fatal(err)
		}
		ext[fmt.Sprintf("pi_%d", i)] = remote
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	w.store = store
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "payments", Source: store, Sink: store,
		Gateway: reconciletest.NewGateway(ext), Classifier: reconciletest.Classifier(), BatchSize: 10}, 3)

	killCommands(t, pool, tables, "ApplyPaymentSucceeded", errors.New("stripe refused the key "+leakedKey))
	// pgoutbox stores a handler's error with keys redacted; rows written before it did (or by a
	// host's own SQL) may still hold one, and the tool must not show it: put the key back.
	if _, err := pool.Exec(ctx, `UPDATE reconcile_outbox SET last_error = replace(last_error, $1, $2),
		errors = replace(errors::text, $1, $2)::jsonb WHERE status = 'dead'`, redact.Mask, leakedKey); err != nil {
		t.Fatal(err)
	}
	var leaked int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_outbox WHERE status = 'dead' AND last_error LIKE '%'||$1||'%'`, leakedKey).Scan(&leaked); err != nil || leaked != 2 {
		t.Fatalf("dead commands holding the key: %d, %v; want 2 (the world is not what the tests expect)", leaked, err)
	}
	return w
}

// killCommands makes every queued command of that name dead, its handler failing with err.
func killCommands(t *testing.T, pool *pgxpool.Pool, tables pgstore.Tables, name string, err error) {
	t.Helper()
	d, derr := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: tables, Workers: 1})
	if derr != nil {
		t.Fatal(derr)
	}
	if err := d.Handle(name, func(context.Context, pgx.Tx, pgoutbox.Delivery) error { return pgoutbox.Permanent(err) }); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if n, err := d.Work(context.Background()); err != nil {
			t.Fatal(err)
		} else if n == 0 {
			break
		}
	}
}

// run runs the tool against the world's database and schema.
func (w *world) run(args ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	return runTool(w.t, append(args, "--database-url", w.url, "--schema", w.schema)...)
}

// runTool runs the tool in-process with a clean environment.
func runTool(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// findingIDs returns the ids of the job's findings of kind, open or resolved, ascending.
func (w *world) findingIDs(kind string) []int64 {
	w.t.Helper()
	fs, err := w.store.ListFindings(context.Background(), reconcile.FindingQuery{Kind: kind, State: reconcile.FindingsAll})
	if err != nil {
		w.t.Fatal(err)
	}
	var ids []int64
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

func (w *world) finding(id int64) reconcile.FindingDetail {
	w.t.Helper()
	d, err := w.store.Finding(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

func wantCode(t *testing.T, what string, code, want int, stdout, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, code, want, stdout, stderr)
	}
}

func TestMigrateCreatesTheTablesOnceAndSaysSo(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	args := []string{"migrate", "--database-url", pgtest.URL(t), "--schema", schema, "--prefix", "recon_"}
	code, out, errOut := runTool(t, args...)
	wantCode(t, "migrate", code, exitOK, out, errOut)
	if !strings.Contains(out, "applied version 1, 2, 3") {
		t.Errorf("migrate said %q; want the versions it applied", out)
	}
	var exists bool
	if err := pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", schema+".recon_findings").Scan(&exists); err != nil || !exists {
		t.Fatalf("recon_findings in %s: %v, %v; want created", schema, exists, err)
	}
	code, out, errOut = runTool(t, args...)
	wantCode(t, "migrate again", code, exitOK, out, errOut)
	if !strings.Contains(out, "nothing to apply") {
		t.Errorf("migrate again said %q; want nothing to apply", out)
	}
}

func TestMigrateSQLIsWhatAHostsOwnToolCanApply(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	// No database is named: printing the SQL does not connect.
	code, out, errOut := runTool(t, "migrate", "sql", "--schema", schema, "--prefix", "host_")
	wantCode(t, "migrate sql", code, exitOK, out, errOut)
	if !strings.Contains(out, `CREATE TABLE "`+schema+`"."host_findings"`) {
		t.Fatalf("migrate sql printed no findings table for the schema and prefix:\n%s", out)
	}
	files, err := pgstore.Migrations(pgstore.Tables{Schema: schema, Prefix: "host_"})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := fs.Glob(files, "*.sql")
	for _, n := range names {
		if !strings.Contains(out, "-- reconcile migration "+n) {
			t.Errorf("migrate sql printed no %s", n)
		}
	}
	if _, err := pool.Exec(context.Background(), out); err != nil {
		t.Fatalf("the printed SQL does not apply: %v", err)
	}
	code, printed, errOut := runTool(t, "migrate", "--print", "--schema", schema, "--prefix", "host_")
	wantCode(t, "migrate --print", code, exitOK, printed, errOut)
	if printed != out {
		t.Error("migrate --print differs from migrate sql")
	}
	code, after, errOut := runTool(t, "migrate", "sql", "--after", "6")
	wantCode(t, "migrate sql --after 6", code, exitOK, after, errOut)
	if !strings.Contains(after, "007_") || strings.Contains(after, "006_") || strings.Contains(after, "001_") {
		t.Errorf("migrate sql --after 6 printed:\n%s\nwant the migrations after version 6 only", after)
	}
}

func TestStatusPrintsTheJobsFigures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	code, out, errOut := w.run("status", "--job", "payments", "--table", "payments")
	wantCode(t, "status", code, exitOK, out, errOut)
	for _, want := range []string{"job payments", "rows               5", "1 completed", "open findings      4", "missed_success               2", "paid_locally_not_externally"} {
		if !strings.Contains(out, want) {
			t.Errorf("status text lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = w.run("status", "--json", "--job", "payments", "--table", "payments")
	wantCode(t, "status --json", code, exitOK, out, errOut)
	var st reconcile.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Job != "payments" || st.Rows != 5 || st.CyclesCompleted != 1 || st.OpenFindings["missed_success"] != 2 || st.OpenFindings["paid_locally_not_externally"] != 2 {
		t.Errorf("status --json = %+v; want 5 rows, 1 cycle, 2+2 open findings", st)
	}
	// --table-schema keeps the service's table apart from the reconciler's: an empty payments
	// table elsewhere has no rows.
	otherPool, other := pgtest.PoolSchema(t)
	if _, err := otherPool.Exec(context.Background(), shardtest.PaymentsDDL); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = w.run("status", "--json", "--job", "payments", "--table", "payments", "--table-schema", other)
	wantCode(t, "status --table-schema", code, exitOK, out, errOut)
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Rows != 0 || st.CyclesCompleted != 1 {
		t.Errorf("status of the empty table in %s = %+v, %v; want 0 rows and the job's 1 cycle", other, st, err)
	}
	code, out, errOut = w.run("status", "--job", "payments", "--table", "no_such_table")
	wantCode(t, "status of a missing table", code, exitError, out, errOut)
	if !strings.Contains(errOut, "no_such_table") {
		t.Errorf("status of a missing table said %q; want the table named", errOut)
	}
}

func TestHealthExitsZeroWhenHealthyAndOneWhenNot(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	code, out, errOut := w.run("health", "--job", "payments", "--table", "payments")
	wantCode(t, "health of a job that just completed a cycle", code, exitOK, out, errOut)
	if !strings.HasPrefix(out, "payments: OK") || !strings.Contains(out, "CHECK") || !strings.Contains(out, "lag") {
		t.Errorf("health text:\n%s\nwant the verdict and the checks", out)
	}
	// A job that never ran is unhealthy, whatever the clock says.
	code, out, errOut = w.run("health", "--job", "never-ran", "--table", "payments")
	wantCode(t, "health of a job that never ran", code, exitNegative, out, errOut)
	if !strings.Contains(out, "never-ran: FAILING") || !strings.Contains(out, "FAIL") || !strings.Contains(out, "never run a batch") {
		t.Errorf("unhealthy text:\n%s\nwant FAILING with the reason", out)
	}
	code, out, errOut = w.run("health", "--json", "--job", "never-ran", "--table", "payments")
	wantCode(t, "health --json", code, exitNegative, out, errOut)
	var h reconcile.Health
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("health --json: %v\n%s", err, out)
	}
	if h.OK || h.Job != "never-ran" || len(h.Reasons()) == 0 {
		t.Errorf("health --json = %+v; want not OK with reasons", h)
	}
}

func TestFindingsListFiltersWithoutTheServicesTable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	code, out, errOut := w.run("findings", "list", "--job", "payments")
	wantCode(t, "findings list", code, exitOK, out, errOut)
	if n := strings.Count(out, "\n"); n != 5 {
		t.Errorf("findings list printed %d lines; want a header and 4 findings:\n%s", n, out)
	}
	for _, want := range []string{"ID", "missed_success", "pi_1", "pi_4", "open"} {
		if !strings.Contains(out, want) {
			t.Errorf("findings list lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = w.run("findings", "list", "--kind", "missed_success", "--json")
	wantCode(t, "findings list --kind --json", code, exitOK, out, errOut)
	var fs []findingJSON
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		t.Fatalf("findings list --json: %v\n%s", err, out)
	}
	if len(fs) != 2 || fs[0].Kind != "missed_success" || fs[0].ExternalID != "pi_1" || fs[1].ExternalID != "pi_2" {
		t.Errorf("findings list --kind missed_success = %+v; want pi_1 and pi_2", fs)
	}

	code, out, errOut = w.run("findings", "list", "--search", "pi_3", "--json")
	wantCode(t, "findings list --search", code, exitOK, out, errOut)
	if !strings.Contains(out, `"record_id": "3"`) || !strings.Contains(out, `"external_id": "pi_3"`) {
		t.Errorf("findings list --json names its fields in snake_case as the health JSON does:\n%s", out)
	}
	if err := json.Unmarshal([]byte(out), &fs); err != nil || len(fs) != 1 || fs[0].RecordID != "3" {
		t.Errorf("findings list --search pi_3 = %+v, %v; want the finding of payment 3", fs, err)
	}

	code, out, errOut = w.run("findings", "list", "--limit", "1")
	wantCode(t, "findings list --limit 1", code, exitOK, out, errOut)
	first := w.findingIDs("missed_success")[0]
	if strings.Count(out, "\n") != 2 || !strings.Contains(errOut, fmt.Sprintf("--after %d", first)) {
		t.Errorf("findings list --limit 1: stdout\n%s\nstderr %q; want one finding and how to read on", out, errOut)
	}

	// One finding open for two days: --older-than 24h lists it alone.
	old := w.findingIDs("paid_locally_not_externally")[1]
	if _, err := w.pool.Exec(context.Background(), "UPDATE reconcile_findings SET detected_at = now() - interval '2 days' WHERE id = $1", old); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = w.run("findings", "list", "--older-than", "24h", "--json")
	wantCode(t, "findings list --older-than", code, exitOK, out, errOut)
	if err := json.Unmarshal([]byte(out), &fs); err != nil || len(fs) != 1 || fs[0].ID != old {
		t.Errorf("findings list --older-than 24h = %+v, %v; want finding %d alone", fs, err, old)
	}

	code, out, errOut = w.run("findings", "list", "--status", "resolved", "--json")
	wantCode(t, "findings list --status resolved", code, exitOK, out, errOut)
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("resolved findings before any resolution: %s; want []", out)
	}

	code, out, errOut = w.run("findings", "list", "--job", "other-job")
	wantCode(t, "findings list of a job with none", code, exitOK, out, errOut)
	if out != "" || !strings.Contains(errOut, "no findings") {
		t.Errorf("findings list of a job with none: stdout %q, stderr %q", out, errOut)
	}
}

func TestFindingsShowPrintsTheHistoryWithoutTheLeakedKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.findingIDs("missed_success")[0]
	if d := w.finding(id); !slices.ContainsFunc(d.History, func(e reconcile.FindingEvent) bool { return strings.Contains(e.Error, leakedKey) }) {
		t.Fatalf("finding %d's history %+v does not hold the key; the test would prove nothing", id, d.History)
	}
	code, out, errOut := w.run("findings", "show", fmt.Sprint(id))
	wantCode(t, "findings show", code, exitOK, out, errOut)
	for _, want := range []string{fmt.Sprintf("finding %d: missed_success, open", id), "pi_1", "ApplyPaymentSucceeded", "detected", "command dead", "[redacted key]"} {
		if !strings.Contains(out, want) {
			t.Errorf("findings show lacks %q:\n%s", want, out)
		}
	}
	code, js, errOut := w.run("findings", "show", "--json", fmt.Sprint(id))
	wantCode(t, "findings show --json", code, exitOK, js, errOut)
	var d findingJSON
	if err := json.Unmarshal([]byte(js), &d); err != nil || d.ID != id || !d.Open || d.ExternalID != "pi_1" || len(d.History) < 2 || d.History[0].Action != "detected" {
		t.Errorf("findings show --json = %+v, %v", d, err)
	}
	for _, printed := range []string{out, js} {
		if strings.Contains(printed, leakedKey) || strings.Contains(printed, "sk_live") {
			t.Errorf("findings show printed the key:\n%s", printed)
		}
	}
	code, out, errOut = w.run("findings", "show", "999999")
	wantCode(t, "findings show of a missing finding", code, exitNegative, out, errOut)
	if !strings.Contains(errOut, "no finding 999999") {
		t.Errorf("findings show of a missing finding said %q", errOut)
	}
}

func TestResolveAndReopenNeedAnActorAndANote(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.findingIDs("paid_locally_not_externally")[0]
	sid := fmt.Sprint(id)

	for _, args := range [][]string{
		{"findings", "resolve", sid, "--actor", "alice"},
		{"findings", "resolve", sid, "--actor", "alice", "--note", "   "},
		{"findings", "resolve", sid, "--note", "refunded by hand"},
		{"findings", "resolve", "--actor", "alice", "--note", "refunded by hand"},
		{"findings", "reopen", sid, "--actor", "alice"},
	} {
		code, out, errOut := w.run(args...)
		wantCode(t, strings.Join(args, " "), code, exitUsage, out, errOut)
	}
	if d := w.finding(id); !d.Open() {
		t.Fatalf("a refused resolve changed finding %d: %+v", id, d.Finding)
	}

	code, out, errOut := w.run("findings", "resolve", sid, "--as", "accepted", "--actor", "alice", "--note", "refunded by hand")
	wantCode(t, "resolve", code, exitOK, out, errOut)
	if d := w.finding(id); d.Open() || d.Resolution != "accepted" || d.ResolvedBy != "alice" || d.ResolutionNote != "refunded by hand" {
		t.Fatalf("after resolve: %+v", d.Finding)
	}
	code, out, errOut = w.run("findings", "resolve", sid, "--actor", "bob", "--note", "again")
	wantCode(t, "resolving a resolved finding", code, exitNegative, out, errOut)
	if !strings.Contains(errOut, "resolved already") {
		t.Errorf("resolving a resolved finding said %q", errOut)
	}
	code, out, errOut = w.run("findings", "list", "--status", "resolved")
	wantCode(t, "findings list --status resolved", code, exitOK, out, errOut)
	if !strings.Contains(out, "accepted by alice") {
		t.Errorf("resolved findings:\n%s\nwant the resolution and its actor", out)
	}

	code, out, errOut = w.run("findings", "reopen", sid, "--actor", "carol", "--note", "the refund bounced")
	wantCode(t, "reopen", code, exitOK, out, errOut)
	d := w.finding(id)
	last := d.History[len(d.History)-1]
	if !d.Open() || last.Action != reconcile.ActionReopened || last.Actor != "carol" || last.Note != "the refund bounced" {
		t.Fatalf("after reopen: %+v, last event %+v", d.Finding, last)
	}
	code, out, errOut = w.run("findings", "reopen", sid, "--actor", "carol", "--note", "again")
	wantCode(t, "reopening an open finding", code, exitNegative, out, errOut)

	// Several at once: the missing one is reported, the others are still resolved.
	other := w.findingIDs("paid_locally_not_externally")[1]
	code, out, errOut = w.run("findings", "resolve", sid, "999999", fmt.Sprint(other), "--actor", "dave", "--note", "batch")
	wantCode(t, "resolve with a missing id among others", code, exitNegative, out, errOut)
	if w.finding(id).Open() || w.finding(other).Open() || !strings.Contains(errOut, "no finding 999999") {
		t.Errorf("resolve of %d, 999999, %d: stderr %q; want both real ones resolved and the missing one named", id, other, errOut)
	}
}

func TestDeadListsTheCommandsAndRedriveQueuesThemAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	code, out, errOut := w.run("dead")
	wantCode(t, "dead", code, exitOK, out, errOut)
	if strings.Count(out, "ApplyPaymentSucceeded") != 2 || !strings.Contains(out, "[redacted key]") {
		t.Errorf("dead:\n%s\nwant both commands with their errors redacted", out)
	}
	code, js, errOut := w.run("dead", "--json", "--command", "ApplyPaymentSucceeded")
	wantCode(t, "dead --json", code, exitOK, js, errOut)
	var dead []struct {
		ID        int64            `json:"id"`
		Name      string           `json:"name"`
		FindingID int64            `json:"finding_id"`
		Errors    []map[string]any `json:"errors"`
	}
	if err := json.Unmarshal([]byte(js), &dead); err != nil || len(dead) != 2 || dead[0].FindingID == 0 || len(dead[0].Errors) == 0 {
		t.Fatalf("dead --json = %+v, %v\n%s", dead, err, js)
	}
	for _, printed := range []string{out, js} {
		if strings.Contains(printed, leakedKey) || strings.Contains(printed, "sk_live") {
			t.Errorf("dead printed the key:\n%s", printed)
		}
	}
	code, out, errOut = w.run("dead", "--command", "NoSuchCommand", "--json")
	wantCode(t, "dead of another name", code, exitOK, out, errOut)
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("dead --command NoSuchCommand = %s; want []", out)
	}

	first := fmt.Sprint(dead[0].ID)
	code, out, errOut = w.run("redrive", first)
	wantCode(t, "redrive without --actor", code, exitUsage, out, errOut)
	code, out, errOut = w.run("redrive", "--actor", "ops")
	wantCode(t, "redrive of nothing", code, exitUsage, out, errOut)

	code, out, errOut = w.run("redrive", first, "--actor", "ops")
	wantCode(t, "redrive", code, exitOK, out, errOut)
	var status string
	if err := w.pool.QueryRow(context.Background(), "SELECT status FROM reconcile_outbox WHERE id = $1", dead[0].ID).Scan(&status); err != nil || status != "pending" {
		t.Fatalf("command %d after redrive: %q, %v; want pending", dead[0].ID, status, err)
	}
	if d := w.finding(dead[0].FindingID); !slices.ContainsFunc(d.History, func(e reconcile.FindingEvent) bool {
		return e.Action == reconcile.ActionCommandRedriven && e.Actor == "ops"
	}) {
		t.Errorf("finding %d's history %+v does not record the redrive by ops", dead[0].FindingID, d.History)
	}
	code, out, errOut = w.run("redrive", first, "--actor", "ops")
	wantCode(t, "redrive of a command that is not dead", code, exitNegative, out, errOut)

	code, out, errOut = w.run("redrive", "--all", "ApplyPaymentSucceeded", "--actor", "ops")
	wantCode(t, "redrive --all", code, exitOK, out, errOut)
	if !strings.Contains(out, fmt.Sprintf("command %d re-driven", dead[1].ID)) || strings.Count(out, "re-driven") != 1 {
		t.Errorf("redrive --all said:\n%s\nwant the one command still dead", out)
	}
	code, out, errOut = w.run("redrive", "--all", "ApplyPaymentSucceeded", "--actor", "ops")
	wantCode(t, "redrive --all with none dead", code, exitNegative, out, errOut)
	code, out, errOut = w.run("dead", "--json")
	wantCode(t, "dead after redrive", code, exitOK, out, errOut)
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("dead after redriving every command = %s; want []", out)
	}
}

func TestAWrongCommandLineIsAUsageError(t *testing.T) {
	t.Parallel()
	// None of these reaches a database: the URL names one that is not there, so a command
	// that tried would exit 3.
	const nowhere = "postgres://postgres@127.0.0.1:1/test?sslmode=disable"
	tests := []struct {
		name string
		args []string
	}{
		{"no command", nil},
		{"an unknown command", []string{"frobnicate"}},
		{"an unknown flag", []string{"dead", "--color"}},
		{"findings without a subcommand", []string{"findings"}},
		{"an unknown findings subcommand", []string{"findings", "delete", "1"}},
		{"status without --job", []string{"status", "--table", "payments"}},
		{"health without --table", []string{"health", "--job", "payments"}},
		{"a table name that is no identifier", []string{"status", "--job", "p", "--table", "payments; DROP TABLE x"}},
		{"a finding id that is no number", []string{"findings", "show", "abc"}},
		{"two finding ids to show", []string{"findings", "show", "1", "2"}},
		{"a zero limit", []string{"findings", "list", "--limit", "0"}},
		{"an unknown state", []string{"findings", "list", "--status", "closed"}},
		{"search columns without a table", []string{"findings", "list", "--search-columns", "order_id"}},
		{"a bad prefix", []string{"dead", "--prefix", "bad-prefix"}},
		{"a bad prefix for the SQL", []string{"migrate", "sql", "--prefix", "bad-prefix"}},
		{"a bad schema to migrate", []string{"migrate", "--schema", "bad;schema"}},
		{"a bad prefix to migrate", []string{"migrate", "--prefix", "bad-prefix"}},
		{"an argument to migrate", []string{"migrate", "up"}},
		{"a duration that is none", []string{"health", "--job", "p", "--table", "t", "--lag-slo", "soon"}},
		// NaN turned the check off: health judged every batch's rows verified enough.
		{"an unverifiable share that is no number", []string{"health", "--job", "p", "--table", "t", "--max-unverifiable", "NaN"}},
		{"redrive ids and --all", []string{"redrive", "1", "--all", "X", "--actor", "ops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			if len(args) > 1 && args[0] != "findings" || len(args) > 2 {
				args = append(slices.Clone(args), "--database-url", nowhere)
			}
			code, out, errOut := runTool(t, args...)
			wantCode(t, strings.Join(args, " "), code, exitUsage, out, errOut)
			if errOut == "" {
				t.Error("nothing on standard error")
			}
		})
	}
}

func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	t.Parallel()
	// The overviews list commands; each command's own help has examples.
	for _, args := range [][]string{{"--help"}, {"help"}, {"findings", "--help"}} {
		code, out, errOut := runTool(t, args...)
		wantCode(t, strings.Join(args, " "), code, exitOK, out, errOut)
		if !strings.Contains(out, "Usage:") {
			t.Errorf("%s printed no usage:\n%s", strings.Join(args, " "), out)
		}
	}
	var helps [][]string
	for _, c := range commands {
		if c.name != "findings" {
			helps = append(helps, []string{c.name, "--help"})
		}
	}
	for _, sub := range []string{"list", "show", "resolve", "reopen"} {
		helps = append(helps, []string{"findings", sub, "-h"})
	}
	helps = append(helps, []string{"help", "findings", "resolve"}, []string{"help", "dead"})
	for _, args := range helps {
		code, out, errOut := runTool(t, args...)
		wantCode(t, strings.Join(args, " "), code, exitOK, out, errOut)
		if !strings.Contains(out, "Usage: reconcile ") || !strings.Contains(out, "Examples:\n  reconcile ") {
			t.Errorf("%s printed no usage line or no example:\n%s", strings.Join(args, " "), out)
		}
	}
	_, out, _ := runTool(t, "--help")
	for _, want := range []string{"Exit codes:", "DATABASE_URL", "migrate", "redrive"} {
		if !strings.Contains(out, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
}

func TestAnUnreachableDatabaseIsExitThreeWithoutItsPassword(t *testing.T) {
	t.Parallel()
	code, out, errOut := runTool(t, "findings", "list", "--database-url", "postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=disable")
	wantCode(t, "findings list on an unreachable database", code, exitError, out, errOut)
	if strings.Contains(errOut, "hunter2") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("the error %q; want the address without the password", errOut)
	}
}

func TestMissingTablesSayHowToCreateThem(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t) // empty: never migrated
	code, out, errOut := runTool(t, "findings", "list", "--database-url", pgtest.URL(t), "--schema", schema)
	wantCode(t, "findings list before migrate", code, exitError, out, errOut)
	if !strings.Contains(errOut, "reconcile migrate") {
		t.Errorf("findings list before migrate said %q; want it to say to run reconcile migrate", errOut)
	}
	// status checks the tables first (pgstore.ErrNotMigrated).
	if _, err := pool.Exec(context.Background(), shardtest.PaymentsDDL); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runTool(t, "status", "--job", "payments", "--table", "payments", "--database-url", pgtest.URL(t), "--schema", schema)
	wantCode(t, "status before migrate", code, exitError, out, errOut)
	if !strings.Contains(errOut, "reconcile migrate") {
		t.Errorf("status before migrate said %q; want it to say to run reconcile migrate", errOut)
	}
}

func TestDatabaseURLIsReadFromTheEnvironment(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("DATABASE_URL", "postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=disable")
	code, out, errOut := runTool(t, "dead")
	wantCode(t, "dead with $DATABASE_URL unreachable", code, exitError, out, errOut)
	if !strings.Contains(errOut, "$DATABASE_URL") || !strings.Contains(errOut, "127.0.0.1:1") || strings.Contains(errOut, "hunter2") {
		t.Errorf("the error %q; want the address from $DATABASE_URL without the password", errOut)
	}
}
