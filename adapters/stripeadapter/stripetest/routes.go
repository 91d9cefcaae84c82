package stripetest

import "strings"

// Route names an endpoint of the fake, for fault injection and request counting.
type Route string

// Routes the fake serves. The values are the dotted names Stripe uses for API operations.
const (
	RetrievePaymentIntent Route = "payment_intents.retrieve" // GET /v1/payment_intents/{id}
	ListPaymentIntents    Route = "payment_intents.list"     // GET /v1/payment_intents
	ListEvents            Route = "events.list"              // GET /v1/events
	RetrieveEvent         Route = "events.retrieve"          // GET /v1/events/{id}
	RetrieveCharge        Route = "charges.retrieve"         // GET /v1/charges/{id}
	ListCharges           Route = "charges.list"             // GET /v1/charges
	ListRefunds           Route = "refunds.list"             // GET /v1/refunds
	RetrieveRefund        Route = "refunds.retrieve"         // GET /v1/refunds/{id}
	ListDisputes          Route = "disputes.list"            // GET /v1/disputes
	RetrieveDispute       Route = "disputes.retrieve"        // GET /v1/disputes/{id}
	ListSubscriptions     Route = "subscriptions.list"       // GET /v1/subscriptions
	RetrieveSubscription  Route = "subscriptions.retrieve"   // GET /v1/subscriptions/{id}
	ListInvoices          Route = "invoices.list"            // GET /v1/invoices
	RetrieveInvoice       Route = "invoices.retrieve"        // GET /v1/invoices/{id}
	ListCheckoutSessions  Route = "checkout.sessions.list"   // GET /v1/checkout/sessions
	// RetrieveCheckoutSession is GET /v1/checkout/sessions/{id}.
	RetrieveCheckoutSession Route = "checkout.sessions.retrieve"
	ListAccounts            Route = "accounts.list"     // GET /v1/accounts (the platform's)
	RetrieveAccount         Route = "accounts.retrieve" // GET /v1/accounts/{id}
	ListPayouts             Route = "payouts.list"      // GET /v1/payouts
	RetrievePayout          Route = "payouts.retrieve"  // GET /v1/payouts/{id}
	// ListBalanceTransactions is GET /v1/balance_transactions.
	ListBalanceTransactions Route = "balance_transactions.list"
	// RetrieveBalanceTransaction is GET /v1/balance_transactions/{id}.
	RetrieveBalanceTransaction Route = "balance_transactions.retrieve"
	// CreateReportRun is POST /v1/reporting/report_runs.
	CreateReportRun Route = "reporting.report_runs.create"
	// RetrieveReportRun is GET /v1/reporting/report_runs/{id}.
	RetrieveReportRun Route = "reporting.report_runs.retrieve"
	// RetrieveReportType is GET /v1/reporting/report_types/{id}.
	RetrieveReportType Route = "reporting.report_types.retrieve"
	// DownloadFile is GET /v1/files/{id}/contents, a file's contents (files.stripe.com at
	// Stripe, the fake's own base URL here).
	DownloadFile Route = "files.contents"
)

// matchRoute maps a request to its route and the object id in its path; route "" means the
// fake does not serve it. Only GET is served, and the POST that creates a report run: the
// project reads from Stripe, and writes nothing that moves money.
func matchRoute(method, path string) (Route, string) {
	switch {
	case method == "POST" && path == "/v1/reporting/report_runs":
		return CreateReportRun, ""
	case method != "GET":
		return "", ""
	}
	for _, r := range [...]struct {
		prefix, suffix string
		route          Route
	}{
		{"/v1/reporting/report_runs/", "", RetrieveReportRun},
		{"/v1/reporting/report_types/", "", RetrieveReportType},
		{"/v1/files/", "/contents", DownloadFile},
	} {
		if rest, ok := strings.CutPrefix(path, r.prefix); ok {
			if id, ok := strings.CutSuffix(rest, r.suffix); ok && id != "" && !strings.Contains(id, "/") {
				return r.route, id
			}
			return "", ""
		}
	}
	for _, r := range [...]struct {
		prefix         string
		list, retrieve Route
	}{
		{"/v1/payment_intents", ListPaymentIntents, RetrievePaymentIntent},
		{"/v1/events", ListEvents, RetrieveEvent},
		{"/v1/charges", ListCharges, RetrieveCharge},
		{"/v1/refunds", ListRefunds, RetrieveRefund},
		{"/v1/disputes", ListDisputes, RetrieveDispute},
		{"/v1/subscriptions", ListSubscriptions, RetrieveSubscription},
		{"/v1/invoices", ListInvoices, RetrieveInvoice},
		{"/v1/checkout/sessions", ListCheckoutSessions, RetrieveCheckoutSession},
		{"/v1/accounts", ListAccounts, RetrieveAccount},
		{"/v1/payouts", ListPayouts, RetrievePayout},
		{"/v1/balance_transactions", ListBalanceTransactions, RetrieveBalanceTransaction},
	} {
		rest, ok := strings.CutPrefix(path, r.prefix)
		switch {
		case !ok:
			continue
		case rest == "" || rest == "/":
			return r.list, ""
		case rest[0] == '/' && !strings.Contains(rest[1:], "/"):
			return r.retrieve, rest[1:]
		}
	}
	return "", ""
}
