package stripetest

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stripe/stripe-go/v82"
)

// The JSON of objects is appended by hand rather than with encoding/json: a page of 100 intents
// over a 200k-object fixture then costs tens of microseconds and one pooled buffer instead of
// hundreds of microseconds of reflection and garbage, which matters to benchmarks that measure
// the code under test, not the fake.

// bufPool holds response buffers.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooled keeps exceptionally large buffers out of the pool.
const maxPooled = 1 << 20

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	if needsEscape(s) {
		// Rare: let encoding/json escape it (it also replaces invalid UTF-8).
		q, _ := json.Marshal(s)
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendStrings appends the concatenation of parts as one JSON string, such as a URL with an
// id in it, without building the string first.
func appendStrings(b []byte, parts ...string) []byte {
	for _, p := range parts {
		if needsEscape(p) {
			return appendString(b, strings.Join(parts, ""))
		}
	}
	b = append(b, '"')
	for _, p := range parts {
		b = append(b, p...)
	}
	return append(b, '"')
}

// needsEscape reports whether s has a byte a JSON string cannot hold as is.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return true
		}
	}
	return false
}

// expander renders the expanded fields of an object: x says which, and s holds the objects
// they refer to (the caller holds s.mu). The zero expander expands nothing and needs no server,
// as for the snapshots in events.
type expander struct {
	s *Server
	x expansion
}

// field returns the expander of the named field and whether the field is to be expanded.
func (e expander) field(name string) (expander, bool) {
	sub, ok := e.x[name]
	return expander{e.s, sub}, ok
}

// appendRef appends a reference to another object: null without an id, the object when the
// field is expanded, otherwise its id.
func (e expander) appendRef(b []byte, name, id string, appendObject func([]byte, expander) []byte) []byte {
	if id == "" {
		return append(b, "null"...)
	}
	if sub, ok := e.field(name); ok {
		return appendObject(b, sub)
	}
	return appendString(b, id)
}

// appendPaymentIntent appends a PaymentIntent as Stripe renders it, in the fields
// stripe.PaymentIntent decodes; fields the fake does not model are null, as they are for a
// fresh intent.
func appendPaymentIntent(b []byte, st *piState, e expander) []byte {
	var received, capturable int64
	switch st.status {
	case stripe.PaymentIntentStatusSucceeded:
		received = st.received()
	case stripe.PaymentIntentStatusRequiresCapture:
		capturable = st.amount
	}
	b = append(b, `{"id":`...)
	b = appendString(b, st.id)
	b = append(b, `,"object":"payment_intent","amount":`...)
	b = strconv.AppendInt(b, st.amount, 10)
	b = append(b, `,"amount_capturable":`...)
	b = strconv.AppendInt(b, capturable, 10)
	b = append(b, `,"amount_received":`...)
	b = strconv.AppendInt(b, received, 10)
	b = append(b, `,"canceled_at":`...)
	if st.status == stripe.PaymentIntentStatusCanceled {
		b = strconv.AppendInt(b, st.canceledAt, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"cancellation_reason":null,"capture_method":"automatic_async","client_secret":null,"confirmation_method":"automatic","created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, st.currency)
	b = append(b, `,"customer":null,"description":null,"last_payment_error":null,"latest_charge":`...)
	b = e.appendRef(b, "latest_charge", st.latestCharge, func(b []byte, sub expander) []byte {
		return appendCharge(b, &e.s.charges[st.latestCharge].chState, sub)
	})
	b = append(b, `,"livemode":false,"metadata":`...)
	b = appendMetadata(b, st.metadata)
	b = append(b, `,"next_action":null,"payment_method":null,"payment_method_types":["card"],"status":`...)
	b = appendString(b, string(st.status))
	return append(b, '}')
}

// appendMetadata appends a metadata object, its keys sorted so that answers are reproducible.
func appendMetadata(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	if len(m) > 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, m[k])
		}
	}
	return append(b, '}')
}

// appendIntentRef appends the payment_intent field of a charge, refund or dispute.
func (e expander) appendIntentRef(b []byte, id string) []byte {
	return e.appendRef(b, "payment_intent", id, func(b []byte, sub expander) []byte {
		return appendPaymentIntent(b, &e.s.intents[id].piState, sub)
	})
}

// appendChargeRef appends the charge field of a refund or dispute.
func (e expander) appendChargeRef(b []byte, id string) []byte {
	return e.appendRef(b, "charge", id, func(b []byte, sub expander) []byte {
		return appendCharge(b, &e.s.charges[id].chState, sub)
	})
}

// appendCharge appends a Charge as Stripe renders it, in the fields stripe.Charge decodes. Its
// refunds sub-list is null unless expanded.
func appendCharge(b []byte, ch *chState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, ch.id)
	b = append(b, `,"object":"charge","amount":`...)
	b = strconv.AppendInt(b, ch.amount, 10)
	b = append(b, `,"amount_captured":`...)
	b = strconv.AppendInt(b, ch.amountCaptured, 10)
	b = append(b, `,"amount_refunded":`...)
	b = strconv.AppendInt(b, ch.amountRefunded, 10)
	b = append(b, `,"application":null,"application_fee":null,"application_fee_amount":null,"balance_transaction":`...)
	b = e.appendTxnRef(b, "balance_transaction", ch.balanceTxn)
	b = append(b, `,"billing_details":{"address":null,"email":null,"name":null,"phone":null,"tax_id":null},"calculated_statement_descriptor":null,"captured":`...)
	b = strconv.AppendBool(b, ch.captured)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, ch.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, ch.currency)
	b = append(b, `,"customer":null,"description":null,"disputed":`...)
	b = strconv.AppendBool(b, ch.disputed)
	b = append(b, `,"failure_balance_transaction":`...)
	b = e.appendTxnRef(b, "failure_balance_transaction", ch.failureTxn)
	b = append(b, `,"failure_code":`...)
	b = appendNullable(b, ch.failureCode)
	b = append(b, `,"failure_message":`...)
	if ch.failureCode != "" {
		b = append(b, `"The customer's bank could not complete the payment."`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"fraud_details":{},"livemode":false,"metadata":{},"on_behalf_of":null,"outcome":null,"paid":true,"payment_intent":`...)
	b = e.appendIntentRef(b, ch.paymentIntent)
	b = append(b, `,"payment_method":null,"payment_method_details":null,"receipt_email":null,"receipt_number":null,"receipt_url":null,"refunded":`...)
	b = strconv.AppendBool(b, ch.refunded)
	b = append(b, `,"refunds":`...)
	if sub, ok := e.field("refunds"); ok {
		b = appendChargeRefunds(b, ch.id, sub)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"review":null,"shipping":null,"source_transfer":null,"statement_descriptor":null,"statement_descriptor_suffix":null,"status":`...)
	if ch.failureCode != "" {
		b = append(b, `"failed"`...)
	} else {
		b = append(b, `"succeeded"`...)
	}
	return append(b, `,"transfer_data":null,"transfer_group":null}`...)
}

// maxSubList is how many items Stripe embeds in an expanded sub-list; has_more tells of the
// rest, which the sub-list's own endpoint pages through.
const maxSubList = 10

// appendChargeRefunds appends a charge's expanded refunds sub-list, newest first.
func appendChargeRefunds(b []byte, chargeID string, e expander) []byte {
	x := &e.s.charges[chargeID].refunds
	x.sort()
	refunds := x.items
	page := make([]*refund, 0, min(len(refunds), maxSubList))
	for i := len(refunds) - 1; i >= 0 && len(page) < maxSubList; i-- {
		page = append(page, refunds[i].v)
	}
	items, _ := e.field("data")
	return appendList(b, "/v1/charges/"+chargeID+"/refunds", page, len(refunds) > maxSubList, func(b []byte, r *refund) []byte {
		return appendRefund(b, &r.reState, items)
	})
}

// appendRefund appends a Refund as Stripe renders it, in the fields stripe.Refund decodes.
func appendRefund(b []byte, r *reState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.id)
	b = append(b, `,"object":"refund","amount":`...)
	b = strconv.AppendInt(b, r.amount, 10)
	b = append(b, `,"balance_transaction":`...)
	b = e.appendTxnRef(b, "balance_transaction", r.balanceTxn)
	b = append(b, `,"charge":`...)
	b = e.appendChargeRef(b, r.charge)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, r.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, r.currency)
	b = append(b, `,"failure_balance_transaction":`...)
	b = e.appendTxnRef(b, "failure_balance_transaction", r.failureTxn)
	b = append(b, `,"failure_reason":`...)
	if r.failureReason != "" {
		b = appendString(b, r.failureReason)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metadata":{},"payment_intent":`...)
	b = e.appendIntentRef(b, r.paymentIntent)
	b = append(b, `,"reason":null,"receipt_number":null,"status":`...)
	b = appendString(b, string(r.status))
	return append(b, '}')
}

// appendDispute appends a Dispute as Stripe renders it, in the fields stripe.Dispute decodes.
func appendDispute(b []byte, d *dpState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, d.id)
	b = append(b, `,"object":"dispute","amount":`...)
	b = strconv.AppendInt(b, d.amount, 10)
	b = append(b, `,"balance_transactions":[`...)
	for i, t := range d.txns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendBalanceTransaction(b, t, expander{s: e.s})
	}
	b = append(b, `],"charge":`...)
	b = e.appendChargeRef(b, d.charge)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, d.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, d.currency)
	b = append(b, `,"evidence":null,"evidence_details":{"due_by":`...)
	if d.dueBy != 0 {
		b = strconv.AppendInt(b, d.dueBy, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"has_evidence":false,"past_due":false,"submission_count":0},"is_charge_refundable":`...)
	b = strconv.AppendBool(b, isInquiry(d.status))
	b = append(b, `,"livemode":false,"metadata":{},"payment_intent":`...)
	b = e.appendIntentRef(b, d.paymentIntent)
	b = append(b, `,"reason":"fraudulent","status":`...)
	b = appendString(b, string(d.status))
	return append(b, '}')
}

// appendEvent appends an event as Stripe renders it. Its request is null-valued: the fake's
// events come from no API request, like changes made in the Dashboard or by Stripe itself.
func appendEvent(b []byte, e *event) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, e.id)
	b = append(b, `,"object":"event"`...)
	if e.account != "" {
		// Stripe names the connected account only on Connect events.
		b = append(b, `,"account":`...)
		b = appendString(b, e.account)
	}
	b = append(b, `,"api_version":`...)
	b = appendString(b, stripe.APIVersion)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, e.created, 10)
	b = append(b, `,"data":{"object":`...)
	b = e.object.appendJSON(b)
	b = append(b, `},"livemode":false,"pending_webhooks":0,"request":{"id":null,"idempotency_key":null},"type":`...)
	b = appendString(b, e.typ)
	return append(b, '}')
}

// Snapshots render unexpanded, as event payloads are.
func (st piState) appendJSON(b []byte) []byte { return appendPaymentIntent(b, &st, expander{}) }
func (ch chState) appendJSON(b []byte) []byte { return appendCharge(b, &ch, expander{}) }
func (r reState) appendJSON(b []byte) []byte  { return appendRefund(b, &r, expander{}) }
func (d dpState) appendJSON(b []byte) []byte  { return appendDispute(b, &d, expander{}) }

// appendList appends Stripe's list object around items.
func appendList[T any](b []byte, url string, items []T, hasMore bool, appendItem func([]byte, T) []byte) []byte {
	b = append(b, `{"object":"list","data":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, it)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, hasMore)
	b = append(b, `,"url":`...)
	b = appendString(b, url)
	return append(b, '}')
}
