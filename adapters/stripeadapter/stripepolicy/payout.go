package stripepolicy

import (
	"maps"
	"math"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/tieout"
)

// The payout policy: what Stripe's payouts and balance transactions are to package tieout.
// A payout is a tieout.Group, its balance transactions (GET /v1/balance_transactions
// ?payout=po_..., the source expanded) its Members. Which booked kind each balance
// transaction type is, is the table below; a type not in it (or an adjustment whose source is
// not a dispute) has no kind, and the tie-out reports it, never skips it nor guesses.

// balanceTransactionKinds maps Stripe's balance transaction types to booked kinds. Types
// left out are findings: payment_reversal, payment_unreconciled, obligation_*, advance*,
// anticipation_repayment, and any type Stripe adds.
var balanceTransactionKinds = map[stripe.BalanceTransactionType]string{
	stripe.BalanceTransactionTypeCharge:                       tieout.KindPayment,
	stripe.BalanceTransactionTypePayment:                      tieout.KindPayment,
	stripe.BalanceTransactionTypeRefund:                       tieout.KindRefund,
	stripe.BalanceTransactionTypePaymentRefund:                tieout.KindRefund,
	stripe.BalanceTransactionTypeRefundFailure:                tieout.KindRefundFailure,
	stripe.BalanceTransactionTypePaymentFailureRefund:         tieout.KindPaymentFailureRefund,
	stripe.BalanceTransactionTypePayout:                       tieout.KindGroup,
	stripe.BalanceTransactionTypePayoutFailure:                tieout.KindGroupFailure,
	stripe.BalanceTransactionTypePayoutCancel:                 tieout.KindGroupFailure,
	stripe.BalanceTransactionTypeStripeFee:                    tieout.KindFee,
	stripe.BalanceTransactionTypeStripeFxFee:                  tieout.KindFee,
	stripe.BalanceTransactionTypeTaxFee:                       tieout.KindFee,
	stripe.BalanceTransactionTypeApplicationFee:               tieout.KindOther,
	stripe.BalanceTransactionTypeApplicationFeeRefund:         tieout.KindOther,
	stripe.BalanceTransactionTypeTransfer:                     tieout.KindOther,
	stripe.BalanceTransactionTypeTransferCancel:               tieout.KindOther,
	stripe.BalanceTransactionTypeTransferFailure:              tieout.KindOther,
	stripe.BalanceTransactionTypeTransferRefund:               tieout.KindOther,
	stripe.BalanceTransactionTypeConnectCollectionTransfer:    tieout.KindOther,
	stripe.BalanceTransactionTypeReserveTransaction:           tieout.KindOther,
	stripe.BalanceTransactionTypeReservedFunds:                tieout.KindOther,
	stripe.BalanceTransactionTypePayoutMinimumBalanceHold:     tieout.KindOther,
	stripe.BalanceTransactionTypePayoutMinimumBalanceRelease:  tieout.KindOther,
	stripe.BalanceTransactionTypePaymentNetworkReserveHold:    tieout.KindOther,
	stripe.BalanceTransactionTypePaymentNetworkReserveRelease: tieout.KindOther,
	stripe.BalanceTransactionTypeTopup:                        tieout.KindOther,
	stripe.BalanceTransactionTypeTopupReversal:                tieout.KindOther,
	stripe.BalanceTransactionTypeContribution:                 tieout.KindOther,
	stripe.BalanceTransactionTypeClimateOrderPurchase:         tieout.KindOther,
	stripe.BalanceTransactionTypeClimateOrderRefund:           tieout.KindOther,
	stripe.BalanceTransactionTypeIssuingAuthorizationHold:     tieout.KindOther,
	stripe.BalanceTransactionTypeIssuingAuthorizationRelease:  tieout.KindOther,
	stripe.BalanceTransactionTypeIssuingDispute:               tieout.KindOther,
	stripe.BalanceTransactionTypeIssuingTransaction:           tieout.KindOther,
}

// BalanceTransactionKinds returns the payout policy's table: each balance transaction type
// it knows and its booked kind (adjustment aside: a dispute's when its source is a dispute,
// none otherwise).
func BalanceTransactionKinds() map[string]string {
	out := make(map[string]string, len(balanceTransactionKinds))
	for t, k := range balanceTransactionKinds {
		out[string(t)] = k
	}
	return out
}

// payoutStates maps payout statuses to what they mean for the money; paid is not terminal.
var payoutStates = map[stripe.PayoutStatus]tieout.GroupState{
	stripe.PayoutStatusPending:   tieout.GroupPending,
	stripe.PayoutStatusInTransit: tieout.GroupPending,
	stripe.PayoutStatusPaid:      tieout.GroupPaid,
	stripe.PayoutStatusFailed:    tieout.GroupFailed,
	stripe.PayoutStatusCanceled:  tieout.GroupFailed,
}

// PayoutGroup returns payout p of account (empty for the platform's own) as a tieout.Group.
// Paid is not terminal (Stripe: a paid payout can still fail); failed and canceled are. A
// manual payout (not Automatic) cannot be itemized. A status the policy does not know leaves
// State zero: the tie-out reports it.
func PayoutGroup(p *stripe.Payout, account string) tieout.Group {
	state := payoutStates[p.Status]
	return tieout.Group{ID: p.ID, Account: account, Status: string(p.Status), State: state,
		Terminal: state == tieout.GroupFailed, Amount: p.Amount, Currency: string(p.Currency), Itemized: p.Automatic}
}

// PayoutOptions says how a host books what a payout carries.
type PayoutOptions struct {
	// ByPaymentIntent books charges, refunds and disputes under their PaymentIntent's id
	// (pi_...), as a host that keeps one row per payment does (examples/payments). Otherwise
	// a charge is booked under its PaymentIntent if it has one, else its own id, and refunds
	// and disputes under their own ids (re_..., du_...).
	ByPaymentIntent bool
}

// PayoutMember returns balance transaction bt as a tieout.Member: its booked kind from the
// table, its amounts in the settlement currency as Stripe signs them, and, when its source
// was expanded (expand[]=data.source), the source's own amount and currency (the presentment
// amount, signed as bt's amount: a refund's negative) and the id the host books it under.
func (o PayoutOptions) PayoutMember(bt *stripe.BalanceTransaction) tieout.Member {
	m := tieout.Member{ID: bt.ID, Type: string(bt.Type), Kind: balanceTransactionKinds[bt.Type], Amount: bt.Amount, Fee: bt.Fee,
		Net: bt.Net, Currency: string(bt.Currency), ExchangeRate: bt.ExchangeRate, Status: string(bt.Status)}
	if bt.AvailableOn != 0 {
		m.AvailableOn = time.Unix(bt.AvailableOn, 0).UTC()
	}
	src := bt.Source
	if src == nil {
		return m
	}
	m.SourceID = src.ID
	isDispute := src.Type == stripe.BalanceTransactionSourceTypeDispute || src.Dispute != nil || strings.HasPrefix(src.ID, "du_")
	if bt.Type == stripe.BalanceTransactionTypeAdjustment && isDispute {
		m.Kind = tieout.KindDispute
	}
	sign := int64(1)
	if bt.Amount < 0 {
		sign = -1
	}
	switch {
	case src.Charge != nil:
		c := src.Charge
		amount := c.Amount
		if c.AmountCaptured > 0 {
			amount = c.AmountCaptured
		}
		m.SourceAmount, m.SourceCurrency = sign*amount, string(c.Currency)
		if c.PaymentIntent != nil && c.PaymentIntent.ID != "" {
			m.BookedID = c.PaymentIntent.ID
		}
	case src.Refund != nil:
		r := src.Refund
		m.SourceAmount, m.SourceCurrency = sign*r.Amount, string(r.Currency)
		if o.ByPaymentIntent && r.PaymentIntent != nil {
			m.BookedID = r.PaymentIntent.ID
		}
	case src.Dispute != nil:
		d := src.Dispute
		m.SourceAmount, m.SourceCurrency = sign*d.Amount, string(d.Currency)
		if o.ByPaymentIntent && d.PaymentIntent != nil {
			m.BookedID = d.PaymentIntent.ID
		}
	}
	return m
}

// reportingCategoryKinds maps the reporting categories of Stripe's itemized payout
// reconciliation report (payout_reconciliation.itemized.5, which names a line by its
// reporting_category, not its type) to booked kinds, as balanceTransactionKinds maps types.
// Categories left out are findings: other_adjustment (an adjustment that is not a dispute's,
// as an adjustment type is), network_cost, partial_capture_reversal,
// unreconciled_customer_funds, advance*, anticipation_repayment, financing_*, and any category
// Stripe adds.
var reportingCategoryKinds = map[string]string{
	"charge":                        tieout.KindPayment,
	"refund":                        tieout.KindRefund,
	"refund_failure":                tieout.KindRefundFailure,
	"charge_failure":                tieout.KindPaymentFailureRefund,
	"dispute":                       tieout.KindDispute,
	"dispute_reversal":              tieout.KindDispute,
	"payout":                        tieout.KindGroup,
	"payout_reversal":               tieout.KindGroupFailure,
	"fee":                           tieout.KindFee,
	"tax":                           tieout.KindFee,
	"platform_earning":              tieout.KindOther,
	"platform_earning_refund":       tieout.KindOther,
	"transfer":                      tieout.KindOther,
	"transfer_reversal":             tieout.KindOther,
	"connect_collection_transfer":   tieout.KindOther,
	"connect_reserved_funds":        tieout.KindOther,
	"risk_reserved_funds":           tieout.KindOther,
	"topup":                         tieout.KindOther,
	"topup_reversal":                tieout.KindOther,
	"contribution":                  tieout.KindOther,
	"climate_order_purchase":        tieout.KindOther,
	"climate_order_refund":          tieout.KindOther,
	"issuing_authorization_hold":    tieout.KindOther,
	"issuing_authorization_release": tieout.KindOther,
	"issuing_dispute":               tieout.KindOther,
	"issuing_transaction":           tieout.KindOther,
}

// ReportingCategoryKinds returns the payout policy's table for report lines: each reporting
// category it knows and its booked kind.
func ReportingCategoryKinds() map[string]string { return maps.Clone(reportingCategoryKinds) }

// ReportLine is one row of Stripe's itemized payout reconciliation report
// (payout_reconciliation.itemized.5), its decimal amounts already read into minor units.
type ReportLine struct {
	// BalanceTransaction is balance_transaction_id (txn_...), Payout automatic_payout_id.
	BalanceTransaction, Payout string
	// ReportingCategory is the line's reporting_category.
	ReportingCategory string
	// Gross, Fee and Net are in minor units of Currency, the settlement currency.
	Gross, Fee, Net int64
	Currency        string
	// SourceID, ChargeID and PaymentIntentID are source_id, charge_id and
	// payment_intent_id; empty when the row has none.
	SourceID, ChargeID, PaymentIntentID string
	// CustomerFacingAmount is customer_facing_amount in minor units of
	// CustomerFacingCurrency, the presentment amount; the currency is empty when the row has
	// none.
	CustomerFacingAmount   int64
	CustomerFacingCurrency string
	// AvailableOn is available_on_utc; zero when empty.
	AvailableOn time.Time
}

// ReportMember returns report line r as a tieout.Member, as PayoutMember does a balance
// transaction with its source expanded: its booked kind from the reporting category table
// (Type is the category), its amounts in the settlement currency, the presentment amount from
// customer_facing_amount signed as the gross, and the id the host books it under, the
// PaymentIntent for a charge (and, with ByPaymentIntent, for a refund or a dispute). The
// source's object is read from its id's prefix. The report has no status nor exchange rate:
// the lines of a payout whose reconciliation is completed are available, and the presentment
// amount is compared instead of a rate.
func (o PayoutOptions) ReportMember(r ReportLine) tieout.Member {
	m := tieout.Member{ID: r.BalanceTransaction, Type: r.ReportingCategory, Kind: reportingCategoryKinds[r.ReportingCategory],
		SourceID: r.SourceID, Amount: r.Gross, Fee: r.Fee, Net: r.Net, Currency: r.Currency, AvailableOn: r.AvailableOn}
	if r.CustomerFacingCurrency != "" && r.CustomerFacingAmount != math.MinInt64 {
		amount := r.CustomerFacingAmount
		if amount < 0 {
			amount = -amount
		}
		if r.Gross < 0 {
			amount = -amount
		}
		m.SourceAmount, m.SourceCurrency = amount, r.CustomerFacingCurrency
	}
	switch {
	case hasPrefix(r.SourceID, "ch_", "py_"):
		m.BookedID = r.PaymentIntentID
	case o.ByPaymentIntent && hasPrefix(r.SourceID, "re_", "pyr_", "du_", "dp_"):
		m.BookedID = r.PaymentIntentID
	}
	return m
}

// hasPrefix reports whether s starts with one of prefixes.
func hasPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
