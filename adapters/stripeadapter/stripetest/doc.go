// Package stripetest is a stateful fake of the part of the Stripe API this project reads,
// PaymentIntents and their events, served over real HTTP so that stripe-go pointed at it works
// unchanged. Tests use it to exercise the Stripe adapter end to end: pagination, Connect
// accounts, rate limits, outages and slow answers, without the network or a Stripe account.
//
// # Setup
//
// NewServer starts a server; point stripe-go's backend at its URL with its key, and turn off
// stripe-go's retries when a test counts requests:
//
//	srv := stripetest.NewServer(stripetest.Options{})
//	defer srv.Close()
//	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
//		URL:               stripe.String(srv.URL()),
//		MaxNetworkRetries: stripe.Int64(0),
//	})))
//
// Requests must carry the key (401 otherwise, with the key masked as Stripe does). Every answer
// has a Request-Id header; errors have Stripe's JSON shape, so stripe-go returns *stripe.Error.
//
// # Objects
//
// AddPaymentIntent and AddPaymentIntents store intents; SetStatus and SetStatusAt change them;
// PaymentIntent reads one back. An intent belongs to the platform or to a Connect account: a
// request with a Stripe-Account header sees only that account's objects, one without it only
// the platform's, and anything else is "No such payment_intent" (404). Times are kept in whole
// seconds, like Stripe's. Options.Now is the clock for defaults and status-change events.
//
// # Lists
//
// GET /v1/payment_intents and GET /v1/events list newest first (by created, then later-added
// first) and take Stripe's parameters: limit (1 to 100, default 10), starting_after,
// ending_before, and created as an exact time or with gt, gte, lt and lte. ending_before
// returns the limit objects just newer than the cursor, still newest first, and has_more tells
// whether objects remain in the direction of paging. Unknown parameters are refused with
// Stripe's 400 "Received unknown parameter", so client mistakes show up in tests rather than in
// production. Objects are kept sorted per account and pages are found by binary search: a page
// costs microseconds over 200k objects, so benchmarks measure the client, not the fake.
//
// # Events
//
// Adding an intent records payment_intent.created at its created time; a status change records
// the event Stripe sends for it (payment_intent.succeeded, .canceled, .processing,
// .requires_action, .amount_capturable_updated for requires_capture, .payment_failed for a
// return to requires_payment_method; none for requires_confirmation), with a snapshot of the
// intent after the change. Events belong to the intent's account. GET /v1/events filters by
// type (with * as a wildcard, as in payment_intent.*), types (several exact types) and
// created; GET /v1/events/{id} retrieves one.
//
// # Faults
//
// Inject makes requests of a route fail or slow down: an HTTP status with a Stripe-shaped error
// (429 rate limits, 5xx outages) or a raw body such as a proxy's HTML page, extra headers such
// as Retry-After, latency, or a hang. A fault can be limited to one object id and to a number
// of requests. SetLatency delays every request. Waiting requests end when their client gives up
// or the server closes, so Close never hangs.
//
// # Requests
//
// Requests counts the requests of a route and Log returns them all, with arrival time, query,
// Stripe-Account header and answered status, for assertions on call patterns and rates.
//
// # Not modeled
//
// Writes (creating, confirming or capturing intents through the API), webhooks, idempotency
// keys, search, expansion (expand is accepted and ignored, as is customer), and the 30-day
// window of events. Unsupported paths and methods answer 404 "Unrecognized request URL".
package stripetest
