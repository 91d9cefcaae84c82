package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// testOptions are options for a test of run: the test database and a schema of the test's own,
// dropped when it ends, so that tests run side by side and beside the example run by hand.
func testOptions(t *testing.T) options {
	t.Helper()
	return options{DatabaseURL: pgtest.URL(t), Schema: pgtest.Schema(t)}
}

// The same story runs on PostgreSQL and, with -store memory or no database to reach, on
// memstore: the same sweep, lanes and drift check, the repairs PostgreSQL's only.
func TestRunFindsExactlyThePlantedDrift(t *testing.T) {
	t.Run(storePostgres, func(t *testing.T) {
		out := testRunFindsThePlantedDrift(t, testOptions(t))
		for _, want := range []string{
			"POST /webhooks/stripe  200  payment ",
			"Repair commands in the outbox",
			"repair commands skipped (resolved)          1  the late webhook's payment",
			"Findings still open, for a person",
			"Every repairable finding is resolved, each payment changed once by one path, and nothing else changed.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run(storeMemory, func(t *testing.T) {
		out := testRunFindsThePlantedDrift(t, options{Store: storeMemory})
		if first, _, _ := strings.Cut(out, "\n"); first != "-store memory: running the story on memstore, in memory (nothing is kept)." {
			t.Errorf("the first line is %q, want it to say the run is in memory", first)
		}
		for _, want := range []string{
			"Loaded 500 payments into memstore (in memory)",
			"Repairs: skipped in memory. The canonical writer (writer.go)",
			"it holds the 49 repair commands queued above",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "POST /webhooks/stripe") || strings.Contains(out, "Repairs: pgoutbox.Dispatcher") {
			t.Errorf("a run in memory reports repairs it cannot make:\n%s", out)
		}
	})
}

// testRunFindsThePlantedDrift runs the story of 500 rows with opts, checks what both stores
// print alike, and returns the output.
func testRunFindsThePlantedDrift(t *testing.T, opts options) string {
	t.Helper()
	var out bytes.Buffer
	opts.Rows, opts.BatchSize, opts.Seed = 500, 200, 1
	err := run(t.Context(), &out, opts)
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		"batch   3  scanned  100",
		"short read: the cycle is complete",
		"Stripe API calls (stripetest's log)",
		"Verdicts over the cycle",
		"Open findings by kind",
		"Repair commands queued in the outbox",
		"Monitoring (store.Status)",
		"Needs review:",
		"Events lane (job payments-sweep, lane events): anchored at Stripe's newest event, 1 API call",
		"Lost webhooks: 2 payments the sweep found in sync",
		"Events lane: waited out its 2s settle time, then ran until caught up: 1 step,",
		"Reverse scan: one full pass",
		"After the sweep, the events lane and the reverse scan:",
		"    lane events                            at the end of its feed",
		"    lane reverse                           at the end of its feed",
		"Everything found matches what was planted: the sweep's, the events lane's and the reverse scan's.",
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

	// The lanes: the events lane finds each lost webhook with one call, the reverse scan each
	// PaymentIntent only at Stripe (not the young one) and nothing else, a call per hundred.
	// 2 lost webhooks, a refund, a refund that fails and a dispute.
	if e.missed != 5 || e.orphans != 2 {
		t.Fatalf("the plan has %d changes after the sweep and %d orphans; the assertions below expect 5 and 2", e.missed, e.orphans)
	}
	// Every PaymentIntent but those of the rows Stripe never saw or (created long before their
	// rows) outside the window, and the young one.
	listed := len(p.payments) - e.notFound - e.unavailable + e.orphans
	for _, f := range []struct {
		label         string
		got, planted  int
		plantedColumn bool
	}{
		{"payments judged", 5, 5, true},
		{"API calls  GET /v1/events", 1, 1, true},
		{"findings opened", 5, 5, true}, // the events lane's: the first of the two such lines
		{"repair commands queued", 3, 3, true},
		{"only at Stripe", 2, 2, true},
		{"PaymentIntents listed", listed, 0, false},
		{"API calls  GET /v1/payment_intents", pages(listed), 0, false},
		{"missing_locally", 2, 2, true},         // open, in the summary
		{"ApplyPaymentSucceeded", 32, 32, true}, // queued: 30 by the sweep, 2 by the events lane
		{"ApplyRefund", 2, 2, true},             // queued: the partial refund by the sweep, the whole one by the events lane
		{"list      GET /v1/disputes", 1, 0, false},
		// One of each money drift, open after the lanes.
		{"amount_mismatch", 1, 1, true},
		{"currency_mismatch", 1, 1, true},
		{"dispute_lost", 1, 1, true},
		{"dispute_needs_response", 1, 1, true},
		{"missed_partial_refund", 1, 1, true},
		{"missed_refund", 1, 1, true},
		{"refund_failed", 1, 1, true},
	} {
		got, planted := figures(t, out.String(), f.label)
		if got != f.got || (f.plantedColumn && planted != f.planted) {
			t.Errorf("%s: %d (planted %d), want %d (planted %d)", f.label, got, planted, f.got, f.planted)
		}
	}
	reverse := out.String()[strings.Index(out.String(), "Reverse scan:"):]
	for _, want := range []string{
		"    findings opened                             2        2  nothing new for the drifts",
		"    repair commands queued                      0        0",
		// A list call per hundred, and a call for the disputes of the charge disputed after
		// the sweep: the lost dispute's outcome is final, and the sweep's gateway, the lanes'
		// too, keeps it.
		"API calls  GET /v1/disputes                 1",
		"calls per PaymentIntent                 0.012",
	} {
		if !strings.Contains(reverse, want) {
			t.Errorf("the reverse scan's section lacks %q:\n%s", want, out.String())
		}
	}
	for _, check := range []string{"lane:events", "lane:reverse"} {
		if !regexp.MustCompile(`(?m)^    ` + check + ` +OK +\d+s \(limit 15m0s\)$`).MatchString(out.String()) {
			t.Errorf("health lacks %s OK:\n%s", check, out.String())
		}
	}
	// The lag fails, the demo's rows being old and some unverified, and says so on its line.
	if !regexp.MustCompile(`(?m)^    lag +FAILING +\S+ \(limit 72h0m0s\): expected here: the demo's rows were created up to 7 days ago, ` +
		`and its \d+ unverified ones \(changed a moment ago, or Stripe answering 503\) count from their created_at$`).MatchString(out.String()) {
		t.Errorf("health's lag line does not say why it fails:\n%s", out.String())
	}
	review := out.String()[strings.Index(out.String(), "Needs review:"):]
	// The findings say what differs, amounts in their currency.
	for _, want := range []string{
		"currency JPY -> USD",
		"dispute_status none -> lost",
		"dispute_status none -> needs_response",
		"amount_refunded USD ",
		"failed: expired_or_canceled_card", // the refund's failure reason
		") needs a response: respond by ",  // the dispute's due date
		") was lost",
	} {
		if !strings.Contains(review, want) {
			t.Errorf("the review list lacks %q:\n%s", want, review)
		}
	}
	if !regexp.MustCompile(`amount_mismatch +paid +succeeded +amount USD [\d,]+\.00 -> USD [\d,]+\.00`).MatchString(review) {
		t.Errorf("the review list lacks the amount mismatch's amounts:\n%s", review)
	}
	for _, id := range p.orphans() {
		if !strings.Contains(review, id+"  missing_locally") {
			t.Errorf("the review list lacks the orphan %s:\n%s", id, review)
		}
	}
	young := p.stripeOnly[len(p.stripeOnly)-1]
	if !young.story.young || strings.Contains(out.String(), young.externalID) {
		t.Errorf("the young PaymentIntent %s (young %v) is in the output", young.externalID, young.story.young)
	}
	return out.String()
}

// figures reads the first line of run's output whose label is label: its first figure, and
// the second if there is one (the planted count).
func figures(t *testing.T, out, label string) (got, planted int) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^ {4}` + regexp.QuoteMeta(label) + ` +(\d+)(?: +(\d+))?`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output has no line %q:\n%s", label, out)
	}
	got, _ = strconv.Atoi(m[1])
	planted, _ = strconv.Atoi(m[2])
	return got, planted
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
	opts := testOptions(t)
	opts.Rows, opts.BatchSize, opts.RPS, opts.Seed = 100, 50, 2000, 2
	err := run(t.Context(), &out, opts)
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
}

func TestRunWithoutADatabaseSaysHowToProvideOne(t *testing.T) {
	// Port 1 on the loopback interface refuses connections at once.
	err := run(t.Context(), &bytes.Buffer{}, options{
		DatabaseURL: "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable", Rows: 100, BatchSize: 10, Store: storePostgres,
	})
	if err == nil {
		t.Fatal("run succeeded without a database")
	}
	msg := err.Error()
	for _, want := range []string{"cannot connect to PostgreSQL", "DATABASE_URL=", "pg_ctlcluster --skip-systemctl-redirect", "-store memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error shows the password:\n%s", msg)
	}
}

func TestRunWithNoDatabaseToReachRunsTheStoryInMemory(t *testing.T) {
	noDocker := func() error { return errors.New("no Docker in this test") }
	for _, tc := range []struct {
		name, source, first string
	}{
		{"DATABASE_URL at a closed port", "$DATABASE_URL",
			"No PostgreSQL at postgres@127.0.0.1:1/test ($DATABASE_URL: dial tcp 127.0.0.1:1: " +
				"connect: connection refused): running the same story on memstore, in memory (nothing is kept; -store postgres insists on a database)."},
		// The default URL stands in for "nothing configured", with no Docker for a container.
		{"nothing configured and no Docker", pgenv.DefaultSource,
			"No PostgreSQL at postgres@127.0.0.1:1/test (the default URL: dial tcp 127.0.0.1:1: " +
				"connect: connection refused), and no container could be started: running the same story on memstore, in memory " +
				"(nothing is kept; -store postgres insists on a database)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), &out, options{
				DatabaseURL: "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable", DatabaseSource: tc.source,
				Rows: 100, BatchSize: 50, Seed: 2, docker: noDocker, Console: "127.0.0.1:0",
			})
			if err != nil {
				t.Fatalf("run: %v\noutput:\n%s", err, out.String())
			}
			if first, _, _ := strings.Cut(out.String(), "\n"); first != tc.first {
				t.Errorf("first line:\n%s\nwant:\n%s", first, tc.first)
			}
			for _, want := range []string{
				"Everything found matches what was planted",
				"Repairs: skipped in memory.",
				"-console 127.0.0.1:0: skipped in memory",
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), "secret") {
				t.Errorf("output shows the password:\n%s", out.String())
			}
		})
	}
}

// A server that answers is the database the run was given: a login it refuses is an error to
// fix, not a reason to run in memory.
func TestRunWithADatabaseThatRefusesTheLoginDoesNotFallBack(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("no_such_role_memdemo")
	var out bytes.Buffer
	err = run(t.Context(), &out, options{DatabaseURL: u.String(), DatabaseSource: "$DATABASE_URL", Rows: 100, BatchSize: 50})
	if err == nil || !strings.Contains(err.Error(), "no_such_role_memdemo") {
		t.Errorf("run: %v, want the refused login\noutput:\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "memstore") {
		t.Errorf("run fell back to memory:\n%s", out.String())
	}
}

func TestRunRefusesAStoreItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		opts options
		want string
	}{
		{options{Store: "sqlite"}, `-store "sqlite": want auto, postgres or memory`},
		{options{Store: storeMemory, StripeKey: "sk_test_123"}, "real mode (STRIPE_SECRET_KEY) keeps its payments in PostgreSQL only"},
	} {
		tc.opts.Rows, tc.opts.BatchSize = 100, 50
		var out bytes.Buffer
		if err := run(t.Context(), &out, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run with -store %q: %v, want %q", tc.opts.Store, err, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("run with -store %q printed before refusing:\n%s", tc.opts.Store, out.String())
		}
	}
}

func TestPlanDealsEveryStoryAndIsRepeatable(t *testing.T) {
	p, err := newPlan(500, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := newPlan(500, 7)
	rows, intents, rowStories := 0, 0, 0
	for i, s := range stories {
		if p.counts[i] < 1 {
			t.Errorf("story %q has no rows", s.name)
		}
		if s.stripeOnly {
			intents += p.counts[i]
		} else {
			rows += p.counts[i]
			rowStories++
		}
	}
	if rows != 500 || len(p.payments) != 500 {
		t.Errorf("counts of rows add up to %d over %d payments, want 500", rows, len(p.payments))
	}
	if intents != len(p.stripeOnly) || intents < 2 {
		t.Errorf("counts of Stripe-only PaymentIntents add up to %d over %d, want at least 2", intents, len(p.stripeOnly))
	}
	ids := map[string]bool{}
	for i, pay := range p.payments {
		if pay != again.payments[i] {
			t.Fatalf("payment %d differs between two plans with one seed: %+v, %+v", i, pay, again.payments[i])
		}
		ids[pay.externalID] = true
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
		case pay.story.stripeOnly:
			t.Errorf("payment %d is a row of the Stripe-only story %q", i, pay.story.name)
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
	for i, pay := range p.stripeOnly {
		if pay != again.stripeOnly[i] {
			t.Fatalf("Stripe-only PaymentIntent %d differs between two plans with one seed: %+v, %+v", i, pay, again.stripeOnly[i])
		}
		if ids[pay.externalID] {
			t.Errorf("Stripe-only PaymentIntent %s has the id of a row's", pay.externalID)
		}
		ids[pay.externalID] = true
		// Inside the reverse scan's window (7 days) and past its grace (10 minutes) by an hour,
		// or, the young one, well inside the grace.
		switch s := pay.story; {
		case !s.stripeOnly:
			t.Errorf("Stripe-only PaymentIntent %d tells the story %q of a row", i, s.name)
		case s.young && pay.createdAgo != youngAge:
			t.Errorf("the young PaymentIntent is %v old, want %v", pay.createdAgo, youngAge)
		case !s.young && (pay.createdAgo < time.Hour || pay.createdAgo > stripeadapter.DefaultReverseWindow-time.Hour):
			t.Errorf("Stripe-only PaymentIntent %d created %v ago, want an hour inside the reverse scan's window", i, pay.createdAgo)
		}
	}
	if young := len(p.stripeOnly) - len(p.orphans()); young != 1 {
		t.Errorf("%d young Stripe-only PaymentIntents, want 1", young)
	}
	if late := p.lateWebhook(); late.story.finder() != laneSweep || late.story.command != stripepolicy.CommandApplyPaymentSucceeded {
		t.Errorf("the late webhook's payment tells %q, want a missed success the sweep finds", late.story.name)
	}
	if _, err := newPlan(rowStories-1, 1); err == nil {
		t.Error("a plan with fewer rows than stories of rows succeeded")
	}
	// The fewest rows that plant every story: a row each, and more for the larger shares. The
	// error of one row fewer says how many.
	fewest := rowStories
	for ; fewest < 2*rowStories; fewest++ {
		if _, err := newPlan(fewest, 1); err == nil {
			break
		}
	}
	_, err = newPlan(fewest-1, 1)
	if want := fmt.Sprintf("use at least %d", fewest); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a plan of %d rows, one fewer than the fewest that plant every story: %v, want an error saying %q", fewest-1, err, want)
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
	r.status.OpenFindings[stripepolicy.KindMissedSuccess]--
	r.status.OpenFindings["unexpected:paid->processing"] = 1
	r.calls++
	r.aboutGrace = 2
	r.unavailable--
	r.disputes-- // a disputed payment judged without its dispute
	got := compare(p, r)
	want := []string{
		"open missed_success findings",
		"open unexpected:paid->processing findings",
		"API calls the batches reported, one per request to Stripe",
		"disputes listed, one per disputed payment",
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
	success := p.where(func(s *story) bool { return s.command == stripepolicy.CommandApplyPaymentSucceeded })[1]
	st = r.payments[success.externalID]
	st.ledger = 2 // booked twice
	r.payments[success.externalID] = st
	refund := p.where(func(s *story) bool { return s.command == stripepolicy.CommandApplyRefund })[0]
	st = r.payments[refund.externalID]
	st.refunded = 0 // a refund the repairs did not record
	r.payments[refund.externalID] = st
	r.lateResolvedBy = actorReconciler
	r.commands[stripepolicy.CommandApplyPaymentCanceled][commandDone]--
	r.commands[stripepolicy.CommandApplyPaymentCanceled][commandDead] = 1
	got := compareRepairs(p, r)
	want := []string{
		"repairable payments not in Stripe's state now",
		"payments whose ledger rows are not one per payment made paid or refunded",
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
	n := sum(e.allCommands) // the sweep's and the events lane's
	r := repairResults{
		late:           p.lateWebhook(),
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
	for event, k := range e.allCommands {
		r.commands[event] = map[string]int{commandDone: k}
	}
	for i, pay := range p.payments {
		st := pay.repaired()
		st.id = strconv.Itoa(i + 1)
		if st.ledger > 0 {
			st.bookedBy = actorReconciler
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
	r.list, r.retrieve, r.disputes = 3, e.notFound+e.unavailable, e.disputed
	r.calls = r.list + r.retrieve + r.disputes
	return r
}

func TestCompareLanesReportsEveryCountThatDiffers(t *testing.T) {
	p, err := newPlan(500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := compareLanes(p, perfectLanes(p)); len(diffs) != 0 {
		t.Fatalf("perfect lanes differ: %+v", diffs)
	}

	l := perfectLanes(p)
	l.events.findings-- // a lost webhook found by nobody
	l.missedFound--
	l.notAsPlanted = 1 // and so a payment without its finding
	l.otherMissing = 1 // the young PaymentIntent reported
	l.reverse.commands = 1
	l.reverseCalls++ // a call the lane did not report
	l.status.OpenFindings[reconcile.KindMissingLocally]++
	l.health.Checks[1].OK = false
	got := compareLanes(p, l)
	want := []string{
		"events lane: findings opened",
		"changes after the sweep found with their finding, and command",
		"reverse scan: commands queued",
		"other PaymentIntents reported missing_locally",
		"reverse scan: API calls reported, one per request to Stripe",
		"reverse scan: API calls, one per hundred listed",
		"open missing_locally findings after the lanes",
		"payments whose open findings are not exactly their story's",
		"lane health checks failing",
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

// perfectLanes returns the results of lanes that found exactly what p planted.
func perfectLanes(p plan) laneResults {
	e := p.expected()
	l := laneResults{
		anchor:       cycle{batches: 1, calls: 1},
		anchorCalls:  1,
		eventsCalls:  1,
		missedFound:  e.missed,
		reverseCalls: 5,
		orphansFound: e.orphans,
		commands:     maps.Clone(e.allCommands),
	}
	l.events = cycle{batches: 1, scanned: e.missed, verdicts: maps.Clone(e.laneVerdicts),
		findings: e.missed, commands: e.missedCommands, calls: 1}
	l.asPlanted = len(p.payments)
	l.reverse = cycle{batches: 5, scanned: 491, findings: e.orphans, calls: 5}
	l.status.OpenFindings = maps.Clone(e.allFindings)
	l.status.Lanes = []reconcile.LaneStatus{{Lane: laneEvents, PassesCompleted: 2}, {Lane: laneReverse, PassesCompleted: 1}}
	l.health.Checks = []reconcile.Check{{Name: "lag"}, {Name: "lane:events", OK: true}, {Name: "lane:reverse", OK: true}}
	return l
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
		{Route: stripetest.ListDisputes, Path: "/v1/disputes", Status: 200},
		{Route: stripetest.ListDisputes, Path: "/v1/disputes", Status: 500},
		{Route: "", Path: "/v1/charges", Status: 404},
	}, p)
	want := traffic{list: 4, retrieve: 7, disputes: 2, aboutGrace: 2, retrievedAgain: 3, notFound: 1, unavailable: 1, unplanned: 4}
	if got != want {
		t.Errorf("readLog = %+v, want %+v", got, want)
	}
}

func TestLagWhyExcusesOnlyTheDemosOldRows(t *testing.T) {
	failing := reconcile.Check{Name: "lag", OK: false}
	for _, tc := range []struct {
		name       string
		c          reconcile.Check
		lag        time.Duration
		unverified int64
		excused    bool
	}{
		{"rows planted a week back, some unverified", failing, history - time.Hour, 120, true},
		{"the check passes", reconcile.Check{Name: "lag", OK: true}, history, 120, false},
		{"another check", reconcile.Check{Name: "cycle_age", OK: false}, history, 120, false},
		{"every row verified", failing, history, 0, false},
		{"older than the demo's rows and the run", failing, history + 25*time.Hour, 120, false},
	} {
		got := lagWhy(tc.c, reconcile.Status{Lag: tc.lag}, tc.unverified)
		if (got != "") != tc.excused {
			t.Errorf("%s: %q, want excused %v", tc.name, got, tc.excused)
		}
	}
}
