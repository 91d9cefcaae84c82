package stripeadapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// Result urls that only look like the files host (another spelling of its address, an IPv6
// literal, a trailing dot, a punycode or Unicode look-alike, a port with a leading zero, a
// percent-encoded or dotted path) are refused before any request; one that differs only in the
// case of its scheme or host is the files host, and the file is fetched from the files host's
// own url, whatever the result url spelled.
func TestDownloadRefusesLookAlikes(t *testing.T) {
	var hits atomic.Int64
	var mu sync.Mutex
	var paths []string
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mu.Lock()
		paths = append(paths, r.Host+r.URL.RequestURI())
		mu.Unlock()
		w.Write([]byte("ok"))
	}))
	defer files.Close()
	const key = "sk_test_51LookAlikeKeyThatMustNotLeak"
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key, BaseURL: files.URL}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	c := gw.Client()
	host := strings.TrimPrefix(files.URL, "http://")
	port := strings.Split(host, ":")[1]
	for _, u := range []string{
		"http://[::1]:" + port + "/v1/files/file_1/contents",
		"http://[::ffff:127.0.0.1]:" + port + "/v1/files/file_1/contents",
		"http://127.0.0.1.:" + port + "/v1/files/file_1/contents",
		"http://127.000.000.001:" + port + "/v1/files/file_1/contents",
		"http://2130706433:" + port + "/v1/files/file_1/contents",
		"http://localhost:" + port + "/v1/files/file_1/contents",
		"http://xn--127-0.0.1:" + port + "/v1/files/file_1/contents",
		"http://１２７.0.0.1:" + port + "/v1/files/file_1/contents",
		"http://127.0.0.1:0" + port + "/v1/files/file_1/contents",
		"http://127.0.0.1:" + port + "/v1/files/%66ile_1/contents",
		"http://127.0.0.1:" + port + "/v1/files/file_1/./contents",
		"http://127.0.0.1:" + port + "/v1//files/file_1/contents",
		"http://127.0.0.1:" + port + "/v1/files/file_1/contents/..",
		"http://127.0.0.1:" + port + "/v1/files/file_1/contents%00",
		"http://127.0.0.1:" + port + "\\@evil.example/v1/files/file_1/contents",
		"http://evil.example\\@127.0.0.1:" + port + "/v1/files/file_1/contents",
		"http://127.0.0.1:" + port + "@evil.example/v1/files/file_1/contents",
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
		t.Fatalf("%d requests were made", n)
	}
	for _, u := range []string{"HTTP://" + strings.ToUpper(host) + "/v1/files/file_1/contents", "http://" + host + "/v1/files/file_1/contents"} {
		if b, err := c.Download(context.Background(), "download report", u, 1<<20); err != nil || string(b) != "ok" {
			t.Errorf("%q: %q, %v", u, b, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if p != host+"/v1/files/file_1/contents" {
			t.Errorf("fetched %q, not the files host's url of the file", p)
		}
	}
}
