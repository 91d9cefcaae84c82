package stripetest

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// BalanceTransaction is a balance transaction "txn_..." held by the fake: money entering or
// leaving an account's Stripe balance, in the account's settlement currency. The fake creates
// them as money moves (see the package doc, # Payouts); AddBalanceTransaction adds one directly,
// of any type, to plant what Stripe might hold and a policy does not expect.
type BalanceTransaction struct {
	// ID is the object's id; empty means a generated one, "txn_" and 24 alphanumeric
	// characters.
	ID string
	// Account is the Connect account whose balance it moves; "" is the platform.
	Account string
	// Type is Stripe's type, such as charge, refund, adjustment or payout. Any non-empty string
	// is accepted, so that a test can plant a type a policy does not know.
	Type string
	// Amount is the gross amount in the currency's smallest unit: positive into the balance,
	// negative out of it.
	Amount int64
	// Fee is what Stripe kept, positive when assessed; net is Amount − Fee.
	Fee int64
	// Net is Amount − Fee, filled in when read back; AddBalanceTransaction computes it and
	// refuses a fixture that sets it.
	Net int64
	// Currency is the settlement currency, lowercase; empty means the account's (see
	// Options.SettlementCurrency and Account.DefaultCurrency).
	Currency string
	// ExchangeRate converts the source's presentment currency into Currency; zero means none
	// (null), as for a transaction in the settlement currency.
	ExchangeRate float64
	// Created is when the transaction was created; zero means Options.Now.
	Created time.Time
	// AvailableOn is when its net becomes available to pay out; zero means Created. The
	// transaction's status is pending before it and available from it, by Options.Now.
	AvailableOn time.Time
	// Status is pending or available, filled in when read back (by Options.Now and
	// AvailableOn); AddBalanceTransaction refuses a fixture that sets it.
	Status stripe.BalanceTransactionStatus
	// ReportingCategory is Stripe's reporting_category; empty means the category Stripe gives
	// the type (charge for charge and payment, refund for refund, ...), other_adjustment for a
	// type the fake does not know.
	ReportingCategory string
	// Source is the id of the object the transaction relates to ("ch_...", "re_...", "dp_...",
	// "po_..."), rendered as the object when expanded if the fake has it in the account, and
	// as the id otherwise; empty means null.
	Source string
	// Description is Stripe's description; empty means null.
	Description string
	// Payout is the automatic payout "po_..." that paid the transaction out. On
	// AddBalanceTransaction, a payout id puts the transaction into that existing automatic
	// payout without changing the payout's amount (so the payout no longer sums, a drift to
	// plant); empty leaves it to the next automatic payout of its account and currency.
	Payout string
}

// txnState is a balance transaction as stored. It never changes once created, so disputes and
// events can hold it by pointer.
type txnState struct {
	id, account       string
	typ               string
	amount, fee       int64
	currency          string
	exchangeRate      float64 // 0: null
	created           int64
	availableOn       int64
	reportingCategory string
	source            string
	description       string
	feeDescription    string // of the one fee_details entry, when fee != 0
}

// txn is a stored balance transaction.
type txn struct {
	txnState
	seq    uint64
	payout string // the automatic payout it was paid out in, "" while unpaid
}

func (t *txn) sortKey() sortKey { return sortKey{t.created, t.seq} }

// net is what the transaction adds to the balance.
func (t *txnState) net() int64 { return t.amount - t.fee }

// statusAt is the transaction's status at the time now: its funds are available from
// available_on.
func (t *txnState) statusAt(now int64) stripe.BalanceTransactionStatus {
	if t.availableOn <= now {
		return stripe.BalanceTransactionStatusAvailable
	}
	return stripe.BalanceTransactionStatusPending
}

// reportingCategories are the reporting categories Stripe gives the types the fake creates and
// a few common others; see Stripe's reporting-categories documentation.
var reportingCategories = map[string]string{
	"charge":                 "charge",
	"payment":                "charge",
	"refund":                 "refund",
	"payment_refund":         "refund",
	"refund_failure":         "refund_failure",
	"payment_failure_refund": "charge_failure",
	"adjustment":             "other_adjustment",
	"payout":                 "payout",
	"payout_failure":         "payout_reversal",
	"payout_cancel":          "payout_reversal",
	"stripe_fee":             "fee",
	"stripe_fx_fee":          "fee",
	"tax_fee":                "tax",
	"application_fee":        "platform_earning",
	"application_fee_refund": "platform_earning_refund",
	"transfer":               "transfer",
	"transfer_refund":        "transfer_reversal",
	"topup":                  "topup",
	"topup_reversal":         "topup_reversal",
}

// Timing and fees of the money the fake moves.
const (
	// availableAfter is how long a charge's funds stay pending: two days, Stripe's standard
	// settlement for US card payments.
	availableAfter = 2 * 24 * time.Hour
	// disputeFee is what a chargeback costs, in the settlement currency's smallest unit
	// (Stripe's US dispute fee is $15.00).
	disputeFee = 1500
)

// defaultFee is the fee on a charge when Options.Fee is nil: 2.9% + 30, rounded to the nearest
// unit, Stripe's US card pricing.
func defaultFee(amount int64, currency string) int64 {
	return int64(math.Round(float64(amount)*0.029)) + 30
}

// SetExchangeRate sets the rate at which money in the presentment currency from settles in the
// currency to (both lowercase ISO codes): a charge of amount in from settles as
// round(amount × rate) in to, with exchange_rate rate, as Stripe's balance transactions do. A
// pair without a rate converts at 1 (amounts unchanged, exchange_rate still set). It applies
// to money that moves from then on; it panics for a rate that is not positive.
func (s *Server) SetExchangeRate(from, to string, rate float64) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		panic(fmt.Sprintf("stripetest: exchange rate %v is not positive", rate))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rates[[2]string{strings.ToLower(from), strings.ToLower(to)}] = rate
}

// settlementCurrency is the currency the account's balance is kept in; the caller holds s.mu.
func (s *Server) settlementCurrency(account string) string {
	if a := s.accounts[account]; a != nil && a.defaultCurrency != "" {
		return a.defaultCurrency
	}
	if account == "" && s.currency != "" {
		return s.currency
	}
	return "usd"
}

// settle converts amount in the presentment currency into the account's settlement currency,
// returning the currency, the amount and the exchange rate (0 when none applies). The caller
// holds s.mu.
func (s *Server) settle(account, currency string, amount int64) (string, int64, float64) {
	to, currency := s.settlementCurrency(account), strings.ToLower(currency)
	if currency == to {
		return to, amount, 0
	}
	rate, ok := s.rates[[2]string{currency, to}]
	if !ok {
		rate = 1
	}
	return to, int64(math.Round(float64(amount) * rate)), rate
}

// moveMoney records a balance transaction the fake creates as money moves: amount in the
// presentment currency is settled into the account's currency, and fee, if not nil, is
// computed on the settled amount. It returns the transaction's id. The caller holds s.mu.
func (s *Server) moveMoney(account, typ, category, source, currency string, amount int64, fee func(settled int64, currency string) int64, feeDescription string, at int64, availableOn int64) string {
	cur, settled, rate := s.settle(account, currency, amount)
	st := txnState{
		account: account, typ: typ, amount: settled, currency: cur, exchangeRate: rate,
		created: at, availableOn: availableOn, reportingCategory: category, source: source,
	}
	if fee != nil {
		st.fee = fee(settled, cur)
		st.feeDescription = feeDescription
	}
	return s.storeTxn(st, "").id
}

// storeTxn stores a balance transaction, generating its id if it has none, and links it to an
// automatic payout when payout is not empty; the caller holds s.mu.
func (s *Server) storeTxn(st txnState, payout string) *txn {
	if st.id == "" {
		st.id = s.newID("txn_", func(id string) bool { return s.txns[id] != nil })
	}
	s.seq++
	t := &txn{txnState: st, seq: s.seq, payout: payout}
	s.txns[t.id] = t
	indexOf(s.txnsBy, t.account).add(t)
	if payout != "" {
		s.payouts[payout].txns.add(t)
	} else if t.typ != "payout" {
		s.unpaid[t.account] = append(s.unpaid[t.account], t)
	}
	return t
}

// AddBalanceTransaction stores a balance transaction and returns its id. It records no event:
// Stripe sends none for balance transactions. It panics, as a broken fixture should, if the
// id is used or does not start with txn_, the type is empty, Net or Status is set, or Payout
// names a payout that is not an automatic one of the same account.
func (s *Server) AddBalanceTransaction(bt BalanceTransaction) string {
	return s.AddBalanceTransactions([]BalanceTransaction{bt})[0]
}

// AddBalanceTransactions stores many balance transactions at once, like AddBalanceTransaction,
// and returns their ids in order.
func (s *Server) AddBalanceTransactions(bts []BalanceTransaction) []string {
	now := s.now().Unix()
	ids := make([]string, len(bts))
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(bts) > len(s.txns) {
		s.txns = grown(s.txns, len(bts))
	}
	for i, bt := range bts {
		st := txnState{
			id: bt.ID, account: bt.Account, typ: bt.Type, amount: bt.Amount, fee: bt.Fee,
			currency: bt.Currency, exchangeRate: bt.ExchangeRate, created: now,
			reportingCategory: bt.ReportingCategory, source: bt.Source, description: bt.Description,
		}
		switch {
		case st.typ == "":
			panic("stripetest: a balance transaction without a type")
		case bt.Net != 0 || bt.Status != "":
			panic("stripetest: a balance transaction's net and status are the fake's to compute")
		case st.id != "" && !strings.HasPrefix(st.id, "txn_"):
			panic("stripetest: balance transaction id " + st.id + " does not start with txn_")
		case st.id != "" && s.txns[st.id] != nil:
			panic("stripetest: duplicate balance transaction id " + st.id)
		case math.IsNaN(st.exchangeRate) || math.IsInf(st.exchangeRate, 0) || st.exchangeRate < 0:
			panic(fmt.Sprintf("stripetest: exchange rate %v", st.exchangeRate))
		}
		if !bt.Created.IsZero() {
			st.created = bt.Created.Unix()
		}
		st.availableOn = st.created
		if !bt.AvailableOn.IsZero() {
			st.availableOn = bt.AvailableOn.Unix()
		}
		if st.currency == "" {
			st.currency = s.settlementCurrency(st.account)
		}
		if st.reportingCategory == "" {
			st.reportingCategory = reportingCategories[st.typ]
			if st.reportingCategory == "" {
				st.reportingCategory = "other_adjustment"
			}
		}
		if st.fee != 0 {
			st.feeDescription = "Stripe processing fees"
		}
		if bt.Payout != "" {
			po := s.payouts[bt.Payout]
			if po == nil || !po.automatic || po.account != st.account {
				panic("stripetest: balance transaction for " + bt.Payout + ", which is not an automatic payout of its account")
			}
		}
		s.knowAccount(st.account)
		ids[i] = s.storeTxn(st, bt.Payout).id
	}
	return ids
}

// BalanceTransaction returns the balance transaction with the id, whatever its account, with
// its status at Options.Now.
func (s *Server) BalanceTransaction(id string) (BalanceTransaction, bool) {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.txns[id]
	if !ok {
		return BalanceTransaction{}, false
	}
	return BalanceTransaction{
		ID: t.id, Account: t.account, Type: t.typ, Amount: t.amount, Fee: t.fee, Net: t.net(),
		Currency: t.currency, ExchangeRate: t.exchangeRate, Created: unixTime(t.created),
		AvailableOn: unixTime(t.availableOn), Status: t.statusAt(now),
		ReportingCategory: t.reportingCategory, Source: t.source, Description: t.description,
		Payout: t.payout,
	}, true
}

// balanceTransactionObjects serves the balance transaction routes.
var balanceTransactionObjects = objectKind[*txn]{object: kindBalanceTransaction, path: "/v1/balance_transactions",
	param:     "id",
	byID:      func(s *Server) map[string]*txn { return s.txns },
	byAccount: func(s *Server) map[string]*index[*txn] { return s.txnsBy },
	account:   func(t *txn) string { return t.account },
	render:    func(b []byte, t *txn, x expander) []byte { return appendBalanceTransaction(b, &t.txnState, x) },
	own: func(param string) bool {
		return param == "payout" || param == "type" || param == "source" || param == "currency"
	},
	selection: txnSelection,
}

// txnSelection reads the filters of GET /v1/balance_transactions: payout (an automatic payout's
// transactions; a manual payout's cannot be itemized, and Stripe refuses the filter), type,
// source and currency. The caller holds s.mu.
func txnSelection(s *Server, account string, q url.Values) (*index[*txn], func(*txn) bool, *failure) {
	x := s.txnsBy[account]
	if q.Has("payout") {
		id := q.Get("payout")
		po, ok := s.payouts[id]
		if !ok || po.account != account {
			return nil, nil, noSuch(400, "payout", id, "payout")
		}
		if !po.automatic {
			// Stripe's answer (seen in the wild; its docs: "For automatic Stripe payouts only").
			return nil, nil, invalidRequest("payout", "Balance transaction history can only be filtered on automatic transfers, not manual.")
		}
		x = &po.txns
	}
	var conds []func(*txn) bool
	if q.Has("type") {
		typ := q.Get("type")
		conds = append(conds, func(t *txn) bool { return t.typ == typ })
	}
	if q.Has("source") {
		src := q.Get("source")
		conds = append(conds, func(t *txn) bool { return t.source == src })
	}
	if q.Has("currency") {
		cur := strings.ToLower(q.Get("currency"))
		conds = append(conds, func(t *txn) bool { return t.currency == cur })
	}
	if len(conds) == 0 {
		return x, nil, nil
	}
	return x, func(t *txn) bool {
		for _, c := range conds {
			if !c(t) {
				return false
			}
		}
		return true
	}, nil
}

// appendBalanceTransaction appends a BalanceTransaction as Stripe renders it, in the fields
// stripe.BalanceTransaction decodes. Its status is taken at Options.Now when e has a server,
// and at the transaction's creation otherwise (in event snapshots).
func appendBalanceTransaction(b []byte, t *txnState, e expander) []byte {
	now := t.created
	if e.s != nil {
		now = e.s.now().Unix()
	}
	b = append(b, `{"id":`...)
	b = appendString(b, t.id)
	b = append(b, `,"object":"balance_transaction","amount":`...)
	b = strconv.AppendInt(b, t.amount, 10)
	b = append(b, `,"available_on":`...)
	b = strconv.AppendInt(b, t.availableOn, 10)
	b = append(b, `,"balance_type":"payments","created":`...)
	b = strconv.AppendInt(b, t.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, t.currency)
	b = append(b, `,"description":`...)
	b = appendNullable(b, t.description)
	b = append(b, `,"exchange_rate":`...)
	if t.exchangeRate != 0 {
		b = strconv.AppendFloat(b, t.exchangeRate, 'f', -1, 64)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"fee":`...)
	b = strconv.AppendInt(b, t.fee, 10)
	b = append(b, `,"fee_details":[`...)
	if t.fee != 0 {
		b = append(b, `{"amount":`...)
		b = strconv.AppendInt(b, t.fee, 10)
		b = append(b, `,"application":null,"currency":`...)
		b = appendString(b, t.currency)
		b = append(b, `,"description":`...)
		b = appendNullable(b, t.feeDescription)
		b = append(b, `,"type":"stripe_fee"}`...)
	}
	b = append(b, `],"net":`...)
	b = strconv.AppendInt(b, t.net(), 10)
	b = append(b, `,"reporting_category":`...)
	b = appendString(b, t.reportingCategory)
	b = append(b, `,"source":`...)
	b = e.appendSource(b, t.account, t.source)
	b = append(b, `,"status":`...)
	b = appendString(b, string(t.statusAt(now)))
	b = append(b, `,"type":`...)
	b = appendString(b, t.typ)
	return append(b, '}')
}

// appendSource appends a balance transaction's source: the object when expanded and the fake
// has it in the account (a charge, refund, dispute or payout), otherwise its id.
func (e expander) appendSource(b []byte, account, id string) []byte {
	sub, ok := e.field("source")
	if !ok || id == "" || e.s == nil {
		return appendNullable(b, id)
	}
	s := e.s
	switch {
	case strings.HasPrefix(id, "ch_"):
		if ch := s.charges[id]; ch != nil && ch.account == account {
			return appendCharge(b, &ch.chState, sub)
		}
	case strings.HasPrefix(id, "re_"):
		if r := s.refunds[id]; r != nil && r.account == account {
			return appendRefund(b, &r.reState, sub)
		}
	case strings.HasPrefix(id, "dp_"):
		if d := s.disputes[id]; d != nil && d.account == account {
			return appendDispute(b, &d.dpState, sub)
		}
	case strings.HasPrefix(id, "po_"):
		if po := s.payouts[id]; po != nil && po.account == account {
			return appendPayout(b, &po.poState, sub)
		}
	}
	return appendString(b, id)
}

// appendTxnRef appends a field holding a balance transaction's id, or the transaction when
// the field is expanded.
func (e expander) appendTxnRef(b []byte, name, id string) []byte {
	return e.appendRef(b, name, id, func(b []byte, sub expander) []byte {
		return appendBalanceTransaction(b, &e.s.txns[id].txnState, sub)
	})
}

func (t txnState) appendJSON(b []byte) []byte { return appendBalanceTransaction(b, &t, expander{}) }
