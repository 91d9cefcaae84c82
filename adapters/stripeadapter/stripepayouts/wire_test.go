package stripepayouts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
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

// exchange is one request a lister made and the answer it got.
type exchange struct {
	method, path, query, account string
	body, answer                 []byte
	status                       int
}

// capture records every request and answer that passes through it.
type capture struct {
	mu  sync.Mutex
	all []exchange
}

func (c *capture) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	c.mu.Lock()
	c.all = append(c.all, exchange{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Get("Stripe-Account"), body, answer, resp.StatusCode})
	c.mu.Unlock()
	return resp, nil
}

// The exact requests a ReportLister makes to run a report (the report type, the run's
// creation with its interval, columns and currency, its retrieval) are accepted by stripe-mock,
// and the fake's answers have the top-level fields of stripe-mock's, of the same JSON types. The
// file's contents (files.stripe.com) are not in Stripe's OpenAPI description, so not in
// stripe-mock: their format is the report's documented columns, tested against the fake only.
func TestWireTheReportListersRequestsMatchStripesSpec(t *testing.T) {
	mock := stripemock.URL(t)
	w := newWorld(t)
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 1})
	c := &capture{}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(),
		HTTPClient: &http.Client{Transport: c}}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	l, err := stripepayouts.New(gw, stripepayouts.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.WithReports(stripepayouts.ReportOptions{PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	page, err := r.Groups(context.Background(), "")
	if err != nil || len(page.Groups) != 1 {
		t.Fatalf("groups: %+v, %v", page, err)
	}
	var routes []string
	for _, x := range c.all {
		routes = append(routes, x.method+" "+x.path)
		if x.account != "" {
			t.Errorf("%s %s for account %q: reports are the platform's", x.method, x.path, x.account)
		}
		if strings.HasPrefix(x.path, "/v1/payouts") || strings.HasPrefix(x.path, "/v1/files/") {
			continue
		}
		if x.method == http.MethodPost {
			form, err := url.ParseQuery(string(x.body))
			if err != nil || form.Get("report_type") != stripepayouts.ReportType || len(form["parameters[columns][]"]) != 13 ||
				form.Get("parameters[currency]") != "usd" || form.Get("parameters[interval_start]") == "" {
				t.Errorf("the run's creation sent %q", x.body)
			}
		}
		req, err := http.NewRequest(x.method, mock+x.path+"?"+x.query, bytes.NewReader(x.body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("sk_test_123", "")
		if x.method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || x.status != http.StatusOK {
			t.Errorf("%s %s?%s %s: stripe-mock answered %d %s, the fake %d", x.method, x.path, x.query, x.body, res.StatusCode, answer, x.status)
			continue
		}
		var want, got map[string]any
		if err := json.Unmarshal(answer, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(x.answer, &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if g, ok := got[k]; !ok || want[k] != nil && g != nil && fmt.Sprintf("%T", want[k]) != fmt.Sprintf("%T", g) {
				t.Errorf("%s %s: the fake's %q is %v, stripe-mock's %v", x.method, x.path, k, g, want[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s %s: the fake has %q, stripe-mock not", x.method, x.path, k)
			}
		}
		if res, ok := got["result"].(map[string]any); ok {
			wres, _ := want["result"].(map[string]any)
			for k := range res {
				if _, ok := wres[k]; !ok {
					t.Errorf("the fake's result file has %q, stripe-mock's not", k)
				}
			}
		}
	}
	want := []string{"GET /v1/payouts", "GET /v1/reporting/report_types/" + stripepayouts.ReportType, "POST /v1/reporting/report_runs",
		"GET /v1/reporting/report_runs/", "GET /v1/reporting/report_runs/", "GET /v1/files/"}
	if len(routes) != len(want) {
		t.Fatalf("requests %q, want %q", routes, want)
	}
	for i := range want {
		if !strings.HasPrefix(routes[i], want[i]) {
			t.Errorf("request %d is %s, want %s...", i, routes[i], want[i])
		}
	}
}
