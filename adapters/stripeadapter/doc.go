// Package stripeadapter connects the reconciler to Stripe PaymentIntents, through stripe-go v82.
//
// # Gateway
//
// NewGateway returns a reconcile.Gateway[*stripe.PaymentIntent] built from an API key (with
// optional base URL, HTTP client, per-call timeout and Stripe-Account for a connected account)
// or from a *stripe.Client you already have. stripe-go's own retries are off by default: a row
// that cannot be checked is Unverifiable and is checked again next cycle, which keeps a batch's
// duration and API use predictable. With the payment policy below, a job over a payments table
// whose status column holds pending, paid or failed reads:
//
//	gateway, err := stripeadapter.NewGateway(stripeadapter.GatewayConfig{
//		Key: os.Getenv("STRIPE_SECRET_KEY"),
//	})
//	if err != nil { ... }
//	rec, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
//		Job: "payments", Source: store, Sink: store, Gateway: gateway,
//		Classifier:    stripeadapter.PaymentIntentClassifier(),
//		ExternalState: stripeadapter.PaymentIntentState, // record the status, never the whole intent
//		Limiter:       limiter, // one reconcile.AdaptiveLimiter per Stripe account
//	})
//
// In tests, point BaseURL at a stripetest server and use its Key (see the examples).
//
// # Errors
//
// Every Stripe answer maps to what the engine does with the row:
//
//	404 resource_missing                    ErrNotFound: NeedsReview missing_externally
//	429 (any code but lock_timeout)         *RateLimitError with Retry-After and the
//	                                        Stripe-Rate-Limited-Reason: the rest of the batch
//	                                        is not asked, an AdaptiveLimiter slows down
//	429 lock_timeout, 409, 5xx, a body that
//	is not JSON, connection refused, timeout ErrUnavailable: Unverifiable
//	401, 403                                ErrAbortBatch: the batch stops with an error that
//	                                        says the key is wrong or lacks permission
//	400                                     NeedsReview rejected_by_external_system with
//	                                        Stripe's message
//
// An id that is not a PaymentIntent id (pi_ and letters and digits) is never sent: it is a
// NeedsReview finding invalid_external_id. API keys are removed from every error: the
// configured key and anything that looks like a secret or restricted key (sk_, rk_) in every
// server-provided string (error type, code, param, message, decline code, Request-Id,
// Stripe-Rate-Limited-Reason) before it reaches an error, a log, a finding or a reason.
// GatewayConfig prints, logs and marshals to JSON without its key.
//
// # Bulk fetch
//
// The Gateway is also a reconcile.BatchGateway: for a batch of rows it lists the PaymentIntents
// created within the rows' created_at window, widened by CreatedSkew, a hundred per call, and
// the engine then retrieves one by one only the rows the list did not show. With rows and
// PaymentIntents created close together this costs about one call per hundred rows instead of
// one per row. A crowded or misaligned window stops after two pages (or MaxListPages) and
// degrades to per-object calls. Rows created in a burst (an import: a batch's rows within a
// minute, their intents too) are listed through, since Stripe lists the newest first and a
// batch of the older rows sits behind the newer ones; intents listed but not asked about are
// kept for the next batches, each for at most ListCacheTTL (30 s) from the call that listed
// it and at most ListCacheSize (20,000) of them, so that a burst costs about one call per
// hundred rows and no row is verified on an answer older than the TTL. Results are the same
// either way; to force per-object calls,
// pass reconcile.PerObject[*stripe.PaymentIntent](gateway), which keeps the id check.
//
// # Lanes
//
// Two feeds for reconcile.Lane read Stripe's side first, through the gateway's client and error
// mapping. [Gateway.EventsFeed] reads payment_intent.* events after a checkpoint, oldest first
// (ending_before), a hundred per call, and yields the newest state each intent's events carry:
// run every minute, it turns a missed webhook into a finding within two minutes. Events
// younger than Settle (1 minute) wait for the next step; a checkpoint older than MaxAge (25
// days; Stripe keeps events 30) is not replayed but restarted with a gap that health reports
// until the sweep has covered it. [Gateway.ReverseFeed] lists the PaymentIntents created in a
// window (7 days, without the last 10 minutes), newest first, a page per step, so that a lane
// with ReportMissing finds the intents no row refers to; ReverseOptions.Include leaves out
// intents the table does not account for (Invoices, Checkout, other services). Neither uses
// the Search API, which can lag by an hour.
//
// # Classifier
//
// PaymentIntentClassifier is the payment policy as a pure function of a local payment status
// and a PaymentIntent: Stripe is the truth for a payment's outcome, so a pending payment whose
// intent succeeded or was canceled is repaired automatically, and anything where money may
// already have moved (a payment paid locally but not at Stripe) goes to a person.
//
// # Testing
//
// Package stripetest is a stateful fake of the Stripe API over HTTP, with fault injection, for
// the host's own tests as much as ours. The wire format is checked against stripe-mock.
//
// The package is named stripeadapter so that it does not shadow stripe-go's stripe package.
package stripeadapter
