// Package stripetest is a stateful fake of the part of the Stripe API this project reads,
// PaymentIntents with their charges, refunds and disputes, and their events, served over real
// HTTP so that stripe-go pointed at it works unchanged. Tests use it to exercise the Stripe
// adapter end to end: pagination, Connect accounts, rate limits, outages and slow answers,
// money that changes without the intent's status changing, all without the network or a Stripe
// account.
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
// seconds, like Stripe's. Options.Now is the clock for defaults and for the time of changes
// and their events.
//
// # Money
//
// An intent that requires capture or succeeds, when added so or through SetStatusAt, gets one
// charge "ch_...", its latest_charge: the intent's amount and currency, amount_captured (what
// the intent received once captured, 0 before), amount_refunded, refunded (the whole captured
// amount is), disputed, status succeeded. PaymentIntent.AmountReceived and SetAmountReceived
// model a partial capture: the charge's amount_captured is what was received, and its
// amount_refunded counts the released remainder, amount − amount_captured, as Stripe's charges
// have been seen to (not documented; see the stripeadapter package doc), so a refund of the
// whole captured amount brings amount_refunded to amount. Refunds are limited to what was
// captured less what the refunds returned. GET /v1/charges/{id} reads a charge.
//
// Refund refunds a charge as the Dashboard would (a succeeded refund "re_..."), and
// SetRefundStatus moves a refund through pending, requires_action, succeeded, failed (with its
// failure_reason) and canceled. The fake's model of the charge: pending, requires_action and
// succeeded refunds count in its amount_refunded, failed and canceled ones do not, so a refund
// that fails after succeeding gives its amount back (Stripe documents that the amount returns
// to the balance). Dispute opens a dispute "dp_..." with its evidence_details.due_by, and
// SetDisputeStatus moves it through every status Stripe documents; the charge stays disputed.
// GET /v1/refunds and GET /v1/disputes list them, filtered by payment_intent, charge and
// created; GET /v1/refunds/{id} and /v1/disputes/{id} read one. They belong to their intent's
// account.
//
// # Expand
//
// expand[]=latest_charge on a retrieve and expand[]=data.latest_charge on a list render the
// charge in place of its id; likewise payment_intent on a charge, and charge and
// payment_intent on a refund or a dispute, nested up to Stripe's four levels (a list's data
// counts as one). A path Stripe would refuse is Stripe's 400: "This property cannot be
// expanded (...)." for a field that is not expandable (with Stripe's hint to start a list's
// path with data), and property_expansion_max_depth for more than four levels. stripe-mock
// accepts such paths, which is why the fake checks them. A charge's refunds sub-list, rendered
// only when expanded, holds its ten newest refunds. Expandable fields of objects the fake does
// not model (customer, balance_transaction, ...) are accepted and stay as they are unexpanded,
// null, and paths below them are not checked.
//
// # Lists
//
// GET /v1/payment_intents, /v1/refunds, /v1/disputes and /v1/events list newest first (by
// created, then later-added first) and take Stripe's parameters: limit (1 to 100, default 10),
// starting_after, ending_before, and created as an exact time or with gt, gte, lt and lte.
// ending_before returns the limit objects just newer than the cursor, still newest first, and
// has_more tells whether objects remain in the direction of paging. A filtered list (refunds
// or disputes by payment_intent or charge) pages the same way; a cursor from outside it
// positions the page by the cursor's created time. Unknown parameters are refused with
// Stripe's 400 "Received unknown parameter", so client mistakes show up in tests rather than in
// production. Objects are kept sorted per account and pages are found by binary search: a page
// costs microseconds over 200k objects, so benchmarks measure the client, not the fake.
//
// # Events
//
// Adding an intent records payment_intent.created at its created time; a status change records
// the event Stripe sends for it (payment_intent.succeeded, .canceled, .processing,
// .requires_action, .amount_capturable_updated for requires_capture, .payment_failed for a
// return to requires_payment_method; none for requires_confirmation), preceded by
// charge.succeeded when it creates the charge and charge.captured when it captures it. A
// refund records refund.created and charge.refunded; a refund's status change refund.updated,
// refund.failed when it failed, and charge.refund.updated (whose object is the refund). A
// dispute records charge.dispute.created, and charge.dispute.funds_withdrawn for a chargeback;
// its status changes charge.dispute.updated, or charge.dispute.closed for won, lost,
// warning_closed and prevented, and charge.dispute.funds_reinstated for a chargeback won. Each
// event holds a snapshot of its object after the change and belongs to the object's account.
// GET /v1/events filters by type (with * as a wildcard, as in payment_intent.*), types (up to
// 20 exact types) and created; GET /v1/events/{id} retrieves one.
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
// Writes (creating, confirming or capturing intents, refunding or answering disputes through
// the API), webhooks, idempotency keys, search, the charges list, more than one charge per
// intent (an intent keeps its first charge, and canceling it releases nothing), balance
// transactions, the customer filter (accepted and ignored), and the 30-day window of events.
// Unsupported paths and methods answer 404 "Unrecognized request URL".
package stripetest
