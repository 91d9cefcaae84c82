package stripeadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// An outage of the list call must read as one (ErrUnavailable), so that the engine can tell an
// outage from a list that merely did not show some rows.
func TestBulkFetchReportsAListOutageAsUnavailable(t *testing.T) {
	t.Parallel()
	lookups := []reconcile.Lookup{{ExternalID: "pi_1", CreatedAt: t0}, {ExternalID: "pi_2", CreatedAt: t0}}
	wait := func(context.Context) error { return nil }
	for name, fault := range map[string]stripetest.Fault{
		"500":                       {Status: http.StatusInternalServerError},
		"502 with a proxy's page":   {Status: http.StatusBadGateway, Body: "<html>bad gateway</html>"},
		"503":                       {Status: http.StatusServiceUnavailable},
		"504 with an empty body":    {Status: http.StatusGatewayTimeout, Body: " "},
		"a list outlasting timeout": {Hang: true},
		"429 lock_timeout":          {Status: http.StatusTooManyRequests, Code: "lock_timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := stripetest.NewServer(stripetest.Options{})
			defer srv.Close()
			srv.Inject(stripetest.ListPaymentIntents, fault)
			g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), Timeout: 100 * time.Millisecond}, stripeadapter.PaymentIntents())
			if err != nil {
				t.Fatal(err)
			}
			found, err := g.FetchBatch(context.Background(), lookups, wait)
			if !errors.Is(err, reconcile.ErrUnavailable) || errors.Is(err, reconcile.ErrRateLimited) || errors.Is(err, reconcile.ErrAbortBatch) || len(found) != 0 {
				t.Fatalf("FetchBatch = %v, %v; want nothing found and an error wrapping only ErrUnavailable", found, err)
			}
		})
	}
	t.Run("a 200 that is not a list", func(t *testing.T) {
		srv := httptest.NewServer(&cannedStripe{status: http.StatusOK, body: `{}`})
		defer srv.Close()
		found, err := newGateway(t, srv.URL, nil).FetchBatch(context.Background(), lookups, wait)
		if !errors.Is(err, reconcile.ErrUnavailable) || len(found) != 0 {
			t.Fatalf("FetchBatch = %v, %v; want nothing found and ErrUnavailable", found, err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := newGateway(t, url, nil).FetchBatch(context.Background(), lookups, wait)
		if !errors.Is(err, reconcile.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("our own cancelled context is not an outage", func(t *testing.T) {
		srv := stripetest.NewServer(stripetest.Options{})
		defer srv.Close()
		srv.Inject(stripetest.ListPaymentIntents, stripetest.Fault{Hang: true})
		g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.PaymentIntents())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = g.FetchBatch(ctx, lookups, wait)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, reconcile.ErrUnavailable) {
			t.Fatalf("err = %v, want the context's error, not ErrUnavailable", err)
		}
	})
}

func TestFeedsReportA200ThatIsNotAListAsUnavailable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&cannedStripe{status: http.StatusOK, body: `{}`})
	defer srv.Close()
	g := newGateway(t, srv.URL, nil)
	wait := func(context.Context) error { return nil }
	events, err := g.EventsFeed(stripeadapter.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reverse, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(-time.Hour).Unix()
	for name, next := range map[string]func() (reconcile.FeedPage[*stripe.PaymentIntent], error){
		"events with a checkpoint": func() (reconcile.FeedPage[*stripe.PaymentIntent], error) {
			return events.Next(context.Background(), fmt.Sprintf(`{"after":"evt_1","until":%d}`, until), wait)
		},
		"events by time": func() (reconcile.FeedPage[*stripe.PaymentIntent], error) {
			return events.Next(context.Background(), fmt.Sprintf(`{"until":%d}`, until), wait)
		},
		"reverse": func() (reconcile.FeedPage[*stripe.PaymentIntent], error) {
			return reverse.Next(context.Background(), "", wait)
		},
	} {
		page, err := next()
		if !errors.Is(err, reconcile.ErrUnavailable) || page.Next != "" || page.End {
			t.Errorf("%s: page %+v, err %v; want no progress and ErrUnavailable", name, page, err)
		}
	}
}
