package main

import (
	"database/sql"
	"flag"
	"fmt"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The rows the audit reads when it compares more than a status: one struct per policy, whose
// columns the flags name (pgstore.Config.Columns). Optional columns are nullable, so that a
// NULL means none (no refund, no dispute) rather than an unreadable row; a column named "-" is
// not read at all and its field keeps its zero value.

// auditPayment is a payments row for stripepolicy.PaymentPolicy (--money).
type auditPayment struct {
	Status         string
	Amount         int64
	Currency       string
	AmountCaptured sql.NullInt64
	AmountRefunded sql.NullInt64
	DisputeStatus  sql.NullString
}

// auditSubscription is a subscriptions row for stripepolicy.SubscriptionPolicy.
type auditSubscription struct {
	Status            string
	CancelAtPeriodEnd sql.NullBool
	PaidThrough       sql.NullTime
}

// auditInvoice is an invoices row for stripepolicy.InvoicePolicy.
type auditInvoice struct {
	Status                                 string
	Currency                               string
	AmountDue, AmountPaid, AmountRemaining int64
}

// auditCheckout is an orders row for stripepolicy.CheckoutPolicy.
type auditCheckout struct {
	Status        string
	PaymentStatus string
	Fulfilled     sql.NullBool
	Currency      sql.NullString
	AmountTotal   sql.NullInt64
}

// columnFlag is a flag naming the column of one field of the typed rows.
type columnFlag struct {
	flag, field, def string
	objects          []string // objectKind values that read it
	usage            string
}

const (
	kindMoney    = "payment_intent --money"
	kindSub      = "subscription"
	kindInvoice  = "invoice"
	kindCheckout = "checkout_session"
)

// columnFlags are the compared columns besides --state-column, which every policy reads as the
// row's status.
var columnFlags = []columnFlag{
	{"amount-column", "Amount", "amount", []string{kindMoney}, "the payment's amount in minor units (cents)"},
	{"currency-column", "Currency", "currency", []string{kindMoney, kindInvoice, kindCheckout}, "the ISO currency code, any case"},
	{"amount-captured-column", "AmountCaptured", "-", []string{kindMoney}, "the amount captured, minor units (NULL or 0: the whole amount)"},
	{"amount-refunded-column", "AmountRefunded", "-", []string{kindMoney}, "the amount refunded, minor units (not read: every refund at Stripe is reported)"},
	{"dispute-status-column", "DisputeStatus", "-", []string{kindMoney}, "the dispute's status in Stripe's words (not read: every dispute at Stripe is reported)"},
	{"cancel-at-period-end-column", "CancelAtPeriodEnd", "-", []string{kindSub}, "whether the subscription ends at its period's end (not read: false)"},
	{"paid-through-column", "PaidThrough", "-", []string{kindSub}, "the end of the period the row grants access through (not read: not compared)"},
	{"amount-due-column", "AmountDue", "amount_due", []string{kindInvoice}, "the invoice's amount_due"},
	{"amount-paid-column", "AmountPaid", "amount_paid", []string{kindInvoice}, "the invoice's amount_paid"},
	{"amount-remaining-column", "AmountRemaining", "amount_remaining", []string{kindInvoice}, "the invoice's amount_remaining"},
	{"payment-status-column", "PaymentStatus", "payment_status", []string{kindCheckout}, "the session's payment_status as the row records it"},
	{"fulfilled-column", "Fulfilled", "fulfilled", []string{kindCheckout}, "whether the order was fulfilled (a boolean)"},
	{"amount-total-column", "AmountTotal", "amount_total", []string{kindCheckout}, "the session's amount_total, minor units"},
}

// columnObjects are the objects each column flag applies to, by flag name.
var columnObjects = func() map[string][]string {
	m := map[string][]string{}
	for _, c := range columnFlags {
		m[c.flag] = c.objects
	}
	return m
}()

// registerColumnFlags registers the column flags and returns their values by flag name.
func registerColumnFlags(fs *flag.FlagSet) map[string]*string {
	vals := map[string]*string{}
	for _, c := range columnFlags {
		vals[c.flag] = fs.String(c.flag, c.def, fmt.Sprintf("the `column` of %s; for --object %s", c.usage, strings.Join(c.objects, ", ")))
	}
	return vals
}

// columnFields are the column flags an object kind reads.
func columnFields(kind string) []columnFlag {
	var out []columnFlag
	for _, c := range columnFlags {
		for _, o := range c.objects {
			if o == kind {
				out = append(out, c)
			}
		}
	}
	return out
}

// columnsOf is the pgstore.Config.Columns of an object kind's row: each field's column as the
// flags name it, Status --state-column's.
func (a *auditFlags) columnsOf(kind string) map[string]string {
	m := map[string]string{"Status": cmpOr(a.host.stateColumn, "status")}
	for _, c := range columnFields(kind) {
		m[c.field] = *a.cols[c.flag]
	}
	return m
}

func paymentColumns(a *auditFlags) map[string]string      { return a.columnsOf(kindMoney) }
func subscriptionColumns(a *auditFlags) map[string]string { return a.columnsOf(kindSub) }
func invoiceColumns(a *auditFlags) map[string]string      { return a.columnsOf(kindInvoice) }
func checkoutColumns(a *auditFlags) map[string]string     { return a.columnsOf(kindCheckout) }

// status is a row's status in its policy's words (--status-map); a status the map does not
// name is passed as it is.
func (a *auditFlags) status(s string) string {
	if m, ok := a.statuses[s]; ok {
		return m
	}
	return s
}

// statusPolicy is stripepolicy.PaymentIntentPolicy over the table's statuses as --status-map
// translates them. Findings record the table's own status: the map is the audit's, not the
// service's.
func statusPolicy(a *auditFlags) reconcile.Classifier[string, *stripe.PaymentIntent] {
	p := stripepolicy.PaymentIntentPolicy()
	if len(a.statuses) == 0 {
		return p
	}
	return reconcile.ClassifierFunc[string, *stripe.PaymentIntent](func(local string, pi *stripe.PaymentIntent) reconcile.Decision {
		return p.Classify(a.status(local), pi)
	})
}

func moneyPolicy(a *auditFlags) reconcile.Classifier[auditPayment, *stripepolicy.Payment] {
	return stripepolicy.PaymentPolicy(func(p auditPayment) stripepolicy.LocalPayment {
		return stripepolicy.LocalPayment{Status: a.status(p.Status), Amount: p.Amount, Currency: p.Currency,
			AmountCaptured: p.AmountCaptured.Int64, AmountRefunded: p.AmountRefunded.Int64, DisputeStatus: p.DisputeStatus.String}
	})
}

func subscriptionPolicy(a *auditFlags) reconcile.Classifier[auditSubscription, *stripe.Subscription] {
	return stripepolicy.SubscriptionPolicy(func(s auditSubscription) stripepolicy.LocalSubscription {
		ls := stripepolicy.LocalSubscription{Status: a.status(s.Status), CancelAtPeriodEnd: s.CancelAtPeriodEnd.Bool}
		if s.PaidThrough.Valid {
			ls.PaidThrough = s.PaidThrough.Time
		}
		return ls
	})
}

func invoicePolicy(a *auditFlags) reconcile.Classifier[auditInvoice, *stripe.Invoice] {
	return stripepolicy.InvoicePolicy(func(i auditInvoice) stripepolicy.LocalInvoice {
		return stripepolicy.LocalInvoice{Status: a.status(i.Status), Currency: i.Currency, AmountDue: i.AmountDue, AmountPaid: i.AmountPaid,
			AmountRemaining: i.AmountRemaining}
	})
}

func checkoutPolicy(a *auditFlags) reconcile.Classifier[auditCheckout, *stripe.CheckoutSession] {
	return stripepolicy.CheckoutPolicy(func(c auditCheckout) stripepolicy.LocalCheckout {
		return stripepolicy.LocalCheckout{Status: a.status(c.Status), PaymentStatus: c.PaymentStatus, Fulfilled: c.Fulfilled.Bool,
			Currency: c.Currency.String, AmountTotal: c.AmountTotal.Int64}
	})
}
