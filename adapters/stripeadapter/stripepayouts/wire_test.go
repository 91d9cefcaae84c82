package stripepayouts_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/internal/stripemock"
	"github.com/reconcilekit/reconcile/tieout"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stripemock.Stop() // no stripe-mock outlives the test binary
	os.Exit(code)
}

// recorder notes each request's method, path, decoded query, Stripe-Account and answer status.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	q, _ := url.QueryUnescape(req.URL.RawQuery)
	line := req.Method + " " + req.URL.Path + "?" + q + " account=" + req.Header.Get("Stripe-Account")
	if resp != nil {
		line += " " + resp.Status
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, line)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// The exact requests the lister makes, for the platform and a connected account, are accepted
// by stripe-mock (Stripe's OpenAPI description: an unknown parameter, a bad expansion or a
// filter a list does not take is a 400 there), and its answers decode.
func TestWireTheListersRequestsMatchStripesSpec(t *testing.T) {
	base := stripemock.URL(t)
	ctx := context.Background()
	for _, account := range []string{"", "acct_1Connected"} {
		rec := &recorder{}
		gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: "sk_test_123", BaseURL: base,
			HTTPClient: &http.Client{Transport: rec}, StripeAccount: account}, stripeadapter.Payouts())
		if err != nil {
			t.Fatal(err)
		}
		l, err := stripepayouts.New(gw, stripepayouts.Config{Since: time.Unix(1700000000, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Groups(ctx, ""); err != nil {
			t.Fatalf("account %q: groups from the start: %v", account, err)
		}
		if _, err := l.Groups(ctx, `{"after":"po_1Ooo","created":1700000000}`); err != nil {
			t.Fatalf("account %q: groups after a payout: %v", account, err)
		}
		g := tieout.Group{ID: "po_1Ooo", Account: account, Itemized: true}
		page, err := l.Members(ctx, g, "")
		if err != nil {
			t.Fatalf("account %q: members: %v", account, err)
		}
		if len(page.Members) == 0 || page.Members[0].ID == "" {
			t.Errorf("account %q: members %+v: stripe-mock's fixture did not decode", account, page.Members)
		}
		if _, err := l.Members(ctx, g, "txn_1Ooo"); err != nil {
			t.Fatalf("account %q: members after a line: %v", account, err)
		}
		events, err := l.EventsLister(stripeadapter.EventsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Groups(ctx, ""); err != nil {
			t.Fatalf("account %q: events: %v", account, err)
		}
		// A manual payout costs no call.
		if _, err := l.Members(ctx, tieout.Group{ID: "po_1Manual", Account: account}, ""); err != nil {
			t.Fatal(err)
		}
		suffix := " account=" + account + " 200 OK"
		want := []string{
			"GET /v1/payouts?created[gte]=1700000000&limit=100" + suffix,
			"GET /v1/payouts?ending_before=po_1Ooo&limit=10" + suffix,
			"GET /v1/balance_transactions?expand[]=data.source&limit=100&payout=po_1Ooo" + suffix,
			"GET /v1/balance_transactions?expand[]=data.source&limit=100&payout=po_1Ooo&starting_after=txn_1Ooo" + suffix,
		}
		got := rec.take()
		if !slices.Equal(got[:min(len(got), len(want))], want) {
			t.Errorf("account %q: requests\n%q\nwant them to start with\n%q", account, got, want)
		}
		// Then the events lane's anchor: the newest payout event, by the four types.
		if rest := got[min(len(got), len(want)):]; len(rest) != 1 || !strings.HasPrefix(rest[0], "GET /v1/events?limit=1&created[lte]=") ||
			!strings.HasSuffix(rest[0], "&types[0]=payout.reconciliation_completed&types[1]=payout.paid&types[2]=payout.failed&types[3]=payout.canceled"+suffix) {
			t.Errorf("account %q: the events lane's requests %q", account, rest)
		}
	}
}
