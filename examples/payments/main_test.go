package main

import (
	"bytes"
	"context"
	"maps"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// The tests of run use the default schema reconcile_demo, so they do not run in parallel; the
// tests built on a fixture (fixture_test.go) have schemas of their own and do.

// databaseURL returns the test database and drops the example's schema when the test ends.
func databaseURL(t *testing.T) string {
	t.Helper()
	dbURL := pgtest.URL(t)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Errorf("drop schema %s: %v", defaultSchema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS reconcile_demo CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", defaultSchema, err)
		}
	})
	return dbURL
}

func TestRunFindsExactlyThePlantedDrift(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: databaseURL(t), Rows: 500, BatchSize: 200, Seed: 1})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		"batch   3  scanned  100",
		"empty read: the cycle is complete",
		"Stripe API calls (stripetest's log)",
		"Verdicts over the cycle",
		"Open findings by kind",
		"Repair commands queued in the outbox",
		"Monitoring (store.Status)",
		"Needs review:",
		"Everything found matches what was planted.",
		"POST /webhooks/stripe  200  payment ",
		"Repair commands in the outbox",
		"repair commands skipped (resolved)          1  the late webhook's payment",
		"Findings still open, for a person",
		"Every repairable finding is resolved, each payment changed once by one path, and nothing else changed.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// The bulk fetch at work: the lists show every intent near its row, so only the rows no
	// list can show are retrieved, and a batch of 200 rows costs a few list calls, not 200.
	p, err := newPlan(500, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := p.expected()
	list, retrieve := calls(t, out.String(), "list"), calls(t, out.String(), "retrieve")
	if retrieve != e.notFound+e.unavailable {
		t.Errorf("%d retrieve calls, want %d: one per row unknown to Stripe (%d) or unavailable (%d)",
			retrieve, e.notFound+e.unavailable, e.notFound, e.unavailable)
	}
	// Each of the 3 batches lists about its own rows' intents, a hundred a page.
	if maxList := 500/100 + 3; list < 1 || list > maxList {
		t.Errorf("%d list calls, want 1 to %d", list, maxList)
	}
}

// calls reads the number of API calls of a kind, "list" or "retrieve", from run's summary.
func calls(t *testing.T, out, kind string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^    ` + kind + ` +GET /v1/payment_intents\S* +(\d+)  `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output has no %s calls line:\n%s", kind, out)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRunWithPacedCallsFindsTheSameDrift(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: databaseURL(t), Rows: 100, BatchSize: 50, RPS: 2000, Seed: 2})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
}

func TestRunWithoutADatabaseSaysHowToProvideOne(t *testing.T) {
	// Port 1 on the loopback interface refuses connections at once.
	err := run(t.Context(), &bytes.Buffer{}, options{
		DatabaseURL: "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable", Rows: 100, BatchSize: 10,
	})
	if err == nil {
		t.Fatal("run succeeded without a database")
	}
	msg := err.Error()
	for _, want := range []string{"cannot connect to PostgreSQL", "DATABASE_URL=", "pg_ctlcluster --skip-systemctl-redirect"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error shows the password:\n%s", msg)
	}
}

func TestPlanDealsEveryStoryAndIsRepeatable(t *testing.T) {
	p, err := newPlan(500, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := newPlan(500, 7)
	total := 0
	for i, s := range stories {
		if p.counts[i] < 1 {
			t.Errorf("story %q has no rows", s.name)
		}
		total += p.counts[i]
	}
	if total != 500 || len(p.payments) != 500 {
		t.Errorf("counts add up to %d over %d payments, want 500", total, len(p.payments))
	}
	for i, pay := range p.payments {
		if pay != again.payments[i] {
			t.Fatalf("payment %d differs between two plans with one seed: %+v, %+v", i, pay, again.payments[i])
		}
		// Rows are created in id order within the past week, at least an hour ago, so that a
		// batch's rows cover one stretch of time and the bulk fetch finds their intents.
		if pay.createdAgo > history || pay.createdAgo < time.Hour {
			t.Errorf("payment %d created %v ago, want between an hour and %v", i, pay.createdAgo, history)
		}
		if i > 0 && pay.createdAgo >= p.payments[i-1].createdAgo {
			t.Errorf("payment %d created %v ago, not after payment %d (%v ago)", i, pay.createdAgo, i-1, p.payments[i-1].createdAgo)
		}
		if pay.updatedAgo > pay.createdAgo {
			t.Errorf("payment %d updated %v ago, before it was created %v ago", i, pay.updatedAgo, pay.createdAgo)
		}
		switch after := pay.intentAfter; {
		case pay.story.unavailable:
			// Older than every row: outside every batch's list window, by more than the
			// gateway's 5 minutes of skew.
			if pay.createdAgo-after < history+stripeadapter.DefaultCreatedSkew {
				t.Errorf("payment %d (%s): intent created %v ago, inside the table's history", i, pay.story.name, pay.createdAgo-after)
			}
		case after < 0 || after > intentLag:
			t.Errorf("payment %d (%s): intent created %v after its row, want 0 to %v", i, pay.story.name, after, intentLag)
		}
	}
	if _, err := newPlan(len(stories)-1, 1); err == nil {
		t.Error("a plan with fewer rows than stories succeeded")
	}
}

func TestCompareReportsEveryCountThatDiffers(t *testing.T) {
	p, err := newPlan(500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := compare(p, perfect(p)); len(diffs) != 0 {
		t.Fatalf("a perfect cycle differs: %+v", diffs)
	}

	r := perfect(p)
	r.status.OpenFindings[stripeadapter.KindMissedSuccess]--
	r.status.OpenFindings["unexpected:paid->processing"] = 1
	r.calls++
	r.aboutGrace = 2
	r.unavailable--
	got := compare(p, r)
	want := []string{
		"open missed_success findings",
		"open unexpected:paid->processing findings",
		"API calls the batches reported, one per request to Stripe",
		"Stripe requests about rows inside the grace period",
		"retrieves of rows with Stripe unavailable, answered 503",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d differences, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].what != w {
			t.Errorf("difference %d is %q, want %q", i, got[i].what, w)
		}
	}
}

func TestCompareRepairsReportsEveryCountThatDiffers(t *testing.T) {
	p, err := newPlan(500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := compareRepairs(p, perfectRepairs(p)); len(diffs) != 0 {
		t.Fatalf("perfect repairs differ: %+v", diffs)
	}

	r := perfectRepairs(p)
	review := p.where(func(s *story) bool { return s.verdict == reconcile.NeedsReview })[0]
	st := r.payments[review.externalID]
	st.touched = true // a payment nothing should change was written to
	r.payments[review.externalID] = st
	success := p.where(func(s *story) bool { return s.command == stripeadapter.CommandApplyPaymentSucceeded })[1]
	st = r.payments[success.externalID]
	st.ledger = 2 // booked twice
	r.payments[success.externalID] = st
	r.lateResolvedBy = actorReconciler
	r.commands[stripeadapter.CommandApplyPaymentCanceled][commandDone]--
	r.commands[stripeadapter.CommandApplyPaymentCanceled][commandDead] = 1
	got := compareRepairs(p, r)
	want := []string{
		"payments whose ledger rows are not one per payment made paid",
		"payments changed that nothing should change",
		"late webhook's finding resolved by the webhook",
		"repair commands done",
		"repair commands dead or waiting",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d differences, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].what != w {
			t.Errorf("difference %d is %q, want %q", i, got[i].what, w)
		}
	}
}

// perfectRepairs returns the results of repairs that did exactly what they must.
func perfectRepairs(p plan) repairResults {
	e := p.expected()
	n := sum(e.commands)
	r := repairResults{
		late:           p.where(func(s *story) bool { return s.command == stripeadapter.CommandApplyPaymentSucceeded })[0],
		webhookStatus:  200,
		claimed:        n,
		changed:        n - 1,
		unchanged:      0,
		commands:       map[string]map[string]int{},
		payments:       map[string]paymentState{},
		resolvedBy:     map[string]int{actorReconciler: n - 1, actorWebhook: 1},
		openByKind:     needsReview(p),
		lateResolvedBy: actorWebhook,
		lateLedger:     actorWebhook,
	}
	for event, k := range e.commands {
		r.commands[event] = map[string]int{commandDone: k}
	}
	for i, pay := range p.payments {
		st := paymentState{id: strconv.Itoa(i + 1), status: pay.story.local}
		if to, ok := repairsOf(pay.story); ok {
			st.status, st.touched = to, true
			if to == paid {
				st.ledger, st.bookedBy = 1, actorReconciler
			}
		}
		if pay.externalID == r.late.externalID {
			st.bookedBy = actorWebhook
		}
		r.payments[pay.externalID] = st
	}
	return r
}

// perfect returns the results of a cycle that found exactly what p planted.
func perfect(p plan) results {
	e := p.expected()
	var r results
	r.verdicts = maps.Clone(e.verdicts)
	r.status.OpenFindings = maps.Clone(e.findings)
	r.status.CyclesCompleted = 1
	r.commands = maps.Clone(e.commands)
	r.cycle.commands = sum(e.commands)
	r.findings = sum(e.findings)
	r.observed = e.answered
	r.notFound, r.unavailable = e.notFound, e.unavailable
	r.list, r.retrieve = 3, e.notFound+e.unavailable
	r.calls = r.list + r.retrieve
	return r
}

func TestReadLogCountsWhatTheChecksNeed(t *testing.T) {
	p, err := newPlan(500, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := func(pred func(*story) bool) string { return p.where(pred)[0].externalID }
	var (
		grace       = id(func(s *story) bool { return s.recent })
		notFound    = id(func(s *story) bool { return s.notFound })
		unavailable = id(func(s *story) bool { return s.unavailable })
		inSync      = id(func(s *story) bool { return s.verdict == reconcile.InSync })
	)
	list := func(status int, query url.Values) stripetest.Request {
		return stripetest.Request{Route: stripetest.ListPaymentIntents, Path: "/v1/payment_intents", Query: query, Status: status}
	}
	retrieve := func(id string, status int) stripetest.Request {
		return stripetest.Request{Route: stripetest.RetrievePaymentIntent, Path: retrievePrefix + id, Status: status}
	}
	got := readLog([]stripetest.Request{
		list(200, url.Values{"created[gte]": {"1"}, "limit": {"100"}}),
		list(200, url.Values{"starting_after": {grace}}), // a cursor asks nothing about its row
		list(200, url.Values{"customer": {grace}}),
		list(400, nil),
		retrieve(inSync, 200),
		retrieve(inSync, 200),
		retrieve(grace, 200),
		retrieve(notFound, 404),
		retrieve(unavailable, 503),
		retrieve(unavailable, 200),
		retrieve(inSync, 500),
		{Route: "", Path: "/v1/charges", Status: 404},
	}, p)
	want := traffic{list: 4, retrieve: 7, aboutGrace: 2, retrievedAgain: 3, notFound: 1, unavailable: 1, unplanned: 3}
	if got != want {
		t.Errorf("readLog = %+v, want %+v", got, want)
	}
}
