// Package stripetest is a stateful fake of the part of the Stripe API this project reads,
// PaymentIntents with their charges, refunds and disputes, Subscriptions, Invoices, Checkout
// Sessions, payouts and balance transactions, Connect accounts, and their events, served over real HTTP so that stripe-go pointed at
// it works unchanged. Tests use it to exercise the Stripe adapter end to end: pagination, Connect
// accounts, rate limits, outages and slow answers, money that changes without the intent's status
// changing, all without the network or a Stripe account.
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
// PaymentIntent reads one back. Every kind of object has the same three: Add<Kind> (with a
// bulk Add<Kind>s), the methods that change it as Stripe would, each recording Stripe's
// events, and <Kind> to read it back. Times are kept in whole seconds, like Stripe's.
// Options.Now is the clock for defaults and for the time of changes and their events.
//
// # Billing
//
// AddSubscription stores a subscription "sub_..." with one item, which carries
// current_period_start and current_period_end (where API version basil, stripe-go v82's, puts
// them). SetSubscriptionStatus moves it through Stripe's eight statuses (canceled and
// incomplete_expired are final; canceled sets canceled_at and ended_at),
// SetCancelAtPeriodEnd sets cancel_at_period_end with cancel_at (the period's end) and
// canceled_at (when asked), and SetSubscriptionPeriod renews it. GET /v1/subscriptions
// filters by status as Stripe does: without status it hides canceled subscriptions (Stripe:
// "By default, returns a list of subscriptions that have not been canceled";
// incomplete_expired ones are shown), status=all shows every one, status=ended canceled and
// incomplete_expired ones, and a status its own; and by customer.
//
// AddInvoice stores an invoice "in_..." with amount_due, amount_paid and amount_remaining (due
// less paid); an invoice of a subscription names it at parent.subscription_details.subscription
// (basil's place; the top-level subscription field is gone) and becomes the subscription's
// latest_invoice when it is its newest. SetInvoiceStatus finalizes, pays, voids or marks it
// uncollectible (paid and void are final, a draft is finalized first), with
// status_transitions; FailInvoicePayment counts a failed attempt; SetInvoiceAmountPaid records
// a partial payment. GET /v1/invoices filters by status, subscription and customer.
//
// AddCheckoutSession stores a Checkout Session "cs_test_..." in payment, subscription or setup
// mode, with amount_total, payment_status and its payment_intent or subscription.
// CompleteCheckoutSession completes an open session (paid, unpaid for a delayed payment
// method, or no_payment_required), SettleCheckoutSession ends a delayed payment, and
// ExpireCheckoutSession expires an open one. GET /v1/checkout/sessions filters by status,
// payment_intent, subscription and customer.
//
// # Connect
//
// Every object belongs to the platform or to a connected account (its Account field): a
// request with a Stripe-Account header sees only that account's objects and events, one
// without it only the platform's, and anything else is "No such <object>" (404). AddAccount
// stores a connected account "acct_..." (a zero Account has just been created: charges and
// payouts disabled, details not submitted), UpdateAccount changes its onboarding state and
// requirements.disabled_reason and records account.updated on the account, and
// DisconnectAccount takes the platform's access away. An object added for an account the
// server does not have creates it, as an onboarded standard account, so fixtures need not
// declare accounts. GET /v1/accounts lists the platform's accounts (the platform only; with a
// Stripe-Account header it is a 400) and GET /v1/accounts/{id} reads one.
//
// A Stripe-Account header naming an account the platform does not have, or has lost, is
// refused before anything else with Stripe's answer: 403, code account_invalid, "The provided
// key 'sk_test_****...' does not have access to account 'acct_...' (or that account does not
// exist). Application access may have been revoked."; GET /v1/accounts/{id} of such an account
// answers the same. Stripe does not tell a missing account from an inaccessible one, and the
// fake does not either.
//
// # Money
//
// An intent that requires capture or succeeds, when added so or through SetStatusAt, gets one
// charge "ch_...", its latest_charge: the intent's amount and currency, amount_captured (what
// the intent received once captured, 0 before), amount_refunded, refunded (the whole captured
// amount is), disputed, status succeeded. PaymentIntent.AmountReceived and SetAmountReceived
// model a partial capture: the charge's amount_captured is what was received, and its
// amount_refunded counts the released remainder, amount − amount_captured, as Stripe's charges
// have been seen to (not documented; see the stripepolicy package doc), so a refund of the
// whole captured amount brings amount_refunded to amount. Refunds are limited to what was
// captured less what the refunds returned. GET /v1/charges/{id} reads a charge, and
// GET /v1/charges lists them, filtered by payment_intent (its one charge) and created; a
// customer or transfer_group filter selects none, since the fake's charges have neither.
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
// # Payouts
//
// Money that moves leaves balance transactions "txn_..." as Stripe's does, in the account's
// settlement currency (Options.SettlementCurrency for the platform, Account.DefaultCurrency
// for a connected account; "usd" by default): a charge when it is captured (type charge,
// reporting category charge, the amount captured less Stripe's fee, Options.Fee or 2.9% + 30,
// pending until available_on two days later); a refund (refund, negative, no fee, available at
// once) and, when a refund that counted fails or is canceled, refund_failure (positive); a
// chargeback (adjustment, reporting category dispute, negative, with the $15.00 dispute fee)
// and, when it is won, the funds reinstated (adjustment, dispute_reversal, positive, the fee
// kept); and FailPayment, a bank debit returned after it succeeded (payment_failure_refund,
// charge_failure, negative; the charge becomes failed and the intent requires a payment method
// again, recording charge.failed and payment_intent.payment_failed). A charge in another
// currency than the account's settles at the rate SetExchangeRate gave the pair (1 otherwise),
// round(amount × rate), with exchange_rate set; refunds and disputes convert at the rate of
// their own time. The charge's, refund's and dispute's balance_transaction,
// failure_balance_transaction and balance_transactions name them. AddBalanceTransaction adds
// one of any type string, for drift a policy must report: a type it does not know, a source
// the host never booked, a transaction put into an existing payout so that it no longer sums.
//
// AddPayout stores a payout "po_...". An automatic one (the zero value) takes, at its created
// time, every balance transaction of its account and currency that is available and in no
// payout yet (a failed payout's payout_failure among them), links them to itself, and pays out
// their net; its own balance transaction (type payout, −amount) is listed with them, so a
// payout's transactions, its own included, net to zero. GET /v1/balance_transactions?payout=
// lists them. A manual payout (Manual, automatic false) takes its Amount and cannot be
// itemized: the payout filter answers Stripe's 400 "Balance transaction history can only be
// filtered on automatic transfers, not manual." (Stripe's docs: "For automatic Stripe payouts
// only"). SetPayoutStatus moves a payout from pending to in_transit and paid, FailPayout fails
// it (from pending, in_transit, or paid: Stripe documents that some payouts show paid and then
// fail) with failure_code and failure_message, and CancelPayout cancels a pending one; failed
// and canceled are final, and a failed or canceled payout's money comes back as a
// payout_failure or payout_cancel transaction, its failure_balance_transaction.
// reconciliation_status is not_applicable for a manual payout, in_progress for an automatic
// one, and completed once it is paid. Adding records payout.created; a change records
// payout.updated, then payout.paid, payout.failed or payout.canceled, and
// payout.reconciliation_completed when the reconciliation completes.
//
// GET /v1/payouts lists payouts, filtered by status, created and arrival_date (exact or a
// range; destination selects none), and GET /v1/payouts/{id} reads one.
// GET /v1/balance_transactions lists balance transactions, filtered by payout, type, source,
// currency and created, 100 a page at most, and GET /v1/balance_transactions/{id} reads one;
// a transaction's status is pending before its available_on and available from it, by
// Options.Now. expand[]=data.source renders a transaction's charge, refund, dispute or payout
// in place of its id (a source the fake does not have stays an id, and paths below source are
// not checked); a payout's balance_transaction and failure_balance_transaction, and a
// charge's or refund's, expand too.
//
// # Reports
//
// POST /v1/reporting/report_runs runs the itemized payout reconciliation report
// (PayoutReconciliationReport, payout_reconciliation.itemized.5) from the fake's own payouts and
// balance transactions, the world the payout filter lists: a row for each transaction paid out
// in an automatic payout whose arrival_date (its effective time) is in [interval_start,
// interval_end), not pending nor in transit, the payout's own transaction left out, with the
// asked columns (gross, fee and net in major units; customer_facing_amount and the ids from the
// transaction's charge, refund or dispute), filtered by currency and reporting_category. It
// checks the interval against the report type's data_available_start and _end, and refuses
// unknown columns and parameters with a 400. GET /v1/reporting/report_runs/{id} answers pending
// for Reporting.Polls retrieves, then succeeded with a result file (or failed with
// Reporting.Fail); GET /v1/reporting/report_types/{id} reads the report type; the file's
// contents are served at GET /v1/files/{id}/contents on the fake's own base URL (Stripe's
// files.stripe.com, which stripe-mock does not serve). SetReporting sets the data window, the
// polls, a failure, and the hostile knobs: a result url on another host, contents rewritten.
//
// # Expand
//
// expand[]=latest_charge on a retrieve and expand[]=data.latest_charge on a list render the charge
// in place of its id; likewise payment_intent on a charge, charge and payment_intent on a refund or
// a dispute, latest_invoice on a subscription, parent.subscription_details.subscription on an
// invoice, payment_intent and subscription on a Checkout Session, and the balance
// transactions and sources of # Payouts, nested up to Stripe's four
// levels (a list's data counts as one). A path Stripe would refuse is Stripe's 400: "This property
// cannot be expanded (...)." for a field that is not expandable (with Stripe's hint to start a
// list's path with data), and property_expansion_max_depth for more than four levels. stripe-mock
// accepts such paths, which is why the fake checks them. A charge's refunds sub-list, rendered only
// when expanded, holds its ten newest refunds. Expandable fields of objects the fake does not model
// (customer, review, ...) are accepted and stay as they are unexpanded (null, or
// the id of a subscription's or an invoice's customer), and paths below them are not checked.
//
// # Lists
//
// GET /v1/payment_intents, /v1/charges, /v1/refunds, /v1/disputes, /v1/subscriptions,
// /v1/invoices, /v1/checkout/sessions, /v1/payouts, /v1/balance_transactions, /v1/accounts and
// /v1/events list newest first (by created, then
// later-added first) and take Stripe's parameters: limit (1 to 100, default 10), starting_after,
// ending_before, and created as an exact time or with gt, gte, lt and lte. ending_before returns
// the limit objects just newer than the cursor, still newest first, and has_more tells whether
// objects remain in the direction of paging. A filtered list (refunds or disputes by payment_intent
// or charge, subscriptions by status) pages the same way; a cursor from outside it positions the
// page by the cursor's created time. Unknown parameters are refused with Stripe's 400 "Received
// unknown parameter", so client mistakes show up in tests rather than in production. Objects are
// kept sorted per account and pages are found by binary search: a page costs microseconds over 200k
// objects, so benchmarks measure the client, not the fake.
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
// subscription records customer.subscription.created, and its changes
// customer.subscription.updated, .deleted (canceled), .paused and .resumed; an invoice
// invoice.created, and its changes invoice.finalized, .paid with .payment_succeeded, .voided,
// .marked_uncollectible, .payment_failed and .updated; a Checkout Session nothing when created
// (as in Stripe), then checkout.session.completed, .async_payment_succeeded,
// .async_payment_failed and .expired; a payout payout.created, .updated, .paid, .failed,
// .canceled and .reconciliation_completed (see # Payouts); an account account.updated. Each event holds a snapshot
// of its object after the change and belongs to the object's account.
// GET /v1/events filters by type (with * as a wildcard, as in payment_intent.*), types (up to
// 20 exact types) and created; GET /v1/events/{id} retrieves one.
//
// # Faults
//
// Inject makes requests of a route fail or slow down: an HTTP status with a Stripe-shaped error
// (429 rate limits, 5xx outages) or a raw body such as a proxy's HTML page, extra headers such
// as Retry-After, latency, or a hang. A fault can be limited to one object id and to a number
// of requests, and to one Connect account (Fault.Account; Platform for requests without a
// Stripe-Account header), so that one account is rate limited or down while the others answer.
// SetLatency delays every request. Waiting requests end when their client gives up
// or the server closes, so Close never hangs.
//
// # Requests
//
// Requests counts the requests of a route, AccountRequests those of one Connect account (for
// fairness across accounts), and Log returns them all, with arrival time, query,
// Stripe-Account header and answered status, for assertions on call patterns and rates.
//
// # Not modeled
//
// Writes (creating, confirming or capturing intents, refunding or answering disputes through
// the API), webhooks, idempotency keys, search, more than one charge per intent (an intent
// keeps its first charge, and canceling it releases nothing), the balance itself
// (GET /v1/balance), payout schedules and minimum balances (a payout is made when a test adds
// it, and the fake does not check that the balance covers it), transfers, application fees and
// the other balance transaction types Stripe creates (AddBalanceTransaction plants them), the
// payment type of non-card charges (every captured charge is type charge), a captured amount
// changed afterwards by SetAmountReceived (its balance transaction keeps the amount captured),
// balance transactions' statuses inside event snapshots of disputes (rendered as of their
// creation), the customer filter of payment intents (accepted and ignored), the 30-day
// window of events, customers, prices and invoice lines (subscriptions have one item without a
// price; an invoice's lines are empty), the other filters of the billing lists (price,
// collection_method, current_period_*, due_date: refused as unknown parameters rather than
// ignored), the expiry of Checkout Sessions by time, and webhooks-only events such as
// account.application.deauthorized.
// Unsupported paths and methods answer 404 "Unrecognized request URL".
package stripetest
