package browsertest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/console"
	"github.com/reconcilekit/reconcile/tieout"
)

// payoutLister lists its payouts, and one not final yet, in one page.
type payoutLister struct {
	groups  []tieout.Group
	pending []tieout.Group
	members map[string][]tieout.Member
}

func (l payoutLister) Groups(context.Context, string) (tieout.GroupPage, error) {
	return tieout.GroupPage{Groups: l.groups, Pending: l.pending, Next: "end", End: true}, nil
}

func (l payoutLister) Members(_ context.Context, g tieout.Group, _ string) (tieout.MemberPage, error) {
	return tieout.MemberPage{Members: l.members[g.ID]}, nil
}

// TestAReviewerTiesPayoutsOutInABrowser opens the payouts page in headless Chromium over a
// tie-out of three payouts (one holding, one short with a line never booked, one in transit):
// each payout's paid against its lines' sum, the overview's counts, a payout's page with its
// unmatched line, and from there the line's finding. No page breaks the
// Content-Security-Policy. The screenshots are among the artifacts.
func TestAReviewerTiesPayoutsOutInABrowser(t *testing.T) {
	b := newSession(t, "alice")
	ctx := context.Background()
	store := memstore.New[string, string](memstore.Options{})
	line := func(id, pi string, amount int64) tieout.Member {
		return tieout.Member{ID: id, Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_" + id, BookedID: pi, Amount: amount,
			Net: amount, Currency: "eur", SourceAmount: amount, SourceCurrency: "eur"}
	}
	payout := func(id, status string, state tieout.GroupState, amount int64) tieout.Group {
		return tieout.Group{ID: id, Status: status, State: state, Amount: amount, Currency: "eur", Itemized: true}
	}
	lister := payoutLister{
		groups:  []tieout.Group{payout("po_1Held", "paid", tieout.GroupPaid, 125_000), payout("po_1Short", "paid", tieout.GroupPaid, 98_050)},
		pending: []tieout.Group{payout("po_1Moving", "in_transit", tieout.GroupPending, 4_200)},
		members: map[string][]tieout.Member{
			"po_1Held":  {line("txn_1", "pi_1", 125_000)},
			"po_1Short": {line("txn_2", "pi_2", 90_000), line("txn_3", "pi_never_booked", 7_500)},
		},
	}
	var ledger tieout.MemoryLedger
	ledger.Book(tieout.Booked{Kind: tieout.KindPayment, ID: "pi_1", Amount: 125_000, Currency: "eur", Basis: tieout.Presentment},
		tieout.Booked{Kind: tieout.KindPayment, ID: "pi_2", Amount: 90_000, Currency: "eur", Basis: tieout.Presentment})
	step, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &ledger, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := step.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	short, err := store.ListGroups(ctx, reconcile.GroupQuery{Status: "paid", State: reconcile.GroupsNotHeld})
	if err != nil || len(short) != 1 {
		t.Fatalf("the short payout's record = %+v, %v", short, err)
	}
	c, err := console.New(console.Config{Store: store, Authenticate: headerAuth, Jobs: []string{"payouts"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/review/", http.StripPrefix("/review", c))
	policy := httptest.NewRecorder()
	c.ServeHTTP(policy, httptest.NewRequest(http.MethodGet, "/", nil))
	csp := policy.Header().Get("Content-Security-Policy")
	mux.HandleFunc("/canary", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Security-Policy", csp)
		fmt.Fprint(rw, `<!doctype html><title>canary</title><p style="color:red">canary</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	v := &violations{}
	if err := chromedp.Listen(b.ctx, v.listen); err != nil {
		t.Fatal(err)
	}
	b.do("open the canary", chromedp.Navigate(srv.URL+"/canary?first"), v.waitFor(srv.URL+"/canary?first"))

	// 1. The overview counts the payout in transit and the short one.
	b.do("open the overview", chromedp.Navigate(srv.URL+"/review/"), chromedp.WaitVisible(chromedp.CSS(`#payouts`)), b.screenshot("overview"))
	if got := b.text("#payouts-pending") + " " + b.text("#payouts-not-held"); got != "1 1" {
		t.Errorf("the overview counts %q payouts not tied out and not holding; want 1 1", got)
	}

	// 2. The payouts page: paid against the lines' sum.
	row := fmt.Sprintf("#payout-%d", short[0].Seq)
	b.do("open the payouts", chromedp.Click(chromedp.CSS(`#nav-payouts`)), chromedp.WaitVisible(chromedp.CSS(`#payouts`)), b.screenshot("payouts"))
	for sel, want := range map[string]string{row + " td.paid": "EUR 980.50", row + " td.expected": "EUR 975.00",
		row + " td.difference": "EUR -5.50", row + " td.unmatched": "1", row + " td.state": "does not hold"} {
		if got := b.text(sel); got != want {
			t.Errorf("%s reads %q; want %q", sel, got, want)
		}
	}

	// 3. Its page: the unmatched line, and from there its finding.
	b.do("open the short payout", chromedp.Click(chromedp.CSS(row+" td.unmatched a")), chromedp.WaitVisible(chromedp.CSS(`#lines`)),
		b.screenshot("payout"))
	if got := b.text("#lines"); !strings.Contains(got, "txn_3") || !strings.Contains(got, "unbooked_payment") ||
		!strings.Contains(got, "payout_sum_mismatch") {
		t.Errorf("the payout's lines read %q", got)
	}
	b.do("open the line's finding", chromedp.Click(chromedp.CSS(`#lines tbody tr td a`)), chromedp.WaitVisible(chromedp.CSS(`#state`)))
	if !strings.Contains(b.location(), "/review/findings/") {
		t.Errorf("the line's link led to %s", b.location())
	}

	b.do("open the canary again", chromedp.Navigate(srv.URL+"/canary?again"), v.waitFor(srv.URL+"/canary?again"))
	if got := v.on(srv.URL + "/review/"); len(got) > 0 {
		t.Errorf("the payouts pages broke the Content-Security-Policy:\n%s", strings.Join(got, "\n"))
	}
}
