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

// Example_money plants what a money reconciler looks for, a refund that fails after
// succeeding and a dispute, and reads it back as the reconciler would: the intent with its
// charge expanded, the refunds by intent, and the events.
func Example_money() {
	srv := stripetest.NewServer(stripetest.Options{
		Now: func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) },
	})
	defer srv.Close()

	id := srv.AddPaymentIntent(stripetest.PaymentIntent{Amount: 5000, Currency: "jpy", Status: stripe.PaymentIntentStatusSucceeded})
	refund, err := srv.Refund(id, 2000)
	if err != nil {
		panic(err)
	}
	if err := srv.SetRefundStatus(refund, stripe.RefundStatusFailed, "expired_or_canceled_card"); err != nil {
		panic(err)
	}
	due := time.Date(2025, 6, 8, 12, 0, 0, 0, time.UTC)
	if _, err := srv.Dispute(id, 0, stripe.DisputeStatusNeedsResponse, due); err != nil {
		panic(err)
	}

	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(srv.URL()),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	ctx := context.Background()

	params := &stripe.PaymentIntentRetrieveParams{}
	params.AddExpand("latest_charge")
	pi, err := sc.V1PaymentIntents.Retrieve(ctx, id, params)
	if err != nil {
		panic(err)
	}
	ch := pi.LatestCharge
	fmt.Println("charge:", ch.Amount, ch.Currency, "captured", ch.AmountCaptured, "refunded", ch.AmountRefunded, "disputed", ch.Disputed)
	for r, err := range sc.V1Refunds.List(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(id)}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("refund:", r.Amount, r.Status, r.FailureReason)
	}
	for d, err := range sc.V1Disputes.List(ctx, &stripe.DisputeListParams{PaymentIntent: stripe.String(id)}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("dispute:", d.Amount, d.Status, "due", time.Unix(d.EvidenceDetails.DueBy, 0).UTC().Format(time.DateOnly))
	}
	for e, err := range sc.V1Events.List(ctx, nil) {
		if err != nil {
			panic(err)
		}
		fmt.Println("event:", e.Type)
	}
	// Output:
	// charge: 5000 jpy captured 5000 refunded 0 disputed true
	// refund: 2000 failed expired_or_canceled_card
	// dispute: 5000 needs_response due 2025-06-08
	// event: charge.dispute.funds_withdrawn
	// event: charge.dispute.created
	// event: charge.refund.updated
	// event: refund.failed
	// event: refund.updated
	// event: charge.refunded
	// event: refund.created
	// event: payment_intent.created
}

// ExampleServer_AddSubscription shows Stripe's default subscription list hiding a canceled
// subscription, and status=all showing it.
func ExampleServer_AddSubscription() {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	srv.AddSubscription(stripetest.Subscription{ID: "sub_active", Created: time.Unix(1, 0)})
	srv.AddSubscription(stripetest.Subscription{ID: "sub_canceled", Created: time.Unix(2, 0)})
	if err := srv.SetSubscriptionStatus("sub_canceled", stripe.SubscriptionStatusCanceled); err != nil {
		panic(err)
	}
	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:           stripe.String(srv.URL()),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	for _, status := range []*string{nil, stripe.String("all")} {
		var ids []string
		for sub, err := range sc.V1Subscriptions.List(context.Background(), &stripe.SubscriptionListParams{Status: status}) {
			if err != nil {
				panic(err)
			}
			ids = append(ids, sub.ID+" "+string(sub.Status))
		}
		fmt.Println(stripe.StringValue(status), ids)
	}
	// Output:
	//  [sub_active active]
	// all [sub_canceled canceled sub_active active]
}

// ExampleFault_account makes one connected account rate limited while another answers.
func ExampleFault_account() {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	srv.AddAccount(stripetest.Account{ID: "acct_1Busy", ChargesEnabled: true})
	srv.AddAccount(stripetest.Account{ID: "acct_1Calm", ChargesEnabled: true})
	srv.Inject(stripetest.ListSubscriptions, stripetest.Fault{Status: http.StatusTooManyRequests, Account: "acct_1Busy"})
	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(srv.URL()),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	for _, acct := range []string{"acct_1Busy", "acct_1Calm", "acct_1Gone"} {
		p := &stripe.SubscriptionListParams{}
		p.SetStripeAccount(acct)
		var err error
		for _, err = range sc.V1Subscriptions.List(context.Background(), p) {
			break
		}
		var se *stripe.Error
		if errors.As(err, &se) {
			fmt.Println(acct, se.HTTPStatusCode, se.Code)
		} else {
			fmt.Println(acct, "ok")
		}
	}
	fmt.Println("requests of acct_1Busy:", srv.AccountRequests(stripetest.ListSubscriptions, "acct_1Busy"))
	// Output:
	// acct_1Busy 429 rate_limit
	// acct_1Calm ok
	// acct_1Gone 403 account_invalid
	// requests of acct_1Busy: 1
}
