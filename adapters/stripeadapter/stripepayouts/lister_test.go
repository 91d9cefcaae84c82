package stripepayouts_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

func TestConfigIsChecked(t *testing.T) {
	t.Parallel()
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: "sk_test_x"}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]stripepayouts.Config{
		"PerPage negative":       {PerPage: -1},
		"PerPage above 100":      {PerPage: 101},
		"MaxStartPages negative": {MaxStartPages: -1},
		"Since before 1970":      {Since: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, err := stripepayouts.New(gw, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := stripepayouts.New((*stripeadapter.ObjectGateway[*stripe.Payout])(nil), stripepayouts.Config{}); err == nil {
		t.Error("a nil gateway accepted")
	}
}

// walk lists groups from pos with a new Lister each page, as a process restarted between
// steps would, until the end of the pass; it returns the payout ids in order and the position.
func walk(t *testing.T, srv *stripetest.Server, cfg stripepayouts.Config, pos string) ([]string, string) {
	t.Helper()
	var ids []string
	for range 100 {
		page, err := newLister(t, srv, cfg).Groups(context.Background(), pos)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range page.Groups {
			ids = append(ids, g.ID)
		}
		if len(page.Groups) > cfg.PerPage || page.Next == "" {
			t.Fatalf("page of %d groups, next %q", len(page.Groups), page.Next)
		}
		pos = page.Next
		if page.End {
			return ids, pos
		}
	}
	t.Fatal("no end")
	return nil, ""
}

// The walk goes oldest first, PerPage at a time, through payouts created in the same second
// too, and survives a restart between pages: it neither skips nor repeats one. It stops before
// a payout whose lines are not final, and goes on from there once they are.
func TestTheWalkResumesFromItsPositionAndWaitsAtAPendingPayout(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	srv := newServer(t, clk)
	var all []string
	add := func(n int, sameSecond bool) {
		for range n {
			id := srv.AddPayout(stripetest.Payout{Manual: true, Amount: 100, Created: clk.now()})
			if err := srv.SetPayoutStatus(id, stripe.PayoutStatusPaid); err != nil {
				t.Fatal(err)
			}
			all = append(all, id)
			if !sameSecond {
				clk.add(time.Second)
			}
		}
	}
	add(7, false)
	add(12, true) // twelve in one second
	clk.add(time.Second)
	add(4, false)
	cfg := stripepayouts.Config{PerPage: 5}
	got, pos := walk(t, srv, cfg, "")
	if !slices.Equal(got, all) {
		t.Fatalf("walked %d payouts, want all %d in order:\n%q\n%q", len(got), len(all), got, all)
	}

	// A pending automatic payout, then paid ones: the walk waits before the pending one.
	srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000})
	clk.add(3 * 24 * time.Hour)
	pending := srv.AddPayout(stripetest.Payout{})
	clk.add(time.Second)
	var after []string
	for range 3 {
		after = append(after, srv.AddPayout(stripetest.Payout{Manual: true, Amount: 1, Status: stripe.PayoutStatusPaid}))
		clk.add(time.Second)
	}
	got, waiting := walk(t, srv, cfg, pos)
	if len(got) != 0 || waiting != pos {
		t.Fatalf("walked %q to %s past a pending payout", got, waiting)
	}
	// The payouts it waits at and behind are reported as seen, not tied out yet.
	page, err := newLister(t, srv, cfg).Groups(context.Background(), pos)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, g := range page.Pending {
		seen = append(seen, g.ID)
	}
	if want := append([]string{pending}, after...); !page.End || !slices.Equal(seen, want) {
		t.Fatalf("page waiting at a pending payout reports pending %q (end %v), want %q", seen, page.End, want)
	}
	if err := srv.SetPayoutStatus(pending, stripe.PayoutStatusInTransit); err != nil {
		t.Fatal(err)
	}
	if got, _ = walk(t, srv, cfg, pos); len(got) != 0 {
		t.Fatalf("walked %q past an in-transit payout", got)
	}
	if err := srv.SetPayoutStatus(pending, stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	if got, _ = walk(t, srv, cfg, pos); !slices.Equal(got, append([]string{pending}, after...)) {
		t.Fatalf("walked %q once the payout was paid, want it and the three after", got)
	}
	// A failed or canceled payout is final whatever its reconciliation.
	clk.add(3 * 24 * time.Hour)
	srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000})
	clk.add(3 * 24 * time.Hour)
	canceled := srv.AddPayout(stripetest.Payout{})
	if err := srv.CancelPayout(canceled); err != nil {
		t.Fatal(err)
	}
	_, end := walk(t, srv, cfg, pos)
	if !strings.Contains(end, canceled) {
		t.Errorf("the walk stopped at %s, before the canceled payout %s", end, canceled)
	}
}

// Without a position, the walk starts at Config.Since, and refuses to read more than
// MaxStartPages pages to find its oldest payout.
func TestTheStartIsBounded(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	srv := newServer(t, clk)
	var ps []stripetest.Payout
	for i := range 250 {
		ps = append(ps, stripetest.Payout{Manual: true, Amount: 1, Status: stripe.PayoutStatusPaid, Created: t0.Add(time.Duration(i) * time.Minute)})
	}
	ids := srv.AddPayouts(ps)
	if _, err := newLister(t, srv, stripepayouts.Config{MaxStartPages: 2}).Groups(context.Background(), ""); err == nil ||
		!strings.Contains(err.Error(), "Config.Since") {
		t.Errorf("a start past MaxStartPages: %v", err)
	}
	page, err := newLister(t, srv, stripepayouts.Config{MaxStartPages: 2, Since: t0.Add(100 * time.Minute)}).Groups(context.Background(), "")
	if err != nil || len(page.Groups) == 0 || page.Groups[0].ID != ids[100] {
		t.Errorf("a start at Since: %+v, %v; want %s first", page.Groups, err, ids[100])
	}
}

// A walk that waits at its very first payout asks for that payout and those after it (two
// calls a step), not for every payout since Since again; once the payout is final, the walk
// goes on from it, skipping none.
func TestAWalkWaitingAtItsFirstPayoutDoesNotReadTheWholeListAgain(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	srv := newServer(t, clk)
	srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000})
	clk.add(3 * 24 * time.Hour)
	first := srv.AddPayout(stripetest.Payout{})
	clk.add(time.Second)
	var ps []stripetest.Payout
	for i := range 250 {
		ps = append(ps, stripetest.Payout{Manual: true, Amount: 1, Status: stripe.PayoutStatusPaid, Created: clk.now().Add(time.Duration(i) * time.Second)})
	}
	rest := srv.AddPayouts(ps)
	cfg := stripepayouts.Config{PerPage: 5}
	page, err := newLister(t, srv, cfg).Groups(context.Background(), "")
	if err != nil || len(page.Groups) != 0 || !page.End {
		t.Fatalf("first step: %+v, %v; want it waiting at %s", page.Groups, err, first)
	}
	pos := page.Next
	calls := func() int { return srv.Requests(stripetest.ListPayouts) + srv.Requests(stripetest.RetrievePayout) }
	for range 3 {
		before := calls()
		page, err = newLister(t, srv, cfg).Groups(context.Background(), pos)
		if err != nil || len(page.Groups) != 0 || !page.End || len(page.Pending) == 0 || page.Pending[0].ID != first {
			t.Fatalf("a step waiting at the first payout: %+v, %v", page, err)
		}
		if n := calls() - before; n > 2 {
			t.Errorf("a step waiting at the first payout made %d calls, want at most 2", n)
		}
		pos = page.Next
	}
	if err := srv.SetPayoutStatus(first, stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	got, _ := walk(t, srv, cfg, pos)
	if want := append([]string{first}, rest...); !slices.Equal(got, want) {
		t.Fatalf("walked %d payouts once the first was paid, want %d in order", len(got), len(want))
	}
}

// Each group of a page comes with the position just after it: a step stopped by a rate limit
// after some of them resumes at the next one, neither skipping nor repeating a payout.
func TestEachGroupComesWithThePositionAfterIt(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	srv := newServer(t, clk)
	var ps []stripetest.Payout
	for i := range 7 {
		ps = append(ps, stripetest.Payout{Manual: true, Amount: 1, Status: stripe.PayoutStatusPaid, Created: t0.Add(time.Duration(i/3) * time.Second)})
	}
	ids := srv.AddPayouts(ps)
	cfg := stripepayouts.Config{PerPage: 5}
	page, err := newLister(t, srv, cfg).Groups(context.Background(), "")
	if err != nil || len(page.Groups) != 5 || len(page.Positions) != 5 || page.Positions[4] != page.Next {
		t.Fatalf("page %+v, %v: want 5 groups, each with its position, the last the page's", page, err)
	}
	for i, pos := range page.Positions {
		got, _ := walk(t, srv, cfg, pos)
		if !slices.Equal(got, ids[i+1:]) {
			t.Errorf("after group %d (%s): walked %q, want %q", i, page.Groups[i].ID, got, ids[i+1:])
		}
	}
}
