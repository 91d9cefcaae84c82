package stripetest

import (
	"encoding/json"
	"slices"
	"strconv"
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
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			// Rare: let encoding/json escape it (it also replaces invalid UTF-8).
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendPaymentIntent appends a PaymentIntent as Stripe renders it, in the fields
// stripe.PaymentIntent decodes; fields the fake does not model are null, as they are for a
// fresh intent.
func appendPaymentIntent(b []byte, st *piState) []byte {
	var received, capturable int64
	switch st.status {
	case stripe.PaymentIntentStatusSucceeded:
		received = st.amount
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
	b = append(b, `,"customer":null,"description":null,"last_payment_error":null,"latest_charge":null,"livemode":false,"metadata":{`...)
	if len(st.metadata) > 0 {
		// Sorted, so that answers are reproducible.
		keys := make([]string, 0, len(st.metadata))
		for k := range st.metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, st.metadata[k])
		}
	}
	b = append(b, `},"next_action":null,"payment_method":null,"payment_method_types":["card"],"status":`...)
	b = appendString(b, string(st.status))
	return append(b, '}')
}

// appendEvent appends an event as Stripe renders it. Its request is null-valued: the fake's
// events come from no API request, like changes made in the Dashboard or by Stripe itself.
func appendEvent(b []byte, e *event) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, e.id)
	b = append(b, `,"object":"event"`...)
	if e.object.account != "" {
		// Stripe names the connected account only on Connect events.
		b = append(b, `,"account":`...)
		b = appendString(b, e.object.account)
	}
	b = append(b, `,"api_version":`...)
	b = appendString(b, stripe.APIVersion)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, e.created, 10)
	b = append(b, `,"data":{"object":`...)
	b = appendPaymentIntent(b, &e.object)
	b = append(b, `},"livemode":false,"pending_webhooks":0,"request":{"id":null,"idempotency_key":null},"type":`...)
	b = appendString(b, e.typ)
	return append(b, '}')
}

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
