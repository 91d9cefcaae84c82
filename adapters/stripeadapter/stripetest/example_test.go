package stripetest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// Example stores an intent, changes its status, injects a rate limit, and reads it all back
// through stripe-go.
func Example() {
	srv := stripetest.NewServer(stripetest.Options{
		Now: func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) },
	})
	defer srv.Close()

	id := srv.AddPaymentIntent(stripetest.PaymentIntent{ID: "pi_example", Amount: 2000})
	if err := srv.SetStatus(id, stripe.PaymentIntentStatusSucceeded); err != nil {
		panic(err)
	}
	srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{
		Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"1"}},
		Times:  1,
	})

	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(srv.URL()),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	ctx := context.Background()

	_, err := sc.V1PaymentIntents.Retrieve(ctx, id, nil)
	var se *stripe.Error
	if errors.As(err, &se) {
		fmt.Println("first try:", se.HTTPStatusCode, se.Code, "retry after", se.LastResponse.Header.Get("Retry-After"))
	}
	pi, err := sc.V1PaymentIntents.Retrieve(ctx, id, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("second try:", pi.ID, pi.Status, pi.Amount, pi.Currency)

	for e, err := range sc.V1Events.List(ctx, &stripe.EventListParams{Type: stripe.String("payment_intent.*")}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("event:", e.Type, time.Unix(e.Created, 0).UTC().Format(time.Kitchen))
	}
	fmt.Println("retrieve requests:", srv.Requests(stripetest.RetrievePaymentIntent))
	// Output:
	// first try: 429 rate_limit retry after 1
	// second try: pi_example succeeded 2000 usd
	// event: payment_intent.succeeded 12:00PM
	// event: payment_intent.created 12:00PM
	// retrieve requests: 2
}
