// Package stripeadapter connects the reconciler to Stripe through stripe-go v82: a gateway for
// any Stripe object type a host describes (PaymentIntents, Subscriptions, Invoices, Checkout
// Sessions and connected accounts are shipped), with Stripe's errors mapped to what the engine
// does with a row, a bulk fetch through the list API, and feeds for the events and
// reverse-scan lanes.
//
// # Layout
//
// The module's packages change for different reasons, and depend one way, as pgx is pgconn,
// pgtype and pgx:
//
//	stripeadapter   the client (Client: the HTTP transport, stripe-go's raw calls, error
//	                mapping, key redaction) and the object kit (Object, ObjectGateway, the
//	                bulk fetch, the feeds): what Stripe's API is. It imports no policy.
//	stripepolicy    the policies (status, money, subscriptions, invoices, Checkout), pure
//	                rule tables over a host's row and a Stripe object, their kinds and repair
//	                commands, and Payment: what the business decides. It imports no HTTP.
//	stripemoney     the money reads, an extension of the kit: a Payment's disputes and refunds
//	                read on a gateway of PaymentIntents, and the events that touch them.
//	stripeconnect   the accounts check of a Connect platform, a job over the kit.
//	stripepayouts   the payouts tie-out's Stripe side, an extension of the kit: payouts and
//	                their balance transactions listed for package tieout.
//	stripetest      a stateful fake of Stripe's API for tests, the host's as much as ours.
//
// # Gateway
//
// NewObjectGateway returns a reconcile.Gateway of a described object type, built from an API
// key (with optional base URL, HTTP client, per-call timeout and Stripe-Account for a
// connected account) or from a *stripe.Client you already have. stripe-go's own retries are
// off by default: a row that cannot be checked is Unverifiable and is checked again next
// cycle, which keeps a batch's duration and API use predictable. With the status policy, a job
// over a payments table whose status column holds pending, paid or failed reads:
//
//	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{
//		Key: os.Getenv("STRIPE_SECRET_KEY"),
//	}, stripeadapter.PaymentIntents())
//	if err != nil { ... }
//	rec, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
//		Job: "payments", Source: store, Sink: store, Gateway: gateway,
//		Classifier:    stripepolicy.PaymentIntentPolicy(),
//		ExternalState: stripepolicy.PaymentIntentState, // record the status, never the whole intent
//		Limiter:       limiter, // one reconcile.AdaptiveLimiter per Stripe account
//	})
//
// To compare the money (amounts, refunds, disputes), read Payments on that gateway with
// package stripemoney and judge them with stripepolicy.PaymentPolicy. In tests, point BaseURL
// at a stripetest server and use its Key (see the examples).
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
// An id that is not one of the object's (for PaymentIntents, pi_ and letters and digits) is never
// sent: it is a NeedsReview finding invalid_external_id. API keys are removed from every error: the
// configured key and anything that looks like a secret or restricted key (sk_, rk_) in every
// server-provided string (error type, code, param, message, decline code, Request-Id,
// Stripe-Rate-Limited-Reason) before it reaches an error, a log, a finding or a reason.
// GatewayConfig prints, logs and marshals to JSON without its key.
//
// # Bulk fetch
//
// An ObjectGateway is also a reconcile.BatchGateway: for a batch of rows it lists the objects
// created within the rows' created_at windows, widened by CreatedSkew, a hundred per call, and the
// engine then retrieves one by one only the rows the list did not show. With rows and objects
// created close together this costs about one call per hundred rows instead of one per row. Groups
// of rows far apart, for how far apart the rows usually are, get windows of their own, so the time
// between them is never listed; a crowded or misaligned window stops after two barren pages and
// degrades to per-object calls (MaxListPages caps a batch's list calls). Stripe lists the newest
// first, so a batch of an import's older rows (a batch's rows crowded into one second, their
// objects too) is read up from its oldest row (ending_before) rather than past the import's newer
// objects, and a batch that follows goes on where the last one stopped; objects listed but not
// asked about (the skew's margin above a batch, the rest of a page) are kept for the next batches,
// each for at most ListCacheTTL (30 s) from the call that listed it and at most ListCacheSize
// (20,000) of them, so that any mix of rows spread out and imports costs about one call per hundred
// rows. It is a reconcile.DatedBatchGateway: a kept object verifies its row as of the list call
// that fetched it, and is served only to batches of a cycle that started before that call, so that
// no row is verified on an answer older than the TTL or than its cycle. Results are the same either
// way; to force per-object calls, pass reconcile.PerObject[*stripe.PaymentIntent](gateway), which
// keeps the id check.
//
// # Lanes
//
// Two feeds for reconcile.Lane read Stripe's side first, through the gateway's client and
// error mapping. [ObjectGateway.EventsFeed] reads the object's events (payment_intent.* for
// PaymentIntents) after a checkpoint, oldest first (ending_before), a hundred per call, and
// yields the newest state each object's events carry: run every minute, it turns a missed
// webhook into a finding within two minutes. Events younger than Settle (1 minute) wait for
// the next step; a checkpoint older than MaxAge (25 days; Stripe keeps events 30) is not
// replayed but restarted with a gap that health reports until the sweep has covered it.
// [ObjectGateway.ReverseFeed] lists the objects created in a window (7 days, without the last
// 10 minutes), newest first, a page per step, so that a lane with ReportMissing finds the
// objects no row refers to; ObjectReverseOptions.Include leaves out objects the table does not
// account for (for PaymentIntents: those of Invoices, Checkout, other services). Neither uses
// the Search API, which can lag by an hour.
//
// # Object kit
//
// Everything above is the object kit's, for any Stripe object type: an [Object] describes the
// type (its "object" name, collection path, id prefix, list parameters sent on every list,
// expand paths, event types, and how to read an object's id, creation time and state), and
// [NewObjectGateway] builds from it an [ObjectGateway] with the same error
// mapping, client defaults, id check, bulk list by created window with per-object fallback and
// look-ahead, events feed ([ObjectEventsFeed]) and reverse feed ([ObjectReverseFeed]). Shipped:
//
//	descriptor          path                    id prefix  list parameters  state              events
//	PaymentIntents()    /v1/payment_intents     pi_        -                status             payment_intent.*
//	Subscriptions()     /v1/subscriptions       sub_       status=all       status             customer.subscription.*
//	Invoices()          /v1/invoices            in_        -                status             invoice.* but .upcoming
//	CheckoutSessions()  /v1/checkout/sessions   cs_        -                status             checkout.session.*
//	Accounts()          /v1/accounts            acct_      -                see AccountState   none (platform only)
//	Payouts()           /v1/payouts             po_        -                status             PayoutEventTypes
//
// Subscriptions send status=all because Stripe's subscription list leaves canceled ones out
// otherwise: a sweep would then retrieve each canceled subscription one by one, and a
// hand-written list would take it for missing. Every list endpoint above filters by created;
// for one that does not, set NoCreatedFilter and the bulk fetch leaves every row to Fetch.
// Each descriptor function returns a fresh value, and NewObjectGateway copies what it is
// given, so a host's later change reaches no gateway. A Checkout Session id is cs_, cs_test_
// or cs_live_ and letters and digits ([ValidCheckoutSessionID]).
//
// [ObjectGateway.ForAccount] returns the gateway for a connected account, over the same
// client: its calls carry Stripe-Account, and it keeps its own look-ahead, so that no account
// is answered with another's objects. Accounts are the platform's objects: their calls never
// carry Stripe-Account, and a connected account's account.updated events are in that
// account's event log, not the platform's, so Accounts name no event types.
//
// To reconcile an object the project does not ship, describe it (see the Object example, a
// refunds table against Stripe Refunds):
//
//	refunds := stripeadapter.Object[*stripe.Refund]{
//		Name: "refund", Path: "/v1/refunds", IDPrefix: "re_",
//		EventTypes: []string{"refund.created", "refund.updated", "refund.failed"},
//		ID:         func(r *stripe.Refund) string { return r.ID },
//		Created:    func(r *stripe.Refund) int64 { return r.Created },
//		State:      func(r *stripe.Refund) string { return string(r.Status) },
//	}
//	gateway, err := stripeadapter.NewObjectGateway(cfg, refunds)
//
// T may be a stripe-go type or the host's own struct with Stripe's JSON names: the kit decodes
// each answer with encoding/json. An object without a valid id or with an empty State is not
// an answer (an empty or foreign body from a proxy): it verifies nothing and its row is
// Unverifiable.
//
// # Extending the kit
//
// A read the kit does not ship, made through the same client, key, account, timeout and
// error mapping, goes through the gateway's [Client]: [Client.Get] makes one GET (a list
// filtered by a parameter, say, as stripemoney lists a payment's disputes), [Client.EventLog]
// reads the account's events after a checkpoint for a feed that makes its own objects of
// them, and [Client.Now] is the clock answers are dated by.
//
// # Testing
//
// Package stripetest is a stateful fake of the Stripe API over HTTP, with fault injection, for
// the host's own tests as much as ours. The wire format is checked against stripe-mock.
//
// The packages are named stripeadapter, stripepolicy, stripemoney and stripeconnect so that
// none shadows stripe-go's stripe package.
package stripeadapter
