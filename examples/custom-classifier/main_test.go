package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func runDemo(t *testing.T, opts options) (result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := run(ctx, &out, opts)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return res, out.String()
}

func TestTheDemoPassesItsChecks(t *testing.T) {
	res, out := runDemo(t, options{IdempotencyKeys: true})
	for _, c := range res.Checks {
		if c.Err != nil {
			t.Errorf("check %q failed: %v", c.Name, c.Err)
		}
	}
	if !res.OK() || !strings.Contains(out, "checks:") || strings.Contains(out, "FAIL") {
		t.Fatalf("the run did not pass:\n%s", out)
	}

	t.Run("the provider is the truth for status: ours caught up", func(t *testing.T) {
		if got := res.Ours["5"].Status; got != "canceled" {
			t.Errorf("row 5 is %s, want canceled", got)
		}
		if got := res.Ours["7"].Status; got != "active" {
			t.Errorf("row 7 is %s, want active", got)
		}
	})
	t.Run("ours is the truth for seats: the provider caught up", func(t *testing.T) {
		if got := res.Theirs["sub_1002"].Quantity; got != 12 {
			t.Errorf("sub_1002 bills %d seats, want 12", got)
		}
		if got := res.Theirs["sub_1013"].Quantity; got != 4 {
			t.Errorf("sub_1013 bills %d seats, want 4", got)
		}
		if got := res.Theirs["sub_1003"].Quantity; got != 8 {
			t.Errorf("sub_1003 (overbilled, for a person) bills %d seats, want 8 untouched", got)
		}
	})
	t.Run("the retried push reached the provider twice with one key and applied once", func(t *testing.T) {
		if got := res.Requests["sub_1013"]; got != 2 {
			t.Errorf("sub_1013 got %d update requests, want 2", got)
		}
		var applied []Change
		for _, c := range res.Changes {
			if c.Subscription == "sub_1013" {
				applied = append(applied, c)
			}
		}
		if len(applied) != 1 || applied[0].From != 2 || applied[0].To != 4 {
			t.Errorf("sub_1013 changes %+v, want one from 2 to 4", applied)
		}
		var tries []Attempt
		for _, a := range res.Attempts {
			if a.Command.RecordID == "13" {
				tries = append(tries, a)
			}
		}
		if len(tries) != 2 || tries[0].Err == nil || tries[1].Err != nil {
			t.Fatalf("row 13 attempts %+v, want a failure then a success", tries)
		}
		if tries[0].Key == "" || tries[0].Key != tries[1].Key || tries[0].Key != IdempotencyKey(tries[0].Command) {
			t.Errorf("keys %q and %q: want the same key, derived from the command", tries[0].Key, tries[1].Key)
		}
		if !strings.Contains(tries[1].Did, "replayed") {
			t.Errorf("second attempt did %q, want a replay", tries[1].Did)
		}
		if len(res.Changes) != 2 {
			t.Errorf("the provider applied %d updates, want 2 (one per push): %+v", len(res.Changes), res.Changes)
		}
	})
	t.Run("what is left is for a person, and the unreachable row is unverified", func(t *testing.T) {
		var open []string
		for _, f := range res.Findings {
			if f.Open() {
				open = append(open, f.RecordID+" "+f.Kind)
			}
		}
		want := "3 seats_overbilled,4 price_mismatch,6 billed_after_cancel,9 unexpected:active->past_due,10 missing_externally"
		if got := strings.Join(open, ","); got != want {
			t.Errorf("open findings %s, want %s", got, want)
		}
		if got := strings.Join(res.Unverified, ","); got != "11" {
			t.Errorf("unverified rows %s, want 11", got)
		}
	})
}

func TestWithoutIdempotencyKeysTheRetriedPushAppliesTwice(t *testing.T) {
	res, out := runDemo(t, options{IdempotencyKeys: false})
	if res.OK() {
		t.Fatalf("the run passed its checks without idempotency keys:\n%s", out)
	}
	applied := 0
	for _, c := range res.Changes {
		if c.Subscription == "sub_1013" {
			applied++
		}
	}
	if applied != 2 {
		t.Errorf("without a key the provider applied %d updates of sub_1013, want 2", applied)
	}
	for _, c := range res.Checks {
		if failed := c.Err != nil; failed != strings.HasPrefix(c.Name, "each push applied once") {
			t.Errorf("check %q: failed %v (%v); only the push check should fail", c.Name, failed, c.Err)
		}
	}
	if !strings.Contains(out, "FAIL each push applied once") {
		t.Errorf("the output does not report the failed check:\n%s", out)
	}
}

func TestTheOutputIsTheSameEveryRun(t *testing.T) {
	_, first := runDemo(t, options{IdempotencyKeys: true})
	_, second := runDemo(t, options{IdempotencyKeys: true})
	if first != second {
		t.Errorf("two runs printed different summaries:\n%s\n---\n%s", first, second)
	}
}

func TestIdempotencyKeyDependsOnTheCommandOnly(t *testing.T) {
	base := reconcile.Command{Name: CmdPushSeats, Job: Job, RecordID: "13", FindingID: 9,
		Kind: KindSeatsUnderbilled, ExpectedLocal: "active, 4 seats at 9.00", External: "active, 2 seats at 9.00"}
	k := IdempotencyKey(base)
	if k != IdempotencyKey(base) || !strings.HasPrefix(k, "reconcile-") || len(k) != len("reconcile-")+64 {
		t.Fatalf("key %q: want a stable reconcile- prefixed sha256", k)
	}
	for name, change := range map[string]func(*reconcile.Command){
		"another job":     func(c *reconcile.Command) { c.Job = "other" },
		"another record":  func(c *reconcile.Command) { c.RecordID = "14" },
		"another finding": func(c *reconcile.Command) { c.FindingID = 10 },
		"another command": func(c *reconcile.Command) { c.Name = "PushPrice" },
	} {
		c := base
		change(&c)
		if IdempotencyKey(c) == k {
			t.Errorf("%s: same key", name)
		}
	}
}

func TestClassifier(t *testing.T) {
	c, err := NewClassifier()
	if err != nil {
		t.Fatal(err)
	}
	sub := func(status string, seats int, price int64) Subscription {
		return Subscription{Status: status, Seats: seats, UnitPrice: price}
	}
	rem := func(status string, seats int, price int64) Remote {
		return Remote{Status: status, Quantity: seats, UnitAmount: price}
	}
	tests := []struct {
		name    string
		ours    Subscription
		theirs  Remote
		verdict reconcile.Verdict
		kind    string
		command string
	}{
		{"both active with the same seats and price are in sync", sub("active", 3, 900), rem("active", 3, 900), reconcile.InSync, "", ""},
		{"both canceled are in sync whatever the seats", sub("canceled", 3, 900), rem("canceled", 1, 900), reconcile.InSync, "", ""},
		{"fewer seats billed than sold pushes ours", sub("active", 5, 900), rem("active", 3, 900), reconcile.Repairable, KindSeatsUnderbilled, CmdPushSeats},
		{"more seats billed than sold is for a person", sub("active", 3, 900), rem("active", 5, 900), reconcile.NeedsReview, KindSeatsOverbilled, ""},
		{"another price is for a person, before any seat push", sub("active", 5, 900), rem("active", 3, 700), reconcile.NeedsReview, KindPriceMismatch, ""},
		{"canceled at the provider catches ours up", sub("active", 3, 900), rem("canceled", 3, 900), reconcile.Repairable, KindMissedCancellation, CmdApplyCanceled},
		{"billed after we canceled is for a person", sub("canceled", 3, 900), rem("active", 3, 900), reconcile.NeedsReview, KindBilledAfterCancel, ""},
		{"a completing checkout is judged later", sub("pending", 3, 900), rem("incomplete", 3, 900), reconcile.InFlight, "", ""},
		{"an activated checkout catches ours up", sub("pending", 3, 900), rem("active", 3, 900), reconcile.Repairable, KindMissedActivation, CmdApplyActivated},
		{"a combination no rule names is for a person", sub("active", 3, 900), rem("past_due", 3, 900), reconcile.NeedsReview, "unexpected:active->past_due", ""},
		{"a pending row the provider canceled is unexpected", sub("pending", 3, 900), rem("canceled", 3, 900), reconcile.NeedsReview, "unexpected:pending->canceled", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := c.Classify(tt.ours, tt.theirs)
			if d.Verdict != tt.verdict || d.Kind != tt.kind || d.Command != tt.command {
				t.Errorf("got %s %q %q, want %s %q %q", d.Verdict, d.Kind, d.Command, tt.verdict, tt.kind, tt.command)
			}
			if err := d.Validate(); err != nil {
				t.Error(err)
			}
			if hasFinding := d.Kind != ""; hasFinding != (d.Detail != "") {
				t.Errorf("detail %q for kind %q: want one exactly with a finding", d.Detail, d.Kind)
			}
		})
	}
	if got := c.LocalState(sub("active", 12, 950)); got != "active, 12 seats at 9.50" {
		t.Errorf("LocalState = %q", got)
	}
}

func TestProviderReplaysOnlyTheSameRequestWithTheSameKey(t *testing.T) {
	p := NewProvider()
	defer p.Close()
	p.Add(Remote{ID: "sub_1", Status: "active", Quantity: 1, UnitAmount: 900})
	b := NewBilling(p.URL())
	ctx := context.Background()

	if _, replayed, err := b.SetQuantity(ctx, "sub_1", 2, "k1"); err != nil || replayed {
		t.Fatalf("first push: replayed %v, err %v", replayed, err)
	}
	if s, replayed, err := b.SetQuantity(ctx, "sub_1", 2, "k1"); err != nil || !replayed || s.Quantity != 2 {
		t.Fatalf("same key: %+v replayed %v err %v, want the stored answer replayed", s, replayed, err)
	}
	var review *reconcile.ReviewError
	if _, _, err := b.SetQuantity(ctx, "sub_1", 3, "k1"); !errors.As(err, &review) {
		t.Fatalf("same key, other body: err %v, want a 400 for review", err)
	}
	if _, replayed, err := b.SetQuantity(ctx, "sub_1", 2, ""); err != nil || replayed {
		t.Fatalf("no key: replayed %v, err %v", replayed, err)
	}
	if got := len(p.Changes()); got != 2 {
		t.Errorf("%d updates applied, want 2: the first and the one without a key", got)
	}

	p.FailReads("sub_1")
	if _, err := b.Fetch(ctx, "sub_1"); reconcile.ErrorClass(err) != reconcile.ClassUnavailable {
		t.Errorf("a 503 read: %v, want ErrUnavailable", err)
	}
	if _, err := b.Fetch(ctx, "sub_2"); reconcile.ErrorClass(err) != reconcile.ClassNotFound {
		t.Errorf("an unknown subscription: %v, want ErrNotFound", err)
	}
	if err := b.CheckID("pi_123"); reconcile.ErrorClass(err) != reconcile.ClassReview {
		t.Errorf("CheckID(pi_123) = %v, want a ReviewError", err)
	}
}

func TestARepairDoesNotOverruleAPerson(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	provider := NewProvider()
	defer provider.Close()
	provider.Add(Remote{ID: "sub_1", Status: "active", Quantity: 10, UnitAmount: 900})
	store := memstore.New[int64, Subscription](memstore.Options{Now: clk.Now})
	store.Put(memstore.Row[int64, Subscription]{Key: 1, ExternalID: "sub_1",
		Local: Subscription{Status: "active", Seats: 12, UnitPrice: 900}, UpdatedAt: clk.Now().Add(-time.Hour)})
	classifier, err := NewClassifier()
	if err != nil {
		t.Fatal(err)
	}
	billing := NewBilling(provider.URL())
	rec, err := reconcile.New(reconcile.Config[Subscription, Remote]{
		Job: Job, Source: store, Sink: store, Gateway: billing, Classifier: classifier})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cycle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	cmds := store.Commands()
	if len(cmds) != 1 || cmds[0].Name != CmdPushSeats {
		t.Fatalf("commands %+v, want one push", cmds)
	}
	// A person decides the provider's count stands before the push is applied.
	if err := store.ResolveFinding(ctx, cmds[0].FindingID, reconcile.Resolution{
		As: reconcile.ResolutionAccepted, By: "alice", Note: "customer asked to keep 10"}); err != nil {
		t.Fatal(err)
	}
	r := &Repairer{store: store, billing: billing, classifier: classifier, now: clk.Now,
		withKeys: true, maxAttempts: 3, done: map[int64]bool{}}
	r.Apply(ctx)
	if got := provider.UpdateRequests("sub_1"); got != 0 {
		t.Errorf("the provider got %d update requests, want none", got)
	}
	if as := r.Attempts(); len(as) != 1 || !strings.Contains(as[0].Did, "skipped") {
		t.Errorf("attempts %+v, want one skip", as)
	}
	if f, err := store.Finding(ctx, cmds[0].FindingID); err != nil || f.Resolution != reconcile.ResolutionAccepted || f.ResolvedBy != "alice" {
		t.Errorf("finding %+v, %v: the person's resolution was overwritten", f, err)
	}
}
