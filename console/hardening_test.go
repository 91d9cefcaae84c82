package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// A repair command's last error, as a failing dispatcher could leave it in the outbox: hosts,
// credentials, SQL.
const commandError = `dial tcp db-primary.internal.example:5432: password=hunter2; ERROR: relation "ledger_secret" (SQLSTATE 42P01) <script>alert('cmd')</script>`

// commandSecrets are the parts of commandError no page may show.
var commandSecrets = []string{"hunter2", "db-primary", "internal.example", "ledger_secret", "SQLSTATE", "alert("}

func TestARepairCommandsErrorTextIsNeverOnTheFindingsPage(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	ctx := context.Background()
	id := w.ids["1"] // missed its success webhook: it has an ApplyPaymentSucceeded command
	tag, err := w.pool.Exec(ctx, `UPDATE reconcile_outbox SET status = 'dead', failures = 3, last_error = $2, dead_at = now()
		WHERE finding_id = $1`, id, commandError)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("making finding %d's command dead: %v, %d rows", id, err, tag.RowsAffected())
	}
	body := w.get(t, fmt.Sprintf("/findings/%d", id), "alice")
	for _, secret := range commandSecrets {
		if strings.Contains(body, secret) {
			t.Errorf("the finding's page shows %q from the command's last error", secret)
		}
	}
	for _, want := range []string{"<td>command dead</td><td class=\"who\">repair command ApplyPaymentSucceeded</td>", "3 failed attempts"} {
		if !strings.Contains(body, want) {
			t.Errorf("the finding's page lacks %q", want)
		}
	}

	// The store does not hand the error out either, to any page a host builds.
	d, err := w.store.Finding(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var cmds int
	for _, e := range d.History {
		if strings.HasPrefix(e.Action, "command ") {
			cmds++
			if e.Note != "" || e.Action != "command dead" || e.Actor != "ApplyPaymentSucceeded" || e.Failures != 3 {
				t.Errorf("command event %+v; want dead, 3 failures, no note", e)
			}
		}
	}
	if cmds != 1 {
		t.Errorf("history %+v has %d command events, want 1", d.History, cmds)
	}
	if first := d.History[0]; first.Action != "detected" {
		t.Errorf("history starts with %+v, want the detection", first)
	}
}

// detailStore is a Store with one finding whose history holds a command event with a note, as
// a host's own store might return it.
type detailStore struct{ fakeStore }

func (detailStore) Finding(_ context.Context, id int64) (reconcile.FindingDetail, error) {
	if id != 7 {
		return reconcile.FindingDetail{}, reconcile.ErrFindingNotFound
	}
	at := time.Now().Add(-time.Hour)
	return reconcile.FindingDetail{
		Finding: reconcile.Finding{ID: 7, Job: "sweep", RecordID: "r7", Kind: "missed_success", DetectedAt: at, Command: "ApplyPaymentSucceeded"},
		History: []reconcile.FindingEvent{
			{At: at, Action: "detected", Actor: "sweep"},
			{At: at, Action: "command dead", Actor: "ApplyPaymentSucceeded", Note: commandError, Failures: 5},
			{At: at, Action: "reopened", Actor: "bob", Note: "a person's note is shown"},
		},
	}, nil
}

func TestACommandEventsNoteIsNotShownWhateverTheStoreReturns(t *testing.T) {
	t.Parallel()
	c, err := console.New(console.Config{Store: &detailStore{}, Authenticate: headerAuth, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	r := serve(c, http.MethodGet, "/findings/7", "alice")
	body := r.Body.String()
	if r.Code != http.StatusOK {
		t.Fatalf("GET /findings/7 = %d:\n%s", r.Code, body)
	}
	for _, secret := range commandSecrets {
		if strings.Contains(body, secret) {
			t.Errorf("the finding's page shows %q from the command's note", secret)
		}
	}
	for _, want := range []string{"<td>command dead</td>", "5 failed attempts", "a person&#39;s note is shown"} {
		if !strings.Contains(body, want) {
			t.Errorf("the finding's page lacks %q", want)
		}
	}
}

func TestTheConsoleServesOnlyItsConfiguredJobs(t *testing.T) {
	t.Parallel()
	// The hostile job's finding is in the same tables, but the console is for sweep only.
	w := newWorld(t, true, func(c *console.Config) { c.Jobs = []string{"sweep"} })
	ctx := context.Background()
	other := w.ids[hostileID]
	if other == 0 {
		t.Fatal("no finding of the hostile job")
	}
	otherPath := fmt.Sprintf("/findings/%d", other)

	for _, q := range []string{"", "?state=all", "?kind=paid_locally_not_externally", "?record=" + url.QueryEscape(hostileID)} {
		if got := findingIDs(w.get(t, "/findings"+q, "alice")); slices.Contains(got, strconv.FormatInt(other, 10)) {
			t.Errorf("GET /findings%s lists finding %d of a job the console is not for: %v", q, other, got)
		}
	}
	if got, want := findingIDs(w.get(t, "/findings", "alice")), w.idsOf("1", "2", "3", "4"); !slices.Equal(got, want) {
		t.Errorf("the open list is %v, want sweep's %v", got, want)
	}
	if r := w.do(t, http.MethodGet, "/findings?job=hostile", "alice", nil); r.status != http.StatusBadRequest || strings.Contains(r.body, "finding-") {
		t.Errorf("GET /findings?job=hostile = %d, want 400 without findings:\n%s", r.status, r.body)
	}
	if r := w.do(t, http.MethodGet, otherPath, "alice", nil); r.status != http.StatusNotFound || strings.Contains(r.body, "alert") {
		t.Errorf("GET %s = %d, want 404:\n%s", otherPath, r.status, r.body)
	}
	token := w.token(t, w.ids["3"], "alice")
	if r := w.do(t, http.MethodPost, otherPath+"/resolve", "alice", url.Values{"csrf_token": {token}, "resolution": {"fixed"}}); r.status != http.StatusNotFound {
		t.Errorf("resolving %d = %d, want 404:\n%s", other, r.status, r.body)
	}
	if !w.finding(t, other).Open() {
		t.Fatal("the console resolved a finding of a job it is not for")
	}
	if err := w.store.ResolveFinding(ctx, other, reconcile.Resolution{As: "fixed", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if r := w.do(t, http.MethodPost, otherPath+"/reopen", "alice", url.Values{"csrf_token": {token}}); r.status != http.StatusNotFound {
		t.Errorf("reopening %d = %d, want 404:\n%s", other, r.status, r.body)
	}
	if w.finding(t, other).Open() {
		t.Fatal("the console reopened a finding of a job it is not for")
	}
}

// listStore lists findings of two jobs whatever the query asks: a store that ignores
// Query.Jobs.
type listStore struct{ fakeStore }

func (listStore) ListFindings(context.Context, reconcile.FindingQuery) ([]reconcile.Finding, error) {
	at := time.Now()
	return []reconcile.Finding{
		{ID: 1, Job: "mine", RecordID: "r1", Kind: "k", DetectedAt: at},
		{ID: 2, Job: "theirs", RecordID: "r2", Kind: "k", DetectedAt: at},
	}, nil
}

func TestTheListDropsFindingsOfOtherJobsEvenIfTheStoreReturnsThem(t *testing.T) {
	t.Parallel()
	c, err := console.New(console.Config{Store: &listStore{}, Authenticate: headerAuth, Jobs: []string{"mine"}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	r := serve(c, http.MethodGet, "/findings", "alice")
	if got := findingIDs(r.Body.String()); r.Code != http.StatusOK || !slices.Equal(got, []string{"1"}) {
		t.Fatalf("GET /findings = %d listing %v, want 200 listing only job mine's finding 1", r.Code, got)
	}
}

func TestControlCharactersInFiltersNotesAndActorsAreA400(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["3"]
	token := w.token(t, id, "alice")
	for _, q := range []string{"job=sw%00eep", "kind=missed%00success", "record=3%00", "record=%01", "kind=a%0Ab", "job=%1B[31m"} {
		r := w.do(t, http.MethodGet, "/findings?"+q, "alice", nil)
		if r.status != http.StatusBadRequest {
			t.Errorf("GET /findings?%s = %d, want 400:\n%s", q, r.status, r.body)
		}
	}
	resolve := fmt.Sprintf("/findings/%d/resolve", id)
	for _, n := range []string{"a NUL\x00 in the note", "a bell\a", "an escape \x1b[2J"} {
		r := w.do(t, http.MethodPost, resolve, "alice", url.Values{"csrf_token": {token}, "resolution": {"fixed"}, "note": {n}})
		if r.status != http.StatusBadRequest {
			t.Errorf("resolving with the note %q = %d, want 400:\n%s", n, r.status, r.body)
		}
	}
	if !w.finding(t, id).Open() {
		t.Fatal("a bad note resolved the finding")
	}
	// Tabs and line breaks are text.
	n := "line one\r\nline two\tand a tab"
	if r := w.do(t, http.MethodPost, resolve, "alice", url.Values{"csrf_token": {token}, "resolution": {"fixed"}, "note": {n}}); r.status != http.StatusSeeOther {
		t.Fatalf("resolving with the note %q = %d:\n%s", n, r.status, r.body)
	}
	if d := w.finding(t, id); d.ResolutionNote != n {
		t.Errorf("stored the note %q, want %q", d.ResolutionNote, n)
	}
	// An actor that could not be stored is no actor.
	c, err := console.New(console.Config{Store: &countingStore{}, Logger: discard,
		Authenticate: func(*http.Request) (string, error) { return "al\x00ice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if r := serve(c, http.MethodGet, "/findings", "x"); r.Code != http.StatusForbidden {
		t.Errorf("an actor with a NUL = %d, want 403", r.Code)
	}
}

func TestAZeroConsoleAnswers500InsteadOfPanicking(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.Handler{"zero": &console.Console{}, "nil": (*console.Console)(nil)} {
		r := httptest.NewRecorder()
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s console: ServeHTTP panicked: %v", name, p)
				}
			}()
			h.ServeHTTP(r, httptest.NewRequest(http.MethodGet, "/findings", nil))
		}()
		if r.Code != http.StatusInternalServerError || !strings.Contains(r.Body.String(), "console not configured") {
			t.Errorf("%s console = %d %q, want 500 console not configured", name, r.Code, r.Body.String())
		}
	}
}

// levelRecorder keeps the level and text of every log record.
type levelRecorder struct {
	buf lockedBuffer
	h   slog.Handler
}

func newLevelRecorder() *levelRecorder {
	l := &levelRecorder{}
	l.h = slog.NewTextHandler(&l.buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	return l
}

func TestCrossOriginRefusalsAreLoggedAtDebugAndClipped(t *testing.T) {
	t.Parallel()
	rec := newLevelRecorder()
	store := &countingStore{}
	c, err := console.New(console.Config{Store: store, Authenticate: headerAuth, Logger: slog.New(rec.h)})
	if err != nil {
		t.Fatal(err)
	}
	origin := "https://evil.example/" + strings.Repeat("O", 10000)
	path := "/findings/7/resolve/" + strings.Repeat("P", 10000)
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("x=1"))
	req.Header.Set("Origin", origin)
	r := httptest.NewRecorder()
	c.ServeHTTP(r, req)
	if r.Code != http.StatusForbidden {
		t.Fatalf("a cross-origin post = %d, want 403", r.Code)
	}
	logs := rec.buf.String()
	if !strings.Contains(logs, "cross-origin request refused") {
		t.Fatalf("the refusal is not logged:\n%.500s", logs)
	}
	if strings.Contains(logs, "level=WARN") || strings.Contains(logs, "level=ERROR") {
		t.Errorf("an unauthenticated cross-origin request is logged above Debug:\n%.500s", logs)
	}
	if !strings.Contains(logs, "level=DEBUG") {
		t.Errorf("the refusal is not at Debug:\n%.500s", logs)
	}
	if len(logs) > 1500 || strings.Contains(logs, strings.Repeat("O", 300)) || strings.Contains(logs, strings.Repeat("P", 300)) {
		t.Errorf("the attacker's values are logged unclipped (%d bytes of log)", len(logs))
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("the refused request made %d store calls", n)
	}
}

// countingStore is a Store that counts its calls and has nothing.
type countingStore struct{ calls atomic.Int64 }

func (s *countingStore) ListFindings(context.Context, reconcile.FindingQuery) ([]reconcile.Finding, error) {
	s.calls.Add(1)
	return nil, nil
}

func (s *countingStore) Finding(context.Context, int64) (reconcile.FindingDetail, error) {
	s.calls.Add(1)
	return reconcile.FindingDetail{}, reconcile.ErrFindingNotFound
}

func (s *countingStore) ResolveFinding(context.Context, int64, reconcile.Resolution) error {
	s.calls.Add(1)
	return reconcile.ErrFindingNotFound
}

func (s *countingStore) ReopenFinding(context.Context, int64, string, string) error {
	s.calls.Add(1)
	return reconcile.ErrFindingNotFound
}

func (s *countingStore) Status(context.Context, string) (reconcile.Status, error) {
	s.calls.Add(1)
	return reconcile.Status{}, errors.New("no status")
}

func TestUnauthenticatedRequestsOfAnyMethodNeverReachTheStore(t *testing.T) {
	t.Parallel()
	store := &countingStore{}
	c, err := console.New(console.Config{Store: store, Authenticate: headerAuth, Jobs: []string{"sweep"}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPatch} {
		for _, path := range []string{"/", "/findings", "/findings?q=pi_1Alpha", "/findings/7", "/findings/7/resolve", "/findings/7/reopen", "/findings.csv", "/resolve", "/timezone"} {
			r := serve(c, method, path, "")
			if r.Code != http.StatusForbidden {
				t.Errorf("unauthenticated %s %s = %d, want 403", method, path, r.Code)
			}
		}
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("unauthenticated requests made %d store calls, want none", n)
	}
}
