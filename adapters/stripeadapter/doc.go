// Package stripeadapter connects the reconciler to Stripe PaymentIntents and their money (charges,
// refunds, disputes), and through its object kit to Subscriptions, Invoices, Checkout Sessions,
// connected accounts or any Stripe object a host describes, through stripe-go v82.
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
// created within the rows' created_at windows, widened by CreatedSkew, a hundred per call, and
// the engine then retrieves one by one only the rows the list did not show. With rows and
// PaymentIntents created close together this costs about one call per hundred rows instead of
// one per row. Groups of rows far apart, for how far apart the rows usually are, get windows
// of their own, so the time between them is never listed; a crowded or misaligned window stops after two barren pages and degrades to
// per-object calls (MaxListPages caps a batch's list calls). Stripe lists the newest first, so
// a batch of an import's older rows (a batch's rows crowded into one second, their intents
// too) is read up from its oldest row (ending_before) rather than past the import's newer
// intents, and a batch that follows goes on where the last one stopped; intents listed but
// not asked about (the skew's margin above a batch, the rest of a page) are kept for the next
// batches, each for at most ListCacheTTL (30 s) from the call that listed it and at most
// ListCacheSize (20,000) of them, so that any mix of rows spread out and imports costs about
// one call per hundred rows. It is a reconcile.DatedBatchGateway: a kept intent verifies its
// row as of the list call that fetched it, and is served only to batches of a cycle that
// started before that call, so that no row is verified on an answer older than the TTL or than
// its cycle. Results are the same either way; to force per-object calls, pass
// reconcile.PerObject[*stripe.PaymentIntent](gateway), which keeps the id check.
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
// # Object kit
//
// Everything above except the money is the object kit's, for any Stripe object type: an
// [Object] describes the type (its "object" name, collection path, id prefix, list parameters
// sent on every list, expand paths, event types, and how to read an object's id, creation
// time and state), and [NewObjectGateway] builds from it an [ObjectGateway] with the same error
// mapping, client defaults, id check, bulk list by created window with per-object fallback and
// look-ahead, events feed ([ObjectEventsFeed]) and reverse feed ([ObjectReverseFeed]). The
// Gateway above is the kit's gateway of [PaymentIntents] with the money on top. Shipped:
//
//	descriptor          path                    id prefix  list parameters  state              events
//	PaymentIntents()    /v1/payment_intents     pi_        -                status             payment_intent.*
//	Subscriptions()     /v1/subscriptions       sub_       status=all       status             customer.subscription.*
//	Invoices()          /v1/invoices            in_        -                status             invoice.* but .upcoming
//	CheckoutSessions()  /v1/checkout/sessions   cs_        -                status             checkout.session.*
//	Accounts()          /v1/accounts            acct_      -                see AccountState   none (platform only)
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
// # Classifier
//
// PaymentIntentClassifier is the status policy as a pure function of a local payment status
// and a PaymentIntent: Stripe is the truth for a payment's outcome, so a pending payment whose
// intent succeeded or was canceled is repaired automatically, and anything where money may
// already have moved (a payment paid locally but not at Stripe, money taken or held for a
// payment failed locally) goes to a person. A payment failed locally whose intent took no money
// (a declined card back in requires_payment_method, an abandoned checkout) is in sync; its
// godoc has the table of every pair.
//
// # Money
//
// A PaymentIntent's status does not change on a refund or a dispute: a payment refunded in
// the Dashboard, or whose dispute was lost, stays succeeded. The money is on its latest charge
// (amount_refunded, refunded, disputed), which the Gateway expands on every list
// (expand[]=data.latest_charge) and retrieve (expand[]=latest_charge) at no extra call, beside
// the intent's amount, amount_received and currency. [Gateway.Payments] returns a
// reconcile.BatchGateway of [Payment]: the intent with its charge, and what the charge cannot
// say itself. What each read costs:
//
//	a batch of rows (bulk)   the Gateway's list calls, about one per hundred rows, plus one
//	                         GET /v1/disputes?payment_intent= per disputed charge whose
//	                         disputes are not all final; final outcomes (won, lost,
//	                         warning_closed, prevented) are kept for DisputeCacheTTL (24 h),
//	                         at most DisputeCacheSize charges, so a closed dispute costs one
//	                         call a day
//	                         (the events lane reads a disputed charge's disputes anew, and
//	                         refreshes what is kept: a chargeback may follow a closed inquiry)
//	one row (Fetch)          one retrieve, plus the same disputes call
//	refunds, in the sweep    nothing: the charge's amount_refunded and refunded say it
//	events lane              one call per hundred events, plus, per payment an event touches
//	                         (once a step): its retrieve, GET /v1/refunds?payment_intent= when
//	                         a refund event touched it, and the disputes call
//	reverse scan             one call per hundred intents, plus the disputes calls
//
// A disputes or refunds call that fails leaves its row Unverifiable (or, in a lane, for the
// next step), never judged without it; its 404 is not the intent's absence. In bulk, every
// call is paced by the engine; one by one, Fetch's disputes call rides on its retrieve.
//
// A partly captured charge shows the authorised amount it released, amount − amount_captured,
// in its amount_refunded, though no money went back to the customer: after a partial capture
// of 20300 of 20675, the charge read amount_refunded 375 with no refund made
// (woocommerce/woocommerce-gateway-stripe#1073), and Solidus's integration describes a partial
// capture as "creating a refund for the remaining amount" (solidus_stripe#268). Stripe's API
// reference does not say so, and stripe-mock cannot show it. We rely on it: what Stripe
// refunded to the customer is amount_refunded − (amount − amount_captured), floored at 0
// ([Payment.AmountRefunded]), and the whole captured amount is refunded once that reaches
// amount_captured. Should Stripe not count the release, a partly captured charge would read
// less refunded than it is: a refund the row records in full would be a refund_failed finding
// for a person, and one caught up through ApplyRefund would be recorded short. Without the
// subtraction, every partly captured charge would read as refunded by what it released.
//
// [PaymentPolicy] judges a payments row, seen as a [LocalPayment] (status, amount and currency
// in minor units, the amount captured if not the whole, the amount refunded, the dispute's
// status), against a Payment. With a host row type of its own (pgstore.NewOf scans one from
// the table):
//
//	rec, err := reconcile.New(reconcile.Config[PaymentRow, *stripeadapter.Payment]{
//		Job: "payments", Source: store, Sink: store, Gateway: gateway.Payments(),
//		Classifier: stripeadapter.PaymentPolicy(func(r PaymentRow) stripeadapter.LocalPayment {
//			return stripeadapter.LocalPayment{Status: r.Status, Amount: r.Amount, Currency: r.Currency,
//				AmountRefunded: r.Refunded, DisputeStatus: r.DisputeStatus}
//		}),
//		Limiter: limiter,
//	})
//
// The first line that matches decides, and the decision's Diffs list every field that differs
// (amounts written in their currency, as "JPY 1,000" or "KWD 1.000"), whichever line decided.
// "Refunded by Stripe" is [Payment.AmountRefunded], what went back to the customer:
//
//	currency differs (in any case)           NeedsReview currency_mismatch
//	amount differs (in minor units)          NeedsReview amount_mismatch
//	any status pair but paid × succeeded     as PaymentIntentClassifier decides it (failed
//	                                         × requires_payment_method, a declined card, is
//	                                         in sync)
//	paid × succeeded, then:
//	  amount_received ≠ the row's captured
//	  amount (its amount unless it records
//	  AmountCaptured)                        NeedsReview partial_capture
//	  refunded by the row > by Stripe        NeedsReview refund_failed
//	  the dispute's status differs:
//	    lost                                 NeedsReview dispute_lost
//	    needs_response,
//	    warning_needs_response               NeedsReview dispute_needs_response
//	    won                                  Repairable dispute_won (ApplyDisputeStatus)
//	    any other                            Repairable dispute_updated (ApplyDisputeStatus)
//	    none at Stripe                       NeedsReview dispute_missing_externally
//	  refunded by Stripe > by the row        Repairable missed_refund, when the whole captured
//	                                         amount is refunded, else missed_partial_refund
//	                                         (ApplyRefund)
//	  otherwise                              InSync
//
// Why each goes where it goes:
//   - A payment in another currency, or of another amount, is not the payment the order
//     asked for: a price changed, a bug, or fraud, and whether to ship, charge again or refund
//     is a business decision. Never auto-apply it. Amounts are compared as integers in minor
//     units, never scaled: JPY has no decimals and KWD three.
//   - A capture other than the row records took other money than the row says: ship less,
//     charge the rest or cancel, a person decides, and records the captured amount through the
//     host's own writer (no repair command does: it is a decision, not a catch-up). From then
//     on the row is InSync and its refunds and disputes are judged as any payment's; a finding
//     per payment and kind would otherwise hide them behind the capture.
//   - A row that records more refunded than Stripe has (a refund that failed after
//     succeeding, or one never made) means the customer was told money came back that did
//     not: someone must refund again or tell them. The events lane names the failed refund and
//     its failure_reason.
//   - A dispute lost has taken the money back, and one that needs a response is lost unless
//     evidence reaches Stripe by its due_by (in the detail, "respond by" and the time in RFC
//     3339, UTC): both need a person, the second soon.
//   - A dispute the row records and Stripe does not have is a mistake on one side, which only
//     a person can tell.
//   - A dispute won, or one whose status merely moved on (under review, an inquiry closed),
//     and a refund made at Stripe (in the Dashboard, by support, by another service) are money
//     that already moved: catching our side up is safe and needs no one. The repair command's
//     canonical writer re-reads Stripe before it writes.
//   - Money is compared only for a payment both sides call paid: before that, the status
//     policy decides (a pending payment whose intent succeeded is missed_success first; its
//     refund is found once the row is paid).
//
// For a lane, [Gateway.PaymentEventsFeed] reads payment_intent.*, charge.refunded,
// charge.refund.updated, refund.* and charge.dispute.* events (PaymentEventTypes, 18 types in
// one list) and yields the current Payment of each intent they touch, read whole: an event
// says where to look, never what happened, so a dispute's outcome comes from dispute.status
// and a refund's from the Refund. Run every minute, a Dashboard refund, a failed refund or a
// dispute is a finding within two minutes. The sweep stays behind it: Stripe documents events
// that are never sent. [Gateway.PaymentReverseFeed] is ReverseFeed's scan, of Payments.
//
// # Subscriptions, invoices and Checkout Sessions
//
// Three more policies judge a host's rows against the objects of the same name, each a pure
// classifier and a reconcile.StateNamer whose decisions carry Diffs of every field that
// differs; the first line that matches decides. Stripe holds what was billed, collected and
// paid, so the row catches up through a repair command, whose canonical writer (the one the
// webhook handler calls) re-reads Stripe, wherever writing Stripe's side records what already
// happened or takes back what nobody paid for. Where our side did something Stripe never saw
// and would undo it (a cancellation, a payment, a void we record alone), a person decides:
// the customer may be billed for what we withdrew, or we may count money never received. What
// needs a person is decided before every repair, since a repair writes all of Stripe's side
// and would erase what the person must see.
//
// [SubscriptionPolicy] reads a [LocalSubscription] (status in Stripe's words,
// cancel_at_period_end, paid-through time). Statuses fall in four groups: billing (trialing,
// active, past_due: the row grants access), pending (incomplete), suspended (unpaid, paused)
// and ended (canceled, incomplete_expired, final at Stripe). The period end is
// [SubscriptionPeriodEnd], the latest current_period_end of the items.
//
//	unknown status on either side              NeedsReview unexpected:<ours>-><theirs>
//	row ended × Stripe billing                 NeedsReview billing_without_access
//	row ended × Stripe pending or suspended    NeedsReview ended_locally_not_externally
//	row cancels at period end, Stripe will
//	  renew (Stripe not ended)                 NeedsReview cancellation_missing_externally
//	row billing × canceled                     Repairable subscription_canceled_externally
//	row billing × pending, suspended,
//	  incomplete_expired                       Repairable access_without_billing
//	row pending or suspended × billing         Repairable missed_activation
//	any other status difference                Repairable missed_status_change
//	same status, then:
//	  paid-through after the period end
//	  (trialing, active, past_due)             Repairable paid_through_ahead
//	  Stripe cancels at period end, the row
//	  expects a renewal (Stripe not ended)     Repairable cancellation_scheduled_externally
//	  paid-through before the period end
//	  (trialing, active)                       Repairable paid_through_behind
//	  otherwise                                InSync
//
// Every repair is ApplySubscriptionStatus: the writer records status, SubscriptionPeriodEnd
// and cancel_at_period_end. Why each goes where it goes:
//   - Access Stripe no longer bills for (canceled in the Dashboard or by dunning, unpaid,
//     paused, never paid) is the drift that costs money, every day it stays. Taking it back is
//     what the customer.subscription.* handler would have done and needs no judgment: Stripe
//     is where billing happens, and the row only mirrors it.
//   - A row that ended a subscription Stripe still has, or that cancels at period end while
//     Stripe will renew, means a cancellation never reached Stripe: the customer is billed
//     for access we withdrew, or will be at renewal. Cancel at Stripe (and refund), or restore
//     the access: a person decides. Stripe never revives an ended subscription, so no missed
//     webhook explains it.
//   - A subscription that started billing (first payment made, resumed, recovered from
//     unpaid) and any other status change are money that already moved: catch up.
//   - A paid-through time after Stripe's period end grants access nobody billed for; a comp
//     belongs at Stripe (a trial or a credit), where it is billed as one. Before the period
//     end, a renewal was paid and the row missed it. Times are compared to the second;
//     past_due's period has moved on unpaid, so only a row ahead of it is drift. The zero
//     time is not compared, nor the period of a subscription Stripe does not bill.
//
// [InvoicePolicy] reads a [LocalInvoice] (status, currency, amount_due, amount_paid,
// amount_remaining in minor units). Stripe moves an invoice draft → open → paid,
// uncollectible or void, and uncollectible → paid or void, never back.
//
//	unknown status on either side              NeedsReview unexpected:<ours>-><theirs>
//	currency differs (in any case)             NeedsReview currency_mismatch
//	amount_due differs, neither a draft        NeedsReview amount_mismatch
//	row paid × any other                       NeedsReview paid_locally_not_externally
//	row void × any other                       NeedsReview voided_locally_not_externally
//	row uncollectible × draft, open            NeedsReview uncollectible_locally_not_externally
//	row open × draft                           NeedsReview finalized_locally_not_externally
//	row draft, open, uncollectible × paid      Repairable missed_payment
//	row draft, open, uncollectible × void      Repairable missed_void
//	row draft, open × uncollectible            Repairable missed_uncollectible
//	row draft × open                           Repairable missed_finalization
//	same status but draft, then:
//	  amount_paid higher in the row            NeedsReview paid_locally_not_externally
//	  amount_paid higher at Stripe             Repairable missed_payment
//	  amount_remaining differs                 Repairable amount_remaining_mismatch
//	  otherwise                                InSync
//
// Every repair is ApplyInvoiceStatus: the writer records status and the three amounts. A
// finalized invoice in another currency or of another amount is not the bill our books
// hold: a wrong charge or wrong revenue, for a person (a draft's amounts still change, and
// are compared once it is finalized). A row ahead of Stripe (paid, voided, written off or
// finalized here only) was never seen by Stripe, which may still collect, or never did: a
// person. Payment, voiding, a write-off and finalization at Stripe already happened:
// catch up.
//
// [CheckoutPolicy] reads a [LocalCheckout] (status, payment_status, whether the order was
// fulfilled). A session is due fulfilment when it is complete and its payment_status is paid
// or no_payment_required: a session paid by an asynchronous method (bank debits, vouchers)
// completes unpaid and is paid days later, or never, so complete alone is not paid. Its
// states read "status/payment_status".
//
//	unknown status on either side              NeedsReview unexpected:<ours>-><theirs>
//	fulfilled, session not due                 NeedsReview fulfilled_without_payment
//	not fulfilled, session due                 Repairable missed_fulfillment (FulfillCheckout)
//	same status and payment_status             InSync
//	row due (paid), session not                NeedsReview paid_locally_not_externally
//	row complete or expired × open             NeedsReview session_still_open
//	× expired                                  Repairable missed_expiry (ApplyCheckoutStatus)
//	× complete/unpaid                          Repairable missed_completion (ApplyCheckoutStatus)
//	otherwise                                  Repairable missed_session_update (ApplyCheckoutStatus)
//
// Goods shipped against a session that is not paid went out for nothing yet: a person, and
// never InFlight, though the payment may still come. A paid session whose order was not
// fulfilled is money taken for nothing: FulfillCheckout calls the host's fulfilment function,
// which re-reads the session and fulfils once. A row that says paid while Stripe does not,
// or a session closed here that Stripe still takes payment on, needs a person; the rest is
// catching up.
//
// # Connect
//
// A platform reconciles its connected accounts with a reconcile.FanOut: per account, a
// gateway from ObjectGateway.ForAccount (the platform's client and key, every request carrying
// Stripe-Account), a store over the account's rows (pgstore's Filter on the account column)
// and a job of its own name, so each account keeps its own cursor and lane positions; one
// Limiter for all. Stripe documents rate limits per Stripe account without saying whose budget
// a request with Stripe-Account counts against, so the conservative reading is taken: the
// platform's, which one shared Limiter never exceeds whichever way Stripe counts. An
// AccountsCheck proves the host's accounts table and the connected accounts agree both ways:
// missing_externally for a row Stripe does not connect (its 403 account_invalid to the
// retrieve of an account is read as "no such account"), missing_locally for a connected
// account no row names.
//
// # Testing
//
// Package stripetest is a stateful fake of the Stripe API over HTTP, with fault injection, for
// the host's own tests as much as ours. The wire format is checked against stripe-mock.
//
// The package is named stripeadapter so that it does not shadow stripe-go's stripe package.
package stripeadapter
