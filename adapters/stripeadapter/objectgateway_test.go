package stripeadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// refunds describes Refunds, an object the project does not ship, as a host would.
func refunds() stripeadapter.Object[*stripe.Refund] {
	return stripeadapter.Object[*stripe.Refund]{
		Name:       "refund",
		Path:       "/v1/refunds",
		IDPrefix:   "re_",
		EventTypes: []string{"refund.created", "refund.updated", "refund.failed"},
		ID:         func(r *stripe.Refund) string { return r.ID },
		Created:    func(r *stripe.Refund) int64 { return r.Created },
		State:      func(r *stripe.Refund) string { return string(r.Status) },
	}
}

// refundWorld is a stripetest server holding n refunds, one per succeeded intent, created a
// second apart from base.
type refundWorld struct {
	srv   *stripetest.Server
	base  time.Time
	mu    sync.Mutex
	clock time.Time
	ids   []string // refund ids, oldest first
}

func (w *refundWorld) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clock
}

func (w *refundWorld) set(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock = t
}

func newRefundWorld(t *testing.T, n int, account string) *refundWorld {
	t.Helper()
	w := &refundWorld{base: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w.clock = w.base
	w.srv = stripetest.NewServer(stripetest.Options{Now: w.now})
	t.Cleanup(w.srv.Close)
	for i := range n {
		w.set(w.base.Add(time.Duration(i) * time.Second))
		pi := w.srv.AddPaymentIntent(stripetest.PaymentIntent{Account: account, Amount: 1000, Status: stripe.PaymentIntentStatusSucceeded})
		re, err := w.srv.Refund(pi, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.ids = append(w.ids, re)
	}
	w.srv.ResetLog()
	return w
}

func (w *refundWorld) gateway(t *testing.T, mod func(*stripeadapter.GatewayConfig)) *stripeadapter.ObjectGateway[*stripe.Refund] {
	t.Helper()
	cfg := stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	g, err := stripeadapter.NewObjectGateway(cfg, refunds())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func noWait(context.Context) error { return nil }

// newStub serves h over HTTP for the test's duration and returns its URL.
func newStub(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestObjectGatewayChecksIDsWithoutACall(t *testing.T) {
	w := newRefundWorld(t, 1, "")
	g := w.gateway(t, nil)
	if err := g.CheckID(w.ids[0]); err != nil {
		t.Fatalf("CheckID(%s) = %v", w.ids[0], err)
	}
	for _, id := range []string{"", "pi_123", "re_1/../../v1/charges", "re_", "re_1_secret_2", " re_1"} {
		err := g.CheckID(id)
		var re *reconcile.ReviewError
		if !errors.As(err, &re) || re.Kind != reconcile.KindInvalidExternalID {
			t.Errorf("CheckID(%q) = %v, want an invalid_external_id ReviewError", id, err)
		}
		if _, err := g.Fetch(context.Background(), id); !errors.As(err, &re) || re.Kind != reconcile.KindInvalidExternalID {
			t.Errorf("Fetch(%q) = %v, want an invalid_external_id ReviewError", id, err)
		}
	}
	if n := len(w.srv.Log()); n != 0 {
		t.Fatalf("%d requests for invalid ids, want none", n)
	}
}

func TestObjectGatewayMapsStripeAnswers(t *testing.T) {
	w := newRefundWorld(t, 1, "")
	g := w.gateway(t, nil)
	ctx := context.Background()
	r, err := g.Fetch(ctx, w.ids[0])
	if err != nil || r.ID != w.ids[0] || r.Status != stripe.RefundStatusSucceeded || r.Created != w.base.Unix() {
		t.Fatalf("Fetch = %+v, %v; want the succeeded refund", r, err)
	}
	if _, err := g.Fetch(ctx, "re_missing"); !errors.Is(err, reconcile.ErrNotFound) {
		t.Errorf("Fetch of an unknown refund = %v, want ErrNotFound", err)
	}

	w.srv.Inject(stripetest.RetrieveRefund, stripetest.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}, Times: 1})
	var rl *reconcile.RateLimitError
	if _, err := g.Fetch(ctx, w.ids[0]); !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Errorf("Fetch under a 429 = %v, want a RateLimitError retrying after 7s", err)
	}
	w.srv.Inject(stripetest.RetrieveRefund, stripetest.Fault{Status: http.StatusServiceUnavailable, Times: 1})
	if _, err := g.Fetch(ctx, w.ids[0]); !errors.Is(err, reconcile.ErrUnavailable) {
		t.Errorf("Fetch under a 503 = %v, want ErrUnavailable", err)
	}
	w.srv.Inject(stripetest.ListRefunds, stripetest.Fault{Status: http.StatusInternalServerError, Times: 1})
	lookups := []reconcile.Lookup{{ExternalID: w.ids[0], CreatedAt: w.base}, {ExternalID: "re_other", CreatedAt: w.base}}
	if _, err := g.FetchBatch(ctx, lookups, noWait); !errors.Is(err, reconcile.ErrUnavailable) {
		t.Errorf("FetchBatch under a 500 = %v, want ErrUnavailable", err)
	}
	w.srv.Inject(stripetest.ListRefunds, stripetest.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"3"}}, Times: 1})
	if _, err := g.FetchBatch(ctx, lookups, noWait); !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
		t.Errorf("FetchBatch under a 429 = %v, want a RateLimitError retrying after 3s", err)
	}
}

// A 429 whose body is not Stripe's (a proxy's page) is still a rate limit, and a 200 about
// another object or without a state verifies nothing: the client defaults hold for any object.
func TestObjectGatewayKeepsTheClientDefaults(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stub  *cannedStripe
		check func(error) bool
	}{
		{"a proxy's 429", &cannedStripe{status: 429, body: "<html>slow down</html>", header: map[string]string{"Content-Type": "text/html", "Retry-After": "2"}},
			func(err error) bool { return errors.Is(err, reconcile.ErrRateLimited) }},
		{"a 200 about another refund", &cannedStripe{status: 200, body: `{"id":"re_other","object":"refund","status":"succeeded"}`},
			func(err error) bool { return errors.Is(err, reconcile.ErrUnavailable) }},
		{"a 200 without a status", &cannedStripe{status: 200, body: `{"id":"re_1","object":"refund"}`},
			func(err error) bool { return errors.Is(err, reconcile.ErrUnavailable) }},
		{"a 401", &cannedStripe{status: 401, body: stripeError("invalid_request_error", "", "Invalid API Key provided: "+secretKey)},
			func(err error) bool {
				return errors.Is(err, reconcile.ErrAbortBatch) && !strings.Contains(err.Error(), secretKey)
			}},
		{"a 400", &cannedStripe{status: 400, body: stripeError("invalid_request_error", "parameter_unknown", "Received unknown parameter")},
			func(err error) bool {
				var re *reconcile.ReviewError
				return errors.As(err, &re) && re.Kind == reconcile.KindRejected
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := tt.stub
			srv := newStub(t, stub)
			g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: secretKey, BaseURL: srv}, refunds())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Fetch(context.Background(), "re_1"); !tt.check(err) {
				t.Fatalf("Fetch = %v", err)
			}
			if stub.calls.Load() != 1 {
				t.Fatalf("%d calls, want exactly one (no retries)", stub.calls.Load())
			}
		})
	}
}

func TestObjectGatewayListsByCreatedWindow(t *testing.T) {
	w := newRefundWorld(t, 250, "")
	g := w.gateway(t, nil)
	var lookups []reconcile.Lookup
	for i := 50; i < 200; i++ { // the rows' created_at a few seconds before their refunds
		lookups = append(lookups, reconcile.Lookup{ExternalID: w.ids[i], CreatedAt: w.base.Add(time.Duration(i-3) * time.Second)})
	}
	got, err := g.FetchBatch(context.Background(), lookups, noWait)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lookups {
		if r := got[l.ExternalID]; r == nil || r.ID != l.ExternalID || r.Status != stripe.RefundStatusSucceeded {
			t.Fatalf("FetchBatch lacks %s: %v", l.ExternalID, r)
		}
	}
	lists := w.srv.Requests(stripetest.ListRefunds)
	if lists == 0 || lists > 4 || w.srv.Requests(stripetest.RetrieveRefund) != 0 {
		t.Fatalf("%d list and %d retrieve calls for 150 rows, want at most 4 lists", lists, w.srv.Requests(stripetest.RetrieveRefund))
	}
	for _, r := range w.srv.Log() {
		if r.Query.Get("created[gte]") == "" || r.Query.Get("created[lte]") == "" || r.Query.Get("limit") != "100" {
			t.Errorf("list call %v without its created window or page size", r.Query)
		}
	}
}

func TestObjectGatewayFallsBackToOneByOne(t *testing.T) {
	w := newRefundWorld(t, 300, "")
	g := w.gateway(t, nil)
	// Rows created a day before their refunds: the window shows none of them, and after two
	// barren pages the rest is left to Fetch.
	var lookups []reconcile.Lookup
	for i := range 300 {
		lookups = append(lookups, reconcile.Lookup{ExternalID: w.ids[i], CreatedAt: w.base.Add(-24*time.Hour + time.Duration(i)*time.Second)})
	}
	got, err := g.FetchBatch(context.Background(), lookups, noWait)
	if err != nil || len(got) != 0 {
		t.Fatalf("FetchBatch = %d objects, %v; want none from a misaligned window", len(got), err)
	}
	if n := w.srv.Requests(stripetest.ListRefunds); n > 2 {
		t.Fatalf("%d list calls for a barren window, want at most 2", n)
	}
	// The engine asks the rest one at a time: a batch's verdicts do not depend on the hints.
	for _, l := range lookups[:3] {
		if r, err := g.Fetch(context.Background(), l.ExternalID); err != nil || r.ID != l.ExternalID {
			t.Fatalf("Fetch(%s) = %v, %v", l.ExternalID, r, err)
		}
	}

	// An object whose list has no created filter is never listed in bulk.
	obj := refunds()
	obj.NoCreatedFilter = true
	ng, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, obj)
	if err != nil {
		t.Fatal(err)
	}
	w.srv.ResetLog()
	if got, err := ng.FetchBatch(context.Background(), lookups, noWait); err != nil || len(got) != 0 || len(w.srv.Log()) != 0 {
		t.Fatalf("FetchBatch without a created filter = %d objects, %v, %d calls; want none", len(got), err, len(w.srv.Log()))
	}
}

func TestObjectEventsFeedYieldsTheNewestStateOfEachObject(t *testing.T) {
	w := newRefundWorld(t, 3, "")
	g := w.gateway(t, nil)
	feedNow := func() time.Time { return w.now().Add(2 * time.Minute) } // past Settle
	f, err := g.EventsFeed(stripeadapter.EventsOptions{Now: feedNow})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	page, err := f.Next(ctx, "", noWait) // anchors at the newest event
	if err != nil || len(page.Objects) != 0 || page.Next == "" {
		t.Fatalf("first step = %+v, %v; want an anchor", page, err)
	}
	w.set(w.now().Add(time.Minute))
	if err := w.srv.SetRefundStatus(w.ids[1], stripe.RefundStatusFailed, ""); err != nil {
		t.Fatal(err)
	}
	w.srv.ResetLog()
	page, err = f.Next(ctx, page.Next, noWait)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].ExternalID != w.ids[1] || page.Objects[0].Object.Status != stripe.RefundStatusFailed ||
		!page.Objects[0].ObservedAt.Equal(w.now()) {
		t.Fatalf("objects = %+v, want the failed refund observed at its event", page.Objects)
	}
	for _, r := range w.srv.Log() {
		if r.Route == stripetest.ListEvents && len(r.Query["types[]"])+len(r.Query["types[0]"]) == 0 {
			t.Errorf("events listed without the object's types: %v", r.Query)
		}
	}
}

func TestObjectReverseFeedListsTheWindowNewestFirst(t *testing.T) {
	w := newRefundWorld(t, 150, "")
	g := w.gateway(t, nil)
	now := w.base.Add(time.Hour)
	f, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.Refund]{
		Window: 2 * time.Hour, MinAge: time.Minute, Now: func() time.Time { return now },
		Include: func(r *stripe.Refund) bool { return r.ID != w.ids[0] },
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	pos := ""
	for step := 0; ; step++ {
		page, err := f.Next(context.Background(), pos, noWait)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			seen = append(seen, o.ExternalID)
		}
		if page.End {
			break
		}
		if step > 3 {
			t.Fatal("the pass does not end")
		}
		pos = page.Next
	}
	if len(seen) != 149 || seen[0] != w.ids[149] || seen[148] != w.ids[1] {
		t.Fatalf("saw %d refunds (first %v), want the 149 included ones newest first", len(seen), seen[:min(3, len(seen))])
	}
	if n := w.srv.Requests(stripetest.ListRefunds); n != 2 {
		t.Fatalf("%d list calls, want 2 pages", n)
	}
}

func TestObjectGatewayForAccountSendsTheHeaderAndKeepsAccountsApart(t *testing.T) {
	const acct = "acct_1KitTest"
	w := newRefundWorld(t, 120, acct)
	platform := w.gateway(t, nil)
	g, err := platform.ForAccount(acct)
	if err != nil {
		t.Fatal(err)
	}
	if g.Account() != acct || platform.Account() != "" {
		t.Fatalf("accounts %q and %q", g.Account(), platform.Account())
	}
	ctx := context.Background()
	if _, err := platform.Fetch(ctx, w.ids[0]); !errors.Is(err, reconcile.ErrNotFound) {
		t.Fatalf("the platform found a connected account's refund: %v", err)
	}
	if r, err := g.Fetch(ctx, w.ids[0]); err != nil || r.ID != w.ids[0] {
		t.Fatalf("Fetch for the account = %v, %v", r, err)
	}
	// The account's bulk fetch lists 100 refunds and keeps those not asked about; the
	// platform's gateway must not be served them from its look-ahead.
	since := time.Now()
	lookups := []reconcile.Lookup{{ExternalID: w.ids[118], CreatedAt: w.base.Add(118 * time.Second)}, {ExternalID: w.ids[119], CreatedAt: w.base.Add(119 * time.Second)}}
	if got, err := g.FetchBatchSince(ctx, lookups, since, noWait); err != nil || len(got) != 2 {
		t.Fatalf("FetchBatchSince for the account = %d, %v", len(got), err)
	}
	later := []reconcile.Lookup{{ExternalID: w.ids[30], CreatedAt: w.base.Add(30 * time.Second)}, {ExternalID: w.ids[31], CreatedAt: w.base.Add(31 * time.Second)}}
	if got, _ := platform.FetchBatchSince(ctx, later, since, noWait); len(got) != 0 {
		t.Fatalf("the platform was served the account's refunds: %v", got)
	}
	w.srv.ResetLog()
	if got, err := g.FetchBatchSince(ctx, later, since, noWait); err != nil || len(got) != 2 || len(w.srv.Log()) != 0 {
		t.Fatalf("the account's next batch = %d, %v, %d calls; want both from its look-ahead", len(got), err, len(w.srv.Log()))
	}
	w.srv.ResetLog()
	if _, err := g.Fetch(ctx, w.ids[5]); err != nil {
		t.Fatal(err)
	}
	if _, err := platform.Fetch(ctx, w.ids[5]); err == nil {
		t.Fatal("the platform read the account's refund")
	}
	log := w.srv.Log()
	if len(log) != 2 || log[0].StripeAccount != acct || log[1].StripeAccount != "" {
		t.Fatalf("Stripe-Account headers %+v, want %s then none", log, acct)
	}

	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, g); strings.Contains(s, w.srv.Key()) || !strings.Contains(s, acct) {
			t.Errorf("%s of the gateway = %s, want its account and no key", format, s)
		}
	}
	for _, bad := range []string{"", "acct", "cus_1", "acct_1\r\nX-Evil: 1", "acct_" + secretKey} {
		if _, err := platform.ForAccount(bad); err == nil || strings.Contains(err.Error(), secretKey) {
			t.Errorf("ForAccount(%q) = %v, want a refusal without the key", bad, err)
		}
	}
	if _, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: secretKey, StripeAccount: acct}, stripeadapter.Accounts()); err == nil {
		t.Error("an accounts gateway for a connected account was built")
	}
	accounts, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: secretKey}, stripeadapter.Accounts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := accounts.ForAccount(acct); err == nil {
		t.Error("an accounts gateway was moved to a connected account")
	}
}

func TestNewObjectGatewayRejectsABadDescriptor(t *testing.T) {
	cfg := stripeadapter.GatewayConfig{Key: secretKey}
	for name, mod := range map[string]func(*stripeadapter.Object[*stripe.Refund]){
		"no name":             func(o *stripeadapter.Object[*stripe.Refund]) { o.Name = "" },
		"a path with a query": func(o *stripeadapter.Object[*stripe.Refund]) { o.Path = "/v1/refunds?x=1" },
		"a path outside v1":   func(o *stripeadapter.Object[*stripe.Refund]) { o.Path = "refunds" },
		"no prefix":           func(o *stripeadapter.Object[*stripe.Refund]) { o.IDPrefix = "" },
		"no state":            func(o *stripeadapter.Object[*stripe.Refund]) { o.State = nil },
		"a list param it sends": func(o *stripeadapter.Object[*stripe.Refund]) {
			o.ListParams = map[string][]string{"created[gte]": {"1"}}
		},
		"a list expand":      func(o *stripeadapter.Object[*stripe.Refund]) { o.Expand = []string{"data.charge"} },
		"two types with a *": func(o *stripeadapter.Object[*stripe.Refund]) { o.EventTypes = []string{"refund.*", "charge.refunded"} },
		"21 types": func(o *stripeadapter.Object[*stripe.Refund]) {
			o.EventTypes = nil
			for i := range 21 {
				o.EventTypes = append(o.EventTypes, fmt.Sprintf("refund.t%d", i))
			}
		},
	} {
		obj := refunds()
		mod(&obj)
		if _, err := stripeadapter.NewObjectGateway(cfg, obj); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The descriptor is copied: a host changing its value afterwards changes nothing.
	obj := stripeadapter.Subscriptions()
	g, err := stripeadapter.NewObjectGateway(cfg, obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.ListParams.Set("status", "active")
	if got := g.Object().ListParams.Get("status"); got != "all" {
		t.Fatalf("the gateway's status filter became %q", got)
	}
	if stripeadapter.Subscriptions().ListParams.Get("status") != "all" {
		t.Fatal("a shipped descriptor was changed through another's value")
	}
}

// customerStripe serves customers created a second apart, newest first, to see the kit's
// requests on the wire: each request's query is kept.
type customerStripe struct {
	base    int64
	n       int
	mu      sync.Mutex
	queries []url.Values
	paths   []string
}

func (c *customerStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.queries = append(c.queries, r.URL.Query())
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	customer := func(i int) string {
		return fmt.Sprintf(`{"id":"cus_%d","object":"customer","created":%d,"description":"paying"}`, i, c.base+int64(i))
	}
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/customers/"); ok {
		var i int
		if _, err := fmt.Sscanf(id, "cus_%d", &i); err != nil || i >= c.n {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(stripeError("invalid_request_error", "resource_missing", "No such customer")))
			return
		}
		_, _ = w.Write([]byte(customer(i)))
		return
	}
	// Newest first, ignoring filters: an endpoint without a created filter.
	q := r.URL.Query()
	from := c.n - 1
	if after := q.Get("starting_after"); after != "" {
		_, _ = fmt.Sscanf(after, "cus_%d", &from)
		from--
	}
	var items []string
	for i := from; i >= 0 && len(items) < 100; i-- {
		items = append(items, customer(i))
	}
	fmt.Fprintf(w, `{"object":"list","has_more":%t,"data":[%s]}`, from-len(items) >= 0, strings.Join(items, ","))
}

func customers() stripeadapter.Object[*stripe.Customer] {
	return stripeadapter.Object[*stripe.Customer]{
		Name:       "customer",
		Path:       "/v1/customers",
		IDPrefix:   "cus_",
		ListParams: url.Values{"email": {"kit@example.com"}},
		Expand:     []string{"test_clock"},
		EventTypes: []string{"customer.updated"},
		ID:         func(c *stripe.Customer) string { return c.ID },
		Created:    func(c *stripe.Customer) int64 { return c.Created },
		State:      func(c *stripe.Customer) string { return c.Description },
	}
}

func TestObjectGatewaySendsItsListParamsAndExpandPaths(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stub := &customerStripe{base: base.Unix(), n: 250}
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: secretKey, BaseURL: newStub(t, stub)}, customers())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if c, err := g.Fetch(ctx, "cus_7"); err != nil || c.ID != "cus_7" || c.Description != "paying" {
		t.Fatalf("Fetch = %+v, %v", c, err)
	}
	lookups := []reconcile.Lookup{{ExternalID: "cus_249", CreatedAt: base.Add(249 * time.Second)}, {ExternalID: "cus_248", CreatedAt: base.Add(248 * time.Second)}}
	if got, err := g.FetchBatch(ctx, lookups, noWait); err != nil || len(got) != 2 {
		t.Fatalf("FetchBatch = %v, %v", got, err)
	}
	stub.mu.Lock()
	retrieve, list := stub.queries[0], stub.queries[1]
	stub.mu.Unlock()
	if stub.paths[0] != "/v1/customers/cus_7" || retrieve.Get("expand[0]") != "test_clock" || retrieve.Has("email") {
		t.Errorf("retrieve %s?%v, want expand[0]=test_clock and no list parameters", stub.paths[0], retrieve)
	}
	if list.Get("email") != "kit@example.com" || list.Get("expand[0]") != "data.test_clock" || !list.Has("created[gte]") || !list.Has("created[lte]") {
		t.Errorf("list %v, want the object's ListParams, data.test_clock and the created window", list)
	}

	// Without a created filter the reverse feed pages the whole list and keeps its window,
	// ending at the first object older than it; every page sends the ListParams.
	obj := customers()
	obj.NoCreatedFilter = true
	ng, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: secretKey, BaseURL: newStub(t, stub)}, obj)
	if err != nil {
		t.Fatal(err)
	}
	now := base.Add(250*time.Second + 10*time.Minute)
	f, err := ng.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.Customer]{Window: 10*time.Minute + 150*time.Second, MinAge: 10*time.Minute + 50*time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	stub.mu.Lock()
	stub.queries = nil
	stub.mu.Unlock()
	var seen []string
	for pos := ""; ; {
		page, err := f.Next(ctx, pos, noWait)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			seen = append(seen, o.ExternalID)
		}
		if page.End {
			break
		}
		pos = page.Next
	}
	// Created base+100 .. base+200 s lie in the window [now-Window, now-Grace].
	if len(seen) != 101 || seen[0] != "cus_200" || seen[100] != "cus_100" {
		t.Fatalf("saw %d customers (%v...), want cus_200 down to cus_100", len(seen), seen[:min(2, len(seen))])
	}
	stub.mu.Lock()
	defer stub.mu.Unlock()
	if len(stub.queries) != 2 {
		t.Fatalf("%d list calls, want 2: the pass ends at the first page reaching below the window", len(stub.queries))
	}
	for _, q := range stub.queries {
		if q.Has("created[gte]") || q.Get("email") != "kit@example.com" {
			t.Errorf("list %v, want the ListParams and no created filter", q)
		}
	}
}

// Through the engine, rows whose created_at says nothing about their refunds' (a day off) are
// found one by one after at most two barren list pages, with the same verdicts as per-object
// calls.
func TestObjectGatewayFallbackGivesTheEngineTheSameVerdicts(t *testing.T) {
	w := newRefundWorld(t, 150, "")
	if err := w.srv.SetRefundStatus(w.ids[7], stripe.RefundStatusFailed, ""); err != nil {
		t.Fatal(err)
	}
	classify := reconcile.ClassifierFunc[string, *stripe.Refund](func(local string, r *stripe.Refund) reconcile.Decision {
		if r == nil || string(r.Status) != local {
			return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "refund_differs"}
		}
		return reconcile.Decision{Verdict: reconcile.InSync}
	})
	run := func(gw reconcile.Gateway[*stripe.Refund]) reconcile.Report {
		t.Helper()
		s := memstore.New[int, string](memstore.Options{})
		for i, id := range w.ids {
			at := w.base.Add(-24*time.Hour + time.Duration(i)*time.Second)
			s.Put(memstore.Row[int, string]{Key: i + 1, ExternalID: id, Local: "succeeded", CreatedAt: at, UpdatedAt: at})
		}
		w.srv.ResetLog()
		rep, err := reconcile.RunBatch(context.Background(), reconcile.Config[string, *stripe.Refund]{
			Job: "refunds", Source: s, Sink: s, Gateway: gw, Classifier: classify, BatchSize: 200,
			ExternalState: func(r *stripe.Refund) string { return string(r.Status) },
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	g := w.gateway(t, nil)
	bulk := run(g)
	lists, retrieves := w.srv.Requests(stripetest.ListRefunds), w.srv.Requests(stripetest.RetrieveRefund)
	perObject := run(reconcile.PerObject[*stripe.Refund](g))
	if bulk.Verdicts[reconcile.InSync] != 149 || bulk.Verdicts[reconcile.NeedsReview] != 1 ||
		bulk.Verdicts[reconcile.InSync] != perObject.Verdicts[reconcile.InSync] || bulk.Verdicts[reconcile.NeedsReview] != perObject.Verdicts[reconcile.NeedsReview] {
		t.Fatalf("bulk verdicts %v, per-object %v; want 149 in sync and 1 for review both ways", bulk.Verdicts, perObject.Verdicts)
	}
	if lists > 2 || retrieves != 150 {
		t.Fatalf("%d lists and %d retrieves, want at most 2 barren lists, then one retrieve per row", lists, retrieves)
	}
}
