package stripeadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// readCapped reads s through depthCapped, handed to it in the chunks cut at splits.
func readCapped(s string, splits ...int) error {
	var chunks []io.Reader
	prev := 0
	for _, at := range append(splits, len(s)) {
		chunks = append(chunks, iotest.OneByteReader(strings.NewReader("")), strings.NewReader(s[prev:at]))
		prev = at
	}
	_, err := io.ReadAll(&depthCapped{r: io.NopCloser(&chunked{rs: chunks})})
	return err
}

// chunked reads each of rs in turn, never two in one Read, so a Read ends at each split.
type chunked struct{ rs []io.Reader }

func (c *chunked) Read(p []byte) (int, error) {
	for len(c.rs) > 0 {
		n, err := c.rs[0].Read(p)
		if err == io.EOF {
			c.rs = c.rs[1:]
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.EOF
}

// deep is an object nested depth containers deep, each level an array of one object.
func deep(depth int) string {
	var b strings.Builder
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`{"a":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`1`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return b.String()
}

func TestAnAnswerNestedPastTheCapFailsItsRead(t *testing.T) {
	brackets := strings.Repeat("[{", maxAnswerDepth)
	for _, c := range []struct {
		name   string
		answer string
		deep   bool
	}{
		{"nested exactly to the cap passes", deep(maxAnswerDepth), false},
		{"nested one past the cap fails", deep(maxAnswerDepth + 1), true},
		{"brackets in a string are not counted", `{"a":"` + brackets + `"}`, false},
		{"brackets in a key are not counted", `{"` + brackets + `":1}`, false},
		{"an escaped quote does not end the string", `{"a":"\"` + brackets + `"}`, false},
		{"an escaped backslash does end it", `{"a":"\\"` + brackets, true},
		{"an escaped backslash then an escaped quote do not", `{"a":"\\\"` + brackets + `"}`, false},
		{"a unicode escape is in the string", `{"a":"\u005b\"` + brackets + `"}`, false},
		{"closers first buy no openers past the cap", "{}" + strings.Repeat("]", 10) + deep(maxAnswerDepth+1), true},
		{"siblings at the cap pass", "[" + deep(maxAnswerDepth-1) + "," + deep(maxAnswerDepth-1) + "]", false},
		{"not JSON at all passes, left to the decoder", `<html>bad</html>`, false},
		{"not JSON, brackets past the cap in it, passes: the decoder fails it at its first byte", `<html>` + brackets + `</html>`, false},
		{"a string first, brackets after it, passes: the decoder fails them after the string", `"a"` + brackets, false},
		{"a number first, brackets after it, passes", `1` + brackets, false},
		{"whitespace before the first opener is skipped", " \t\r\n" + deep(maxAnswerDepth+1), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Every split point, and every pair of them for the short answers: a string, an
			// escape or a bracket cut between two Reads counts as one.
			for i := 0; i <= len(c.answer); i++ {
				for j := i; j <= len(c.answer); j++ {
					if len(c.answer) > 80 && j != i {
						break
					}
					err := readCapped(c.answer, i, j)
					if c.deep && !errors.Is(err, errTooDeep) || !c.deep && err != nil {
						t.Fatalf("split at %d and %d: %v, deep %t", i, j, err, c.deep)
					}
				}
			}
		})
	}
}

func TestAFailedReadKeepsFailing(t *testing.T) {
	d := &depthCapped{r: io.NopCloser(strings.NewReader(deep(maxAnswerDepth+1) + deep(1)))}
	p := make([]byte, 1<<10)
	n, err := d.Read(p)
	// The bytes handed on stop before the opener past the cap.
	if opened := bytes.Count(p[:n], []byte("{")) + bytes.Count(p[:n], []byte("[")); !errors.Is(err, errTooDeep) || opened != maxAnswerDepth {
		t.Fatalf("Read = %d bytes opening %d, %v", n, opened, err)
	}
	if _, err := d.Read(p); !errors.Is(err, errTooDeep) {
		t.Fatalf("second Read: %v", err)
	}
}

// jsonDepth is how deep data nests its containers, by encoding/json's tokens.
func jsonDepth(t *testing.T, data []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func TestAnAnswerNestedTenThousandDeepFailsTheCallAndRealPagesPass(t *testing.T) {
	hostile := listOf(nested(5000)) // 10,002 containers deep
	marker := `"object":"payment_intent"`
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/payment_intents" {
			io.WriteString(w, hostile)
			return
		}
		io.WriteString(w, nested(5000))
	}))
	defer hs.Close()
	g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: hs.URL, Timeout: time.Minute}, PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	check := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, reconcile.ErrUnavailable) || !strings.Contains(err.Error(), errTooDeep.Error()) || strings.Contains(err.Error(), marker) {
			t.Errorf("%s: %v; want ErrUnavailable with the depth error and none of the answer", call, err)
		}
	}
	page, _, err := g.listPage(context.Background(), nil, "")
	check("list", err)
	if page != nil {
		t.Errorf("list: page %v", page)
	}
	pi, err := g.Fetch(context.Background(), "pi_1")
	check("fetch", err)
	if pi != nil {
		t.Errorf("fetch: %v", pi)
	}

	t.Run("real pages of every descriptor, expanded, pass the transport", func(t *testing.T) {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
		defer srv.Close()
		ids := srv.AddPaymentIntents([]stripetest.PaymentIntent{{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, Metadata: map[string]string{"k": `[{\"`}}, {}})
		if _, err := srv.Refund(ids[0], 300); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Dispute(ids[0], 700, stripe.DisputeStatusNeedsResponse, now.Add(72*time.Hour)); err != nil {
			t.Fatal(err)
		}
		srv.AddSubscriptions([]stripetest.Subscription{{Metadata: map[string]string{"k": "v"}}})
		srv.AddInvoices([]stripetest.Invoice{{}})
		srv.AddCheckoutSessions([]stripetest.CheckoutSession{{Status: stripe.CheckoutSessionStatusComplete}})
		srv.AddAccounts([]stripetest.Account{{ChargesEnabled: true}})
		g, err := NewObjectGateway(GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, PaymentIntents())
		if err != nil {
			t.Fatal(err)
		}
		deepest := 0
		for _, pq := range []string{
			"/v1/payment_intents?expand[]=data.latest_charge",
			"/v1/payment_intents?expand[]=data.latest_charge.payment_intent",
			"/v1/payment_intents?expand[]=data.latest_charge.balance_transaction&expand[]=data.latest_charge.refunds",
			"/v1/charges?expand[]=data.payment_intent&expand[]=data.balance_transaction",
			"/v1/refunds?expand[]=data.charge",
			"/v1/disputes?expand[]=data.charge",
			"/v1/balance_transactions?expand[]=data.source",
			"/v1/subscriptions?status=all&expand[]=data.latest_invoice",
			"/v1/invoices?expand[]=data.parent.subscription_details.subscription",
			"/v1/checkout/sessions?expand[]=data.payment_intent",
			"/v1/accounts",
		} {
			path, query, _ := strings.Cut(pq, "?")
			q, err := url.ParseQuery(query)
			if err != nil {
				t.Fatal(err)
			}
			q.Set("limit", "100")
			var raw json.RawMessage
			if err := g.Client().Get(context.Background(), "list", path, q, &raw); err != nil {
				t.Errorf("%s: %v", pq, err)
				continue
			}
			d := jsonDepth(t, raw)
			t.Logf("%s: %d bytes, %d deep", pq, len(raw), d)
			deepest = max(deepest, d)
		}
		if deepest == 0 || deepest > maxAnswerDepth/4 {
			t.Errorf("the deepest real page nests %d; the cap %d should be far above it", deepest, maxAnswerDepth)
		}
		t.Logf("deepest real page: %d", deepest)
	})
}

func TestAFileIsNotCappedAsJSON(t *testing.T) {
	// A report's CSV may hold any brackets: its depth means nothing.
	contents := strings.Repeat("[", 10*maxAnswerDepth) + "\n"
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		io.WriteString(w, contents)
	}))
	defer files.Close()
	g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: files.URL}, PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Client().Download(context.Background(), "download report", files.URL+"/v1/files/file_1/contents", 1<<20)
	if err != nil || string(got) != contents {
		t.Fatalf("Download = %d bytes, %v; want the file", len(got), err)
	}
}

// For any valid JSON, cut anywhere, the cap fails the read exactly when encoding/json counts
// more than maxAnswerDepth containers.
func FuzzDepthCapped(f *testing.F) {
	for _, s := range []string{deep(maxAnswerDepth), deep(maxAnswerDepth + 1), `{"a":"\"[[[","b":["\\",{"c":"]]"}]}`,
		`"[\u005b"`, `[]`, `1`} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, at int) {
		if !json.Valid(data) {
			return
		}
		at = min(max(at, 0), len(data))
		err := readCapped(string(data), at)
		if tooDeep := jsonDepth(t, data) > maxAnswerDepth; tooDeep != errors.Is(err, errTooDeep) || !tooDeep && err != nil {
			t.Fatalf("depth %d, split at %d: %v", jsonDepth(t, data), at, err)
		}
	})
}

// TestADownloadsErrorAnswerIsCappedAsAnyAnswer answers a download with an error whose expanded
// intent nests past the cap: stripe-go decodes an error answer as JSON whatever the call (3,000
// levels held a CPU 5 seconds past a 1 second timeout), so only a file's contents go uncapped.
func TestADownloadsErrorAnswerIsCappedAsAnyAnswer(t *testing.T) {
	answer := `{"error":{"type":"api_error","message":"x","payment_intent":` + nested(maxAnswerDepth) + `}}`
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, answer)
	}))
	defer files.Close()
	g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: files.URL}, PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Client().Download(context.Background(), "download report", files.URL+"/v1/files/file_1/contents", 1<<20)
	if !errors.Is(err, reconcile.ErrUnavailable) || !strings.Contains(err.Error(), errTooDeep.Error()) {
		t.Fatalf("Download: %v; want ErrUnavailable with the depth error", err)
	}
}

// TestAProxysPageIsReportedAsThePageItIs answers a 502 with an HTML page holding brackets past
// the cap: the call fails as an answer stripe-go cannot decode, naming the status, not as JSON
// nested too deep.
func TestAProxysPageIsReportedAsThePageItIs(t *testing.T) {
	page := "<html><body>Bad gateway " + strings.Repeat("[", 10*maxAnswerDepth) + "</body></html>"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, page)
	}))
	defer hs.Close()
	g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: hs.URL}, PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Fetch(context.Background(), "pi_1")
	if !errors.Is(err, reconcile.ErrUnavailable) || strings.Contains(err.Error(), errTooDeep.Error()) || !strings.Contains(err.Error(), "502") ||
		strings.Contains(err.Error(), "Bad gateway") {
		t.Fatalf("Fetch: %v; want ErrUnavailable naming the status, not the depth, and none of the page", err)
	}
}
