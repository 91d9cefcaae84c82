package stripeadapter_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// A download that gets no answer (the files host hangs past the call's timeout or the step's
// deadline, drops the connection, or is down) is an outage, or the context's end: never a
// panic (stripe-go v82's streaming call reads the body of the response it did not get,
// stripe/stripe-go#2211).
func TestADownloadWithoutAnAnswerIsAnError(t *testing.T) {
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer drop.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()

	download := func(base string, timeout time.Duration, ctx context.Context) error {
		gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: "sk_test_noanswer", BaseURL: base, Timeout: timeout},
			stripeadapter.Payouts())
		if err != nil {
			t.Fatal(err)
		}
		_, err = gw.Client().Download(ctx, "download report", base+"/v1/files/file_1/contents", 1<<20)
		return err
	}
	for name, base := range map[string]string{"hangs past the call's timeout": hang.URL, "drops the connection": drop.URL, "is down": down} {
		if err := download(base, 100*time.Millisecond, context.Background()); !errors.Is(err, reconcile.ErrUnavailable) {
			t.Errorf("a files host that %s: %v, want an outage", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := download(hang.URL, time.Minute, ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a files host that hangs past the step's deadline: %v", err)
	}
}
