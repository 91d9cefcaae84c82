package stripetest

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// expansion says which fields of an object to render as objects rather than ids, each with
// the expansion of its own object. A nil expansion expands nothing.
type expansion map[string]expansion

// Object kinds, as named by their "object" field.
const (
	kindPaymentIntent = "payment_intent"
	kindCharge        = "charge"
	kindRefund        = "refund"
	kindDispute       = "dispute"
	kindEvent         = "event"
	kindSubscription  = "subscription"
	kindInvoice       = "invoice"
	kindSession       = "checkout.session"
	kindAccount       = "account"
	kindPayout        = "payout"
	// kindBalanceTransaction's source is any of several kinds, so paths below it are not
	// checked; the fake renders the objects it has.
	kindBalanceTransaction = "balance_transaction"
	// kindInvoiceParent and kindSubscriptionDetails are the objects an invoice's
	// parent.subscription_details.subscription goes through.
	kindInvoiceParent       = "invoice parent"
	kindSubscriptionDetails = "invoice parent subscription_details"
	// kindRefundList is a charge's refunds sub-list; its data holds refunds.
	kindRefundList = "list of refunds"
)

// maxExpandDepth is how many levels a path may have, the "data" of a list included, as Stripe
// documents ("Expansions have a maximum depth of four levels").
const maxExpandDepth = 4

// expandable holds, per object, the fields Stripe marks expandable (x-expandableFields in its
// OpenAPI spec) and the kind of object each holds. Only the objects the fake models are
// rendered expanded; the others ("") render as they do unexpanded (null), and paths below them
// are accepted unchecked, since the fake cannot know those objects' fields.
var expandable = map[string]map[string]string{
	kindPaymentIntent: {
		"latest_charge":  kindCharge,
		"amount_details": "", "application": "", "automatic_payment_methods": "", "customer": "",
		"hooks": "", "last_payment_error": "", "managed_payments": "", "next_action": "",
		"on_behalf_of": "", "payment_details": "", "payment_method": "",
		"payment_method_configuration_details": "", "payment_method_options": "",
		"presentment_details": "", "processing": "", "review": "", "shipping": "",
		"transfer_data": "",
	},
	kindCharge: {
		"payment_intent": kindPaymentIntent,
		"application":    "", "application_fee": "", "balance_transaction": kindBalanceTransaction, "billing_details": "",
		"customer": "", "failure_balance_transaction": kindBalanceTransaction, "fraud_details": "", "on_behalf_of": "",
		"outcome": "", "payment_method_details": "", "presentment_details": "", "radar_options": "",
		"refunds": kindRefundList, "review": "", "shipping": "", "source_transfer": "", "transfer": "",
		"transfer_data": "",
	},
	kindRefundList: {"data": kindRefund},
	kindRefund: {
		"charge": kindCharge, "payment_intent": kindPaymentIntent,
		"balance_transaction": kindBalanceTransaction, "customer": "", "destination_details": "",
		"failure_balance_transaction": kindBalanceTransaction, "next_action": "", "payment_method": "",
		"presentment_details": "", "source_transfer_reversal": "", "transfer_reversal": "",
	},
	kindDispute: {
		"charge": kindCharge, "payment_intent": kindPaymentIntent,
		"balance_transactions": "", "evidence": "", "evidence_details": "", "payment_method_details": "",
	},
	kindEvent: {"data": "", "request": ""},
	kindSubscription: {
		"latest_invoice": kindInvoice,
		"application":    "", "automatic_tax": "", "billing_cycle_anchor_config": "", "billing_mode": "",
		"billing_schedules": "", "billing_thresholds": "", "cancellation_details": "", "customer": "",
		"default_payment_method": "", "default_source": "", "default_tax_rates": "", "discounts": "",
		"invoice_settings": "", "items": "", "managed_payments": "", "on_behalf_of": "",
		"pause_collection": "", "payment_settings": "", "pending_invoice_item_interval": "",
		"pending_setup_intent": "", "pending_update": "", "presentment_details": "", "schedule": "",
		"test_clock": "", "transfer_data": "", "trial_settings": "",
	},
	kindInvoice: {
		"parent":          kindInvoiceParent,
		"account_tax_ids": "", "application": "", "automatic_tax": "", "confirmation_secret": "",
		"custom_fields": "", "customer": "", "customer_address": "", "customer_shipping": "",
		"customer_tax_ids": "", "default_payment_method": "", "default_source": "",
		"default_tax_rates": "", "discounts": "", "from_invoice": "", "issuer": "",
		"last_finalization_error": "", "latest_revision": "", "lines": "", "on_behalf_of": "",
		"payment_settings": "", "payments": "", "rendering": "", "shipping_cost": "",
		"shipping_details": "", "status_transitions": "", "test_clock": "", "threshold_reason": "",
		"total_discount_amounts": "", "total_pretax_credit_amounts": "", "total_taxes": "",
	},
	kindInvoiceParent:       {"subscription_details": kindSubscriptionDetails, "quote_details": ""},
	kindSubscriptionDetails: {"subscription": kindSubscription},
	kindSession: {
		"payment_intent": kindPaymentIntent, "subscription": kindSubscription, "invoice": kindInvoice,
		"adaptive_pricing": "", "after_expiration": "", "automatic_tax": "", "branding_settings": "",
		"collected_information": "", "consent": "", "consent_collection": "", "currency_conversion": "",
		"custom_fields": "", "custom_text": "", "customer": "", "customer_details": "", "discounts": "",
		"invoice_creation": "", "line_items": "", "managed_payments": "", "name_collection": "",
		"optional_items": "", "payment_link": "", "payment_method_configuration_details": "",
		"payment_method_options": "", "permissions": "", "phone_number_collection": "",
		"presentment_details": "", "saved_payment_method_options": "", "setup_intent": "",
		"shipping_address_collection": "", "shipping_cost": "", "shipping_options": "",
		"tax_id_collection": "", "total_details": "", "wallet_options": "",
	},
	kindBalanceTransaction: {"source": "", "fee_details": ""},
	kindPayout: {
		"balance_transaction": kindBalanceTransaction, "failure_balance_transaction": kindBalanceTransaction,
		"application_fee": "", "destination": "", "original_payout": "", "reversed_by": "", "trace_id": "",
	},
	kindAccount: {
		"business_profile": "", "capabilities": "", "company": "", "controller": "",
		"external_accounts": "", "future_requirements": "", "groups": "", "individual": "",
		"requirements": "", "settings": "", "tos_acceptance": "",
	},
}

// parseExpand reads the expand parameter of a request for an object of the kind, or for a
// list of them: list paths start with "data". A path Stripe would refuse is a 400 like
// Stripe's: too deep, naming a field that cannot be expanded, or on a list not starting with
// data. Paths are checked in the order the client numbered them, so the error names the first
// bad one.
func parseExpand(q url.Values, kind string, list bool) (expansion, *failure) {
	paths := expandPaths(q)
	if len(paths) == 0 {
		return nil, nil
	}
	x := expansion{}
	for _, path := range paths {
		segs := strings.Split(path, ".")
		if len(segs) > maxExpandDepth {
			return nil, &failure{http.StatusBadRequest, apiError{
				Code:    "property_expansion_max_depth",
				DocURL:  docURL("property_expansion_max_depth"),
				Message: "You cannot expand more than 4 levels of a property. Property: " + path,
				Type:    errInvalidRequest,
			}}
		}
		if list {
			if segs[0] != "data" {
				if _, ok := expandable[kind][segs[0]]; ok {
					return nil, cannotExpand(segs[0], " You may want to try expanding 'data."+segs[0]+"' instead.")
				}
				return nil, cannotExpand(segs[0], "")
			}
			if len(segs) == 1 {
				return nil, cannotExpand(path, "")
			}
		}
		at, k := x, kind
		for i, seg := range segs {
			if list && i == 0 {
				continue
			}
			next, ok := expandable[k][seg]
			if !ok {
				return nil, cannotExpand(strings.Join(segs[:i+1], "."), "")
			}
			sub := at[seg]
			if sub == nil {
				sub = expansion{}
				at[seg] = sub
			}
			if next == "" {
				break // not modeled: nothing below it is rendered or checked
			}
			at, k = sub, next
		}
	}
	return x, nil
}

// cannotExpand is Stripe's answer to a path naming a field that is not expandable. Stripe sends
// it without a code or param.
func cannotExpand(path, hint string) *failure {
	return &failure{http.StatusBadRequest, apiError{
		Message: "This property cannot be expanded (" + path + ")." + hint,
		Type:    errInvalidRequest,
	}}
}

// expandPaths returns the values of expand[] and expand[n] in the client's order: numbered
// elements by their number, then unnumbered ones as sent.
func expandPaths(q url.Values) []string {
	type numbered struct {
		n    int
		vals []string
	}
	var elems []numbered
	for param, vs := range q {
		if !isArrayParam(param, "expand") {
			continue
		}
		n := -1 // expand[]: after the numbered ones, in order
		if i, err := strconv.Atoi(param[len("expand[") : len(param)-1]); err == nil {
			n = i
		}
		elems = append(elems, numbered{n, vs})
	}
	slices.SortFunc(elems, func(a, b numbered) int {
		if (a.n < 0) != (b.n < 0) {
			return cmp.Compare(b.n, a.n) // a negative number sorts last
		}
		return cmp.Compare(a.n, b.n)
	})
	var paths []string
	for _, e := range elems {
		paths = append(paths, e.vals...)
	}
	return paths
}
