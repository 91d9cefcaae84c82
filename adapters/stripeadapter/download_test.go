package stripeadapter_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// A report run created with Post, read with Get and its file fetched with Download, through the
// client's key, account and error mapping; a file larger than the limit is ErrTooLarge.
func TestPostAndDownloadAReportsFile(t *testing.T) {
	now := time.Date(2024, 1, 10, 0, 0, 0, 0, time.UTC)
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	defer srv.Close()
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	c := gw.Client()
	if c.FilesURL() != srv.URL() {
		t.Errorf("FilesURL %q, want the BaseURL %q", c.FilesURL(), srv.URL())
	}
	ctx := context.Background()
	var run stripe.ReportingReportRun
	form := url.Values{"report_type": {stripetest.PayoutReconciliationReport}, "parameters[interval_start]": {"1"},
		"parameters[interval_end]": {strconv.FormatInt(now.Unix(), 10)}}
	if err := c.Post(ctx, "create report run", "/v1/reporting/report_runs", form, &run); err != nil || run.Status != "pending" {
		t.Fatalf("Post: %+v, %v", run, err)
	}
	if err := c.Get(ctx, "retrieve report run", "/v1/reporting/report_runs/"+run.ID, nil, &run); err != nil || run.Result == nil {
		t.Fatalf("Get: %+v, %v", run, err)
	}
	b, err := c.Download(ctx, "download", run.Result.URL, 1<<20)
	if err != nil || !strings.HasPrefix(string(b), "automatic_payout_id,") {
		t.Fatalf("Download: %q, %v", b, err)
	}
	if _, err := c.Download(ctx, "download", run.Result.URL, int64(len(b)-1)); !errors.Is(err, stripeadapter.ErrTooLarge) {
		t.Errorf("a file one byte over the limit: %v", err)
	}
	if _, err := c.Download(ctx, "download", srv.URL()+"/v1/files/file_nosuch/contents", 1<<20); !errors.Is(err, reconcile.ErrNotFound) {
		t.Errorf("a file the server does not have: %v", err)
	}
	form.Set("report_type", "balance.summary.1")
	var review *reconcile.ReviewError
	if err := c.Post(ctx, "create report run", "/v1/reporting/report_runs", form, &run); !errors.As(err, &review) {
		t.Errorf("a refused creation: %v", err)
	}
	srv.Inject(stripetest.DownloadFile, stripetest.Fault{Status: http.StatusTooManyRequests, Times: 1})
	if _, err := c.Download(ctx, "download", run.Result.URL, 1<<20); !errors.Is(err, reconcile.ErrRateLimited) {
		t.Errorf("a 429 on the download: %v", err)
	}
}

// Download sends the key to the client's files host only: a url of another host, port or
// scheme, with a user, a query or a fragment, or of another path than a file's contents, is
// refused before any request, with an error without the key, even when the url carries it.
func TestDownloadSendsTheKeyNowhereElse(t *testing.T) {
	var hits atomic.Int64
	count := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	files := httptest.NewServer(count)
	defer files.Close()
	evil := httptest.NewServer(count)
	defer evil.Close()
	const key = "sk_test_51SecretKeyThatMustNotLeak"
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key, BaseURL: files.URL}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	c := gw.Client()
	host := strings.TrimPrefix(files.URL, "http://")
	for _, u := range []string{
		evil.URL + "/v1/files/file_1/contents",
		"https://" + host + "/v1/files/file_1/contents",
		"http://" + strings.Split(host, ":")[0] + ":1/v1/files/file_1/contents",
		"http://localhost." + ":" + strings.Split(host, ":")[1] + "/v1/files/file_1/contents",
		"http://" + key + "@" + host + "/v1/files/file_1/contents",
		files.URL + "/v1/files/file_1/contents?key=" + key,
		files.URL + "/v1/files/file_1/contents#frag",
		files.URL + "/v1/files/../v1/payouts/contents",
		files.URL + "/v1/files/file_1%2F..%2Fx/contents",
		files.URL + "/v1/files/frr_1/contents",
		files.URL + "/v1/files/file_1",
		files.URL + "/v1/files/file_1/contents/",
		"//" + host + "/v1/files/file_1/contents",
		"/v1/files/file_1/contents",
		"",
		"file:///etc/passwd",
		"http://" + host + "\x00/v1/files/file_1/contents",
	} {
		_, err := c.Download(context.Background(), "download report", u, 1<<20)
		if err == nil || !strings.Contains(err.Error(), "not fetched") {
			t.Errorf("%q: %v, want it refused", u, err)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%q: the error holds the key: %v", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests were made", n)
	}
}

// A url refused is not quoted in the error: it is the server's bytes, which may hold the key
// where redaction cannot see it (percent-encoded, JSON-escaped) or bytes that forge a line.
func TestARefusedDownloadQuotesNoURL(t *testing.T) {
	const key = "sk_test_51SecretKeyThatMustNotLeak"
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key, BaseURL: "http://127.0.0.1:1"}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	c := gw.Client()
	encoded := strings.ReplaceAll(key, "_", "%5F")
	for _, u := range []string{
		encoded,
		strings.ReplaceAll(key, "_", `\u005f`),
		"https://evil.example/" + encoded,
		"http://127.0.0.1:1/v1/files/file_1/contents?k=" + encoded + "&\x1b[2J\n",
		"\x1b]0;" + encoded + "\a",
	} {
		_, err := c.Download(context.Background(), "download report", u, 1<<20)
		if err == nil || !strings.Contains(err.Error(), "not fetched") {
			t.Errorf("%q: %v, want it refused", u, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "SecretKey") || strings.ContainsAny(msg, "\x1b\a\n") {
			t.Errorf("%q: the error quotes the url: %v", u, err)
		}
	}
}
