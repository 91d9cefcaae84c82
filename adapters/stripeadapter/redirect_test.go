package stripeadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// A redirect is never followed, from the API host nor from the files host: net/http forwards
// the Authorization header to a redirect's target of the same host name, whatever its port or
// scheme (and to its subdomains), so a hostile or compromised host would otherwise receive the
// key on a port of its choosing, or in clear over http. Each call that meets a redirect fails,
// and its error holds no key, even when the Location carries it; a download's is the error of a
// file not fetched, which leaves a report unused, not an outage, which would fail every step. It
// names no Location: the server's bytes, which may hold the key encoded.
func TestARedirectNeverCarriesTheKey(t *testing.T) {
	const key = "sk_test_51RedirectedKeyThatMustNotLeak"
	var leaked, evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evilHits.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), key) {
			leaked.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"frr_1","object":"reporting.report_run","status":"pending"}`))
	}))
	defer evil.Close()
	// The same host name as the files host, another port: what net/http deems the same domain.
	target := evil.URL
	var status atomic.Int64
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The key as it is, and with every byte percent-encoded, which no redaction can read.
		var encoded strings.Builder
		for _, b := range []byte(key) {
			fmt.Fprintf(&encoded, "%%%02X", b)
		}
		http.Redirect(w, r, target+r.URL.Path+"?echo="+url.QueryEscape(key)+"&encoded="+encoded.String(), int(status.Load()))
	}))
	defer files.Close()
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key, BaseURL: files.URL}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	c := gw.Client()
	ctx := context.Background()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		status.Store(int64(code))
		checks := map[string]error{}
		_, checks["Download"] = c.Download(ctx, "download report", files.URL+"/v1/files/file_1/contents", 1<<20)
		var out map[string]any
		checks["Get"] = c.Get(ctx, "retrieve report run", "/v1/reporting/report_runs/frr_1", nil, &out)
		checks["Post"] = c.Post(ctx, "create report run", "/v1/reporting/report_runs", url.Values{"report_type": {"x"}}, &out)
		if err := checks["Download"]; errors.Is(err, reconcile.ErrUnavailable) || errors.Is(err, reconcile.ErrRateLimited) {
			t.Errorf("%d: Download: %v, want a file not fetched, not an outage", code, err)
		}
		for call, err := range checks {
			if err == nil {
				t.Errorf("%d: %s followed the redirect", code, call)
			} else if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "%4B%65%79") || strings.Contains(err.Error(), target) {
				t.Errorf("%d: %s: the error holds the key or the Location: %v", code, call, err)
			}
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the key reached the redirect's target %d times (%d requests)", n, evilHits.Load())
	}
	if n := evilHits.Load(); n != 0 {
		t.Errorf("%d requests reached the redirect's target", n)
	}
}
