package stripemoney

import (
	"encoding/json"
	"testing"

	"github.com/stripe/stripe-go/v82"
)

func TestTouchedReadsThePaymentAnEventIsAbout(t *testing.T) {
	tests := []struct {
		name, typ, object string
		id                string
		refund, ok        bool
	}{
		{"an intent's event names the intent", "payment_intent.succeeded", `{"id":"pi_1","object":"payment_intent","status":"succeeded"}`, "pi_1", false, true},
		{"a refunded charge names its intent and touches refunds", "charge.refunded", `{"id":"ch_1","object":"charge","payment_intent":"pi_2"}`, "pi_2", true, true},
		{"a refund's update names its intent", "charge.refund.updated", `{"id":"re_1","object":"refund","payment_intent":"pi_3"}`, "pi_3", true, true},
		{"a failed refund names its intent", "refund.failed", `{"id":"re_1","object":"refund","payment_intent":"pi_3"}`, "pi_3", true, true},
		{"a dispute names its intent", "charge.dispute.closed", `{"id":"dp_1","object":"dispute","payment_intent":"pi_4"}`, "pi_4", false, true},
		{"an expanded intent is read for its id", "charge.dispute.created", `{"id":"dp_1","object":"dispute","payment_intent":{"id":"pi_5","object":"payment_intent"}}`, "pi_5", false, true},
		{"a charge without an intent names none", "charge.refunded", `{"id":"ch_1","object":"charge","payment_intent":null}`, "", true, true},
		{"another object's event names none", "customer.updated", `{"id":"cus_1","object":"customer"}`, "", false, true},
		{"an id that is not an intent's is refused", "charge.dispute.created", `{"id":"dp_1","object":"dispute","payment_intent":"pi_1/../../v1/x"}`, "pi_1/../../v1/x", false, false},
		{"an unreadable reference is refused", "refund.created", `{"id":"re_1","object":"refund","payment_intent":42}`, "", false, false},
		{"an unreadable object is refused", "refund.created", `[1,2]`, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &stripe.Event{ID: "evt_1", Type: stripe.EventType(tt.typ), Data: &stripe.EventData{Raw: json.RawMessage(tt.object)}}
			id, refund, ok := touched(e)
			if ok != tt.ok || ok && (id != tt.id || refund != tt.refund) {
				t.Fatalf("touched = %q, refund %t, ok %t; want %q, %t, %t", id, refund, ok, tt.id, tt.refund, tt.ok)
			}
		})
	}
	if _, _, ok := touched(&stripe.Event{ID: "evt_1"}); ok {
		t.Error("an event without data was read")
	}
}
