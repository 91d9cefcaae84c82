package stripetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// DefaultKey is the API key a Server accepts when Options.Key is empty.
const DefaultKey = "sk_test_stripetest"

// Options configures a Server. The zero value works.
type Options struct {
	// Key is the API key requests must carry, as "Authorization: Bearer <key>" or as the
	// basic-auth user (stripe-go uses the former). Empty means DefaultKey.
	Key string
	// Now is the clock for generated times: the default Created of objects and the time of
	// status-change events. Nil means time.Now.
	Now func() time.Time
	// SettlementCurrency is the currency of the platform's balance, in which its balance
	// transactions and payouts are; empty means "usd". A connected account's is its
	// Account.DefaultCurrency.
	SettlementCurrency string
	// Fee is the fee Stripe takes on a charge that settles as amount in currency (the
	// settlement currency, smallest unit); nil means 2.9% + 30, rounded to the nearest unit.
	Fee func(amount int64, currency string) int64
}

// Server is a running fake of the Stripe API. Its methods are safe for concurrent use, also
// while requests are being served.
type Server struct {
	key     string
	now     func() time.Time
	http    *httptest.Server
	closing chan struct{} // closed by Close, to end requests that wait or hang
	once    sync.Once

	mu         sync.Mutex // guards the objects below
	seq        uint64     // insertion order, the tie-break among equal created times
	intents    map[string]*intent
	intentsBy  map[string]*index[*intent] // by account, sorted by (created, seq)
	events     map[string]*event
	eventsBy   map[string]*index[*event]
	charges    map[string]*charge
	chargesBy  map[string]*index[*charge]
	refunds    map[string]*refund
	refundsBy  map[string]*index[*refund]
	disputes   map[string]*dispute
	disputesBy map[string]*index[*dispute]
	subs       map[string]*subscription
	subsBy     map[string]*index[*subscription]
	invoices   map[string]*invoice
	invoicesBy map[string]*index[*invoice]
	sessions   map[string]*session
	sessionsBy map[string]*index[*session]
	accounts   map[string]*account
	txns       map[string]*txn
	txnsBy     map[string]*index[*txn]
	// unpaid holds, per account, the balance transactions in no payout yet, oldest first,
	// which the account's next automatic payout looks through.
	unpaid    map[string][]*txn
	payouts   map[string]*payout
	payoutsBy map[string]*index[*payout]
	rates     map[[2]string]float64 // by presentment and settlement currency
	currency  string                // the platform's settlement currency, "" for usd
	fee       func(amount int64, currency string) int64
	// accountsIdx lists the platform's connected accounts, the only account-level list.
	accountsIdx index[*account]
	// reporting configures report runs; reportRuns and reportFiles hold them by run and by
	// result file, made with the first run.
	reporting   Reporting
	reportRuns  map[string]*reportRun
	reportFiles map[string]*reportRun

	ctl     sync.Mutex // guards faults, latency and the log, kept apart from the objects
	faults  []*injected
	latency time.Duration
	log     []*Request
	counts  map[Route]int
	// countsBy counts requests by route and Stripe-Account header, for fairness tests.
	countsBy map[routeAccount]int
}

// NewServer starts a Server, like httptest.NewServer; call Close when done.
func NewServer(opts Options) *Server {
	s := &Server{
		key:        opts.Key,
		now:        opts.Now,
		closing:    make(chan struct{}),
		intents:    make(map[string]*intent),
		intentsBy:  make(map[string]*index[*intent]),
		events:     make(map[string]*event),
		eventsBy:   make(map[string]*index[*event]),
		charges:    make(map[string]*charge),
		chargesBy:  make(map[string]*index[*charge]),
		refunds:    make(map[string]*refund),
		refundsBy:  make(map[string]*index[*refund]),
		disputes:   make(map[string]*dispute),
		disputesBy: make(map[string]*index[*dispute]),
		subs:       make(map[string]*subscription),
		subsBy:     make(map[string]*index[*subscription]),
		invoices:   make(map[string]*invoice),
		invoicesBy: make(map[string]*index[*invoice]),
		sessions:   make(map[string]*session),
		sessionsBy: make(map[string]*index[*session]),
		accounts:   make(map[string]*account),
		txns:       make(map[string]*txn),
		txnsBy:     make(map[string]*index[*txn]),
		unpaid:     make(map[string][]*txn),
		payouts:    make(map[string]*payout),
		payoutsBy:  make(map[string]*index[*payout]),
		rates:      make(map[[2]string]float64),
		currency:   strings.ToLower(opts.SettlementCurrency),
		fee:        opts.Fee,
		counts:     make(map[Route]int),
		countsBy:   make(map[routeAccount]int),
	}
	if s.key == "" {
		s.key = DefaultKey
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.fee == nil {
		s.fee = defaultFee
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's base URL, such as http://127.0.0.1:port, for stripe-go's
// BackendConfig.URL.
func (s *Server) URL() string { return s.http.URL }

// Key is the API key the server accepts.
func (s *Server) Key() string { return s.key }

// Close shuts the server down and waits for its requests to finish. Requests that are waiting
// out latency or hanging are ended first (their connections are dropped), so Close returns
// promptly. Close may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	s.http.Close()
}

// serve answers one request: log, latency, auth, the Stripe-Account header, faults, then the
// route's handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	route, id := matchRoute(r.Method, r.URL.Path)
	rec := s.record(r, route)
	w.Header().Set("Request-Id", newRequestID())

	if !s.sleep(r, s.baseLatency(), false) {
		// The client gave up or the server is closing: drop the connection rather than let
		// net/http send an empty 200.
		panic(http.ErrAbortHandler)
	}
	if f := s.authorize(r); f != nil {
		w.Header().Set("Www-Authenticate", `Basic realm="Stripe"`)
		s.fail(w, rec, f)
		return
	}
	if route == "" {
		s.fail(w, rec, &failure{http.StatusNotFound, apiError{
			Message: "Unrecognized request URL (" + r.Method + ": " + r.URL.Path + ").",
			Type:    errInvalidRequest,
		}})
		return
	}
	account := r.Header.Get("Stripe-Account")
	if f := s.checkAccount(account); f != nil {
		s.fail(w, rec, f)
		return
	}
	if f, ok := s.takeFault(route, id, account); ok {
		if answered := s.applyFault(w, r, rec, f); answered {
			return
		}
	}

	q := r.URL.Query()
	buf := bufPool.Get().(*[]byte)
	var (
		body = (*buf)[:0]
		f    *failure
	)
	switch route {
	case RetrievePaymentIntent:
		body, f = s.retrievePaymentIntent(body, account, id, q)
	case ListPaymentIntents:
		body, f = s.listPaymentIntents(body, account, q)
	case RetrieveEvent:
		body, f = s.retrieveEvent(body, account, id, q)
	case ListEvents:
		body, f = s.listEvents(body, account, q)
	case RetrieveCharge:
		body, f = s.retrieveCharge(body, account, id, q)
	case ListCharges:
		body, f = chargeObjects.list(s, body, account, q)
	case RetrieveBalanceTransaction:
		body, f = balanceTransactionObjects.retrieve(s, body, account, id, q)
	case ListBalanceTransactions:
		body, f = balanceTransactionObjects.list(s, body, account, q)
	case RetrievePayout:
		body, f = payoutObjects.retrieve(s, body, account, id, q)
	case ListPayouts:
		body, f = payoutObjects.list(s, body, account, q)
	case RetrieveRefund:
		body, f = refundObjects.retrieve(s, body, account, id, q)
	case ListRefunds:
		body, f = refundObjects.list(s, body, account, q)
	case RetrieveDispute:
		body, f = disputeObjects.retrieve(s, body, account, id, q)
	case ListDisputes:
		body, f = disputeObjects.list(s, body, account, q)
	case RetrieveSubscription:
		body, f = subscriptionObjects.retrieve(s, body, account, id, q)
	case ListSubscriptions:
		body, f = subscriptionObjects.list(s, body, account, q)
	case RetrieveInvoice:
		body, f = invoiceObjects.retrieve(s, body, account, id, q)
	case ListInvoices:
		body, f = invoiceObjects.list(s, body, account, q)
	case RetrieveCheckoutSession:
		body, f = sessionObjects.retrieve(s, body, account, id, q)
	case ListCheckoutSessions:
		body, f = sessionObjects.list(s, body, account, q)
	case RetrieveAccount:
		body, f = s.retrieveAccount(body, account, id, q)
	case ListAccounts:
		body, f = s.listAccounts(body, account, q)
	case CreateReportRun:
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			f = invalidRequest("", "Invalid request body.")
		} else {
			body, f = s.createReportRun(body, account, r.PostForm)
		}
	case RetrieveReportRun:
		body, f = s.retrieveReportRun(body, account, id)
	case RetrieveReportType:
		body, f = s.retrieveReportType(body, id)
	case DownloadFile:
		var contents []byte
		if contents, f = s.fileContents(account, id); f == nil {
			s.answered(rec, http.StatusOK)
			w.Header().Set("Content-Type", "text/csv")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(contents)
			return
		}
	}
	if f != nil {
		s.fail(w, rec, f)
	} else {
		s.reply(w, rec, http.StatusOK, body)
	}
	if cap(body) <= maxPooled {
		*buf = body
		bufPool.Put(buf)
	}
}

// authorize checks the API key, answering like Stripe: 401 for a missing or wrong key, with
// the wrong key masked in the message.
func (s *Server) authorize(r *http.Request) *failure {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		key, _, _ = r.BasicAuth()
	}
	key = strings.TrimSpace(key)
	switch {
	case key == s.key:
		return nil
	case key == "":
		return &failure{http.StatusUnauthorized, apiError{
			Message: "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
			Type:    errInvalidRequest,
		}}
	default:
		return &failure{http.StatusUnauthorized, apiError{
			Message: "Invalid API Key provided: " + maskKey(key),
			Type:    errInvalidRequest,
		}}
	}
}

// reply writes a JSON answer and records its status before the client can see it, so a test
// that got a response always finds its status in the log.
func (s *Server) reply(w http.ResponseWriter, rec *Request, status int, body []byte) {
	s.answered(rec, status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fail writes an error answer.
func (s *Server) fail(w http.ResponseWriter, rec *Request, f *failure) {
	b, err := json.Marshal(errorBody{f.err})
	if err != nil {
		// errorBody holds only strings; this cannot fail.
		panic("stripetest: encoding an error: " + err.Error())
	}
	s.reply(w, rec, f.status, b)
}

// sleep waits d, or forever, unless the request's client gives up or the server closes first;
// it reports whether the wait ran out normally.
func (s *Server) sleep(r *http.Request, d time.Duration, forever bool) bool {
	if d <= 0 && !forever {
		return true
	}
	var expired <-chan time.Time
	if !forever {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-expired:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	}
}
