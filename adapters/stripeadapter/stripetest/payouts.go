package stripetest

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Payout is a payout "po_..." held by the fake: money sent from an account's Stripe balance to
// its bank.
type Payout struct {
	// ID is the object's id; empty means a generated one, "po_" and 24 alphanumeric
	// characters.
	ID string
	// Account is the Connect account that is paid out; "" is the platform.
	Account string
	// Manual marks a payout requested through the API or the Dashboard (automatic false):
	// it takes Amount from the balance but cannot be itemized. The zero value is an automatic
	// payout, made by the payout schedule, which pays out every available balance transaction
	// of its account and currency not yet paid out.
	Manual bool
	// Status is pending, in_transit or paid when added; empty means pending. SetPayoutStatus,
	// FailPayout and CancelPayout change it.
	Status stripe.PayoutStatus
	// Created is when the payout was created; zero means Options.Now. An automatic payout
	// groups the transactions available then.
	Created time.Time
	// ArrivalDate is when the money is expected at the bank; zero means two days after
	// Created.
	ArrivalDate time.Time
	// Amount is what is paid out, in the currency's smallest unit. Zero means, for an
	// automatic payout, the net of the transactions it groups; a manual payout needs it. An
	// automatic payout given an amount keeps it whatever it groups: a payout whose
	// transactions do not sum to its amount, to plant.
	Amount int64
	// Currency is a lowercase ISO code; empty means the account's settlement currency.
	Currency string
	// Description is the payout's description; empty means "STRIPE PAYOUT".
	Description string
	// Metadata is copied when the payout is added.
	Metadata map[string]string

	// The fields below are filled in when the payout is read back; AddPayout ignores them.

	// ReconciliationStatus is not_applicable for a manual payout, in_progress for an automatic
	// one until it is paid, completed from then on.
	ReconciliationStatus stripe.PayoutReconciliationStatus
	// BalanceTransaction is the payout's own transaction, type payout, −Amount.
	BalanceTransaction string
	// FailureBalanceTransaction is the payout_failure or payout_cancel transaction that gives
	// the money back to the balance, once the payout failed or was canceled.
	FailureBalanceTransaction string
	// FailureCode and FailureMessage say why a failed payout failed.
	FailureCode    stripe.PayoutFailureCode
	FailureMessage string
}

// poState is a payout as stored, copied into events as snapshots.
type poState struct {
	id, account    string
	automatic      bool
	status         stripe.PayoutStatus
	created        int64
	arrivalDate    int64
	amount         int64
	currency       string
	description    string
	metadata       map[string]string // never modified once added, so snapshots share it
	reconciliation stripe.PayoutReconciliationStatus
	balanceTxn     string
	failureTxn     string
	failureCode    stripe.PayoutFailureCode
	failureMessage string
}

// payout is a stored Payout with the balance transactions it paid out (an automatic payout's,
// its own transaction included), for GET /v1/balance_transactions?payout=.
type payout struct {
	poState
	seq  uint64
	txns index[*txn]
}

func (po *payout) sortKey() sortKey { return sortKey{po.created, po.seq} }

// payoutEvents are the events a change to each status records after payout.updated.
var payoutEvents = map[stripe.PayoutStatus]string{
	stripe.PayoutStatusPaid:     "payout.paid",
	stripe.PayoutStatusFailed:   "payout.failed",
	stripe.PayoutStatusCanceled: "payout.canceled",
}

// payoutMoves are the status changes Stripe makes: pending until submitted to the bank, then
// in_transit, then paid; a pending payout can be canceled; a payout fails from pending,
// in_transit or even paid ("Some payouts that fail might initially show as paid, then change
// to failed"). failed and canceled are final.
var payoutMoves = map[stripe.PayoutStatus][]stripe.PayoutStatus{
	stripe.PayoutStatusPending:   {stripe.PayoutStatusInTransit, stripe.PayoutStatusPaid, stripe.PayoutStatusCanceled, stripe.PayoutStatusFailed},
	stripe.PayoutStatusInTransit: {stripe.PayoutStatusPaid, stripe.PayoutStatusFailed},
	stripe.PayoutStatusPaid:      {stripe.PayoutStatusFailed},
}

// AddPayout stores a payout and returns its id, recording payout.created at its created time.
// It creates the payout's balance transaction (type payout, −amount, available at once). An
// automatic payout first gathers the transactions of its account and currency that are
// available at its created time and in no payout yet (payout_failure and payout_cancel
// transactions of earlier payouts among them, not payout transactions), links them to itself,
// and pays out their net. It panics, as a broken fixture should, if the id is used, the status
// is not pending, in_transit or paid, a manual payout has no positive amount, or an automatic
// one without an amount finds no positive net to pay out.
func (s *Server) AddPayout(p Payout) string {
	return s.AddPayouts([]Payout{p})[0]
}

// AddPayouts stores many payouts at once, like AddPayout, in order (each groups what the ones
// before it left), and returns their ids in order.
func (s *Server) AddPayouts(ps []Payout) []string {
	return addObjects(s, ps, adding[Payout, poState, *payout]{
		kind: payoutObjects, name: "payout",
		objects:  func(s *Server) *map[string]*payout { return &s.payouts },
		idPrefix: "po_", idLen: 24,
		// payout.created is recorded by payOut, once the payout has its balance transaction.
		created: func(p Payout) time.Time { return p.Created },
		build:   buildPayout,
		id:      func(st *poState) *string { return &st.id },
		store:   func(st poState, seq uint64) *payout { return &payout{poState: st, seq: seq} },
		stored:  (*Server).payOut,
	})
}

// buildPayout is an added payout's state, with its defaults; it panics for a broken fixture,
// as AddPayout documents. The caller holds s.mu.
func buildPayout(s *Server, p Payout, created int64) poState {
	st := poState{
		id: p.ID, account: p.Account, automatic: !p.Manual, status: p.Status, created: created,
		arrivalDate: created + int64(availableAfter/time.Second), amount: p.Amount,
		currency: p.Currency, description: p.Description,
		reconciliation: stripe.PayoutReconciliationStatusNotApplicable,
	}
	if st.status == "" {
		st.status = stripe.PayoutStatusPending
	}
	switch st.status {
	case stripe.PayoutStatusPending, stripe.PayoutStatusInTransit, stripe.PayoutStatusPaid:
	default:
		panic(fmt.Sprintf("stripetest: a payout added %q; add it pending, in_transit or paid and change it", st.status))
	}
	if !p.ArrivalDate.IsZero() {
		st.arrivalDate = p.ArrivalDate.Unix()
	}
	if st.currency == "" {
		st.currency = s.settlementCurrency(st.account)
	}
	if st.description == "" {
		st.description = "STRIPE PAYOUT"
	}
	if st.amount < 0 || (!st.automatic && st.amount == 0) {
		panic(fmt.Sprintf("stripetest: payout amount %d", st.amount))
	}
	if st.automatic {
		st.reconciliation = stripe.PayoutReconciliationStatusInProgress
		if st.status == stripe.PayoutStatusPaid {
			st.reconciliation = stripe.PayoutReconciliationStatusCompleted
		}
		if st.amount == 0 {
			for _, t := range s.unpaid[st.account] {
				if st.paysOut(t) {
					st.amount += t.net()
				}
			}
			if st.amount <= 0 {
				panic(fmt.Sprintf("stripetest: an automatic payout of %s with nothing to pay out (net %d)", st.currency, st.amount))
			}
		}
	}
	if len(p.Metadata) > 0 {
		st.metadata = maps.Clone(p.Metadata)
	}
	return st
}

// paysOut reports whether an automatic payout in the state st takes the unpaid transaction t:
// same currency, available when the payout is created.
func (st *poState) paysOut(t *txn) bool {
	return t.payout == "" && t.currency == st.currency && t.created <= st.created && t.availableOn <= st.created
}

// payOut links an automatic payout just stored to the transactions it pays out, and creates
// its own balance transaction. The caller holds s.mu.
func (s *Server) payOut(po *payout) {
	if po.automatic {
		left := s.unpaid[po.account][:0]
		for _, t := range s.unpaid[po.account] {
			if po.paysOut(t) {
				t.payout = po.id
				po.txns.add(t)
			} else {
				left = append(left, t)
			}
		}
		clear(s.unpaid[po.account][len(left):])
		s.unpaid[po.account] = left
	}
	link := ""
	if po.automatic {
		link = po.id
	}
	po.balanceTxn = s.storeTxn(txnState{
		account: po.account, typ: "payout", amount: -po.amount, currency: po.currency,
		created: po.created, availableOn: po.created, reportingCategory: "payout", source: po.id,
	}, link).id
	s.addEvent("payout.created", po.created, po.account, po.poState)
}

// Payout returns the payout with the id, whatever its account.
func (s *Server) Payout(id string) (Payout, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	po, ok := s.payouts[id]
	if !ok {
		return Payout{}, false
	}
	return Payout{
		ID: po.id, Account: po.account, Manual: !po.automatic, Status: po.status,
		Created: unixTime(po.created), ArrivalDate: unixTime(po.arrivalDate), Amount: po.amount,
		Currency: po.currency, Description: po.description, Metadata: maps.Clone(po.metadata),
		ReconciliationStatus: po.reconciliation, BalanceTransaction: po.balanceTxn,
		FailureBalanceTransaction: po.failureTxn, FailureCode: po.failureCode,
		FailureMessage: po.failureMessage,
	}, true
}

// SetPayoutStatus moves a payout to in_transit or paid at Options.Now, as its bank processes
// it, and records payout.updated, then payout.paid for paid. An automatic payout that is paid
// finishes its reconciliation (reconciliation_status completed) and records
// payout.reconciliation_completed. It fails for an unknown payout, a status other than
// in_transit or paid (see FailPayout and CancelPayout), or a move Stripe does not make (back
// to an earlier status, or from a final one).
func (s *Server) SetPayoutStatus(id string, status stripe.PayoutStatus) error {
	if status != stripe.PayoutStatusInTransit && status != stripe.PayoutStatusPaid {
		return fmt.Errorf("stripetest: SetPayoutStatus moves a payout to in_transit or paid, not %q (see FailPayout and CancelPayout)", status)
	}
	return s.movePayout(id, status, func(po *payout, at int64) []string {
		if status == stripe.PayoutStatusPaid && po.automatic && po.reconciliation == stripe.PayoutReconciliationStatusInProgress {
			po.reconciliation = stripe.PayoutReconciliationStatusCompleted
			return []string{"payout.reconciliation_completed"}
		}
		return nil
	})
}

// FailPayout fails a payout at Options.Now, from pending, in_transit, or paid (Stripe: some
// payouts that fail show paid first), with a failure code such as account_closed (empty means
// could_not_process) and message (empty means a generic one). The money comes back: a
// payout_failure balance transaction of +amount, the payout's failure_balance_transaction,
// which the account's next automatic payout pays out again. The transactions the payout
// grouped stay its own. It records payout.updated and payout.failed. It fails for an unknown
// payout or one already failed or canceled.
func (s *Server) FailPayout(id string, code stripe.PayoutFailureCode, message string) error {
	if code == "" {
		code = stripe.PayoutFailureCodeCouldNotProcess
	}
	if message == "" {
		message = "The bank could not process this payout (" + string(code) + ")."
	}
	return s.movePayout(id, stripe.PayoutStatusFailed, func(po *payout, at int64) []string {
		po.failureCode, po.failureMessage = code, message
		po.failureTxn = s.returnPayout(po, "payout_failure", at)
		return nil
	})
}

// CancelPayout cancels a pending payout at Options.Now, giving its money back with a
// payout_cancel balance transaction (its failure_balance_transaction), and records
// payout.updated and payout.canceled. It fails for an unknown payout or one that is not
// pending.
func (s *Server) CancelPayout(id string) error {
	return s.movePayout(id, stripe.PayoutStatusCanceled, func(po *payout, at int64) []string {
		po.failureTxn = s.returnPayout(po, "payout_cancel", at)
		return nil
	})
}

// returnPayout creates the transaction that gives a failed or canceled payout's amount back to
// the balance; the caller holds s.mu.
func (s *Server) returnPayout(po *payout, typ string, at int64) string {
	return s.storeTxn(txnState{
		account: po.account, typ: typ, amount: po.amount, currency: po.currency,
		created: at, availableOn: at, reportingCategory: reportingCategories[typ], source: po.id,
	}, "").id
}

// movePayout changes a payout's status at Options.Now if Stripe makes that move, applies
// change, and records payout.updated, the status's own event, then the events change names.
func (s *Server) movePayout(id string, status stripe.PayoutStatus, change func(po *payout, at int64) []string) error {
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	po, ok := s.payouts[id]
	if !ok {
		return errors.New("stripetest: no such payout: " + id)
	}
	allowed := false
	for _, next := range payoutMoves[po.status] {
		allowed = allowed || next == status
	}
	if !allowed {
		return fmt.Errorf("stripetest: payout %s cannot go from %s to %s", id, po.status, status)
	}
	po.status = status
	more := change(po, at)
	s.addEvent("payout.updated", at, po.account, po.poState)
	if typ := payoutEvents[status]; typ != "" {
		s.addEvent(typ, at, po.account, po.poState)
	}
	for _, typ := range more {
		s.addEvent(typ, at, po.account, po.poState)
	}
	return nil
}

// payoutObjects serves the payout routes.
var payoutObjects = objectKind[*payout]{object: kindPayout, path: "/v1/payouts",
	byID:      func(s *Server) map[string]*payout { return s.payouts },
	byAccount: func(s *Server) map[string]*index[*payout] { return s.payoutsBy },
	account:   func(po *payout) string { return po.account },
	render:    func(b []byte, po *payout, x expander) []byte { return appendPayout(b, &po.poState, x) },
	own: func(param string) bool {
		return param == "status" || param == "destination" || isRangeParam(param, "arrival_date")
	},
	selection: payoutSelection,
}

// knownPayoutStatuses are the statuses GET /v1/payouts filters on.
var knownPayoutStatuses = map[string]bool{"pending": true, "in_transit": true, "paid": true, "failed": true, "canceled": true}

// payoutSelection reads the filters of GET /v1/payouts: status, arrival_date (exact or a
// range) and destination (the fake's payouts have none, so it selects nothing). The caller
// holds s.mu.
func payoutSelection(s *Server, account string, q url.Values) (*index[*payout], func(*payout) bool, *failure) {
	var conds []func(*payout) bool
	if q.Has("status") {
		status := q.Get("status")
		if !knownPayoutStatuses[status] {
			return nil, nil, invalidRequest("status", "Invalid status: must be one of canceled, failed, in_transit, paid, or pending")
		}
		conds = append(conds, func(po *payout) bool { return string(po.status) == status })
	}
	if q.Has("destination") {
		conds = append(conds, func(*payout) bool { return false })
	}
	from, to, f := parseRange(q, "arrival_date")
	if f != nil {
		return nil, nil, f
	}
	if from != math.MinInt64 || to != math.MaxInt64 {
		conds = append(conds, func(po *payout) bool { return po.arrivalDate >= from && po.arrivalDate <= to })
	}
	if len(conds) == 0 {
		return s.payoutsBy[account], nil, nil // unfiltered: a page costs O(log n + limit)
	}
	return s.payoutsBy[account], func(po *payout) bool {
		for _, c := range conds {
			if !c(po) {
				return false
			}
		}
		return true
	}, nil
}

// appendPayout appends a Payout as Stripe renders it, in the fields stripe.Payout decodes.
func appendPayout(b []byte, st *poState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, st.id)
	b = append(b, `,"object":"payout","amount":`...)
	b = strconv.AppendInt(b, st.amount, 10)
	b = append(b, `,"application_fee":null,"application_fee_amount":null,"arrival_date":`...)
	b = strconv.AppendInt(b, st.arrivalDate, 10)
	b = append(b, `,"automatic":`...)
	b = strconv.AppendBool(b, st.automatic)
	b = append(b, `,"balance_transaction":`...)
	b = e.appendTxnRef(b, "balance_transaction", st.balanceTxn)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, st.currency)
	b = append(b, `,"description":`...)
	b = appendNullable(b, st.description)
	b = append(b, `,"destination":null,"failure_balance_transaction":`...)
	b = e.appendTxnRef(b, "failure_balance_transaction", st.failureTxn)
	b = append(b, `,"failure_code":`...)
	b = appendNullable(b, string(st.failureCode))
	b = append(b, `,"failure_message":`...)
	b = appendNullable(b, st.failureMessage)
	b = append(b, `,"livemode":false,"metadata":`...)
	b = appendMetadata(b, st.metadata)
	b = append(b, `,"method":"standard","original_payout":null,"payout_method":null,"reconciliation_status":`...)
	b = appendString(b, string(st.reconciliation))
	b = append(b, `,"reversed_by":null,"source_type":"card","statement_descriptor":null,"status":`...)
	b = appendString(b, string(st.status))
	b = append(b, `,"trace_id":null,"type":"bank_account"}`...)
	return b
}

func (st poState) appendJSON(b []byte) []byte { return appendPayout(b, &st, expander{}) }
