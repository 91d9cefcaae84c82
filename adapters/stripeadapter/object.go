package stripeadapter

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/stripe/stripe-go/v82"
)

// Object describes one Stripe object type to the kit: NewObjectGateway builds from it a gateway
// with this package's error mapping, id check, bulk list and feeds. T is the type its JSON
// decodes into, a pointer such as *stripe.Subscription; a host's own struct with Stripe's JSON
// names works too. Ship-ready descriptors are PaymentIntents, Subscriptions, Invoices,
// CheckoutSessions and Accounts; each call returns a fresh value, which the caller may change.
type Object[T any] struct {
	// Name is Stripe's name of the object type, the value of its "object" field:
	// "subscription", "checkout.session". Events whose object has another name are skipped;
	// messages print it with spaces ("checkout session").
	Name string
	// Path is the collection's path, "/v1/subscriptions": lists are GET Path, an object is
	// GET Path/{id}.
	Path string
	// IDPrefix starts every id of the type, "sub_": an id is the prefix followed by letters and
	// digits. An id of another shape is never sent (CheckID).
	IDPrefix string
	// ValidID, if set, replaces the IDPrefix check, for ids of another shape (a Checkout
	// Session's is cs_test_ or cs_live_ and letters and digits).
	ValidID func(id string) bool
	// ListParams are sent on every list call, the bulk fetch's and the reverse feed's:
	// Subscriptions need status=all, since Stripe's list leaves canceled subscriptions out
	// otherwise and a sweep would take each for missing. They must not set what the kit
	// sends itself: created, limit, starting_after, ending_before, expand.
	ListParams url.Values
	// Expand are the paths expanded on retrieve ("latest_charge"); lists expand "data." and
	// each, so that an object reads the same either way.
	Expand []string
	// EventTypes are the event types whose data.object is a T, read by EventsFeed unless
	// EventsOptions.Types says otherwise: "customer.subscription.*". At most 20, and a type
	// with * only alone (Stripe's rule).
	EventTypes []string
	// ID, Created and State read an object: its id, its creation time (Unix seconds) and its
	// state, "" when it has none. An object without a valid id or a state is not an answer
	// (an empty or foreign body, a proxy in between): it verifies nothing, and its row is
	// Unverifiable. They are never called with a nil T.
	ID      func(T) string
	Created func(T) int64
	State   func(T) string
	// Rank, if set, orders objects by how far along their life they are: Stripe orders events
	// by their second only, so among events of one object in the same second the highest rank
	// wins, and the later listed on a tie. Nil means the later listed.
	Rank func(T) int
	// NoCreatedFilter says the list endpoint cannot filter by creation time: the bulk fetch
	// then lists nothing and the engine asks one object at a time, and the reverse feed pages
	// the whole list newest first, keeping what falls in its window. Every object shipped here
	// has the filter.
	NoCreatedFilter bool
	// Platform marks objects of the platform itself, such as the connected accounts: their
	// calls never carry Stripe-Account, a gateway config with StripeAccount is refused, and so
	// is ForAccount.
	Platform bool

	// decodeList, if set, decodes list pages in one pass (plainlist.go); nil means
	// encoding/json into listPageOf[T].
	decodeList listDecoder[T]
	// missingCode, if set, is the error code of a 403 that says a retrieved object does not
	// exist: Stripe answers a retrieve of an account that is not, or no longer, connected to
	// the platform with 403 account_invalid, never 404.
	missingCode stripe.ErrorCode
}

// maxEventTypes is the most types Stripe's events list takes in one call.
const maxEventTypes = 20

// reservedListParams are the list parameters the kit sends itself.
var reservedListParams = []string{"created", "limit", "starting_after", "ending_before", "expand"}

// check reports what makes obj unusable, and returns a copy that shares nothing the caller can
// still change.
func (obj Object[T]) check() (Object[T], error) {
	bad := func(format string, args ...any) (Object[T], error) {
		return Object[T]{}, fmt.Errorf("stripeadapter: object %q: "+format, append([]any{obj.Name}, args...)...)
	}
	switch {
	case obj.Name == "":
		return Object[T]{}, errors.New("stripeadapter: object: Name is empty")
	case !strings.HasPrefix(obj.Path, "/v1/") || strings.ContainsAny(obj.Path, "?#") || strings.HasSuffix(obj.Path, "/"):
		return bad("Path %q is not a collection path such as /v1/subscriptions", obj.Path)
	case obj.IDPrefix == "" && obj.ValidID == nil:
		return bad("IDPrefix is empty and no ValidID is set")
	case obj.ID == nil || obj.Created == nil || obj.State == nil:
		return bad("ID, Created and State must all be set")
	case len(obj.EventTypes) > maxEventTypes:
		return bad("%d event types, Stripe takes at most %d", len(obj.EventTypes), maxEventTypes)
	case len(obj.EventTypes) > 1 && slices.ContainsFunc(obj.EventTypes, func(t string) bool { return strings.Contains(t, "*") }):
		return bad("an event type with * must be the only one")
	case slices.Contains(obj.EventTypes, ""):
		return bad("empty event type")
	}
	for k := range obj.ListParams {
		for _, r := range reservedListParams {
			if k == r || strings.HasPrefix(k, r+"[") {
				return bad("ListParams set %q, which the kit sends itself", k)
			}
		}
	}
	for _, e := range obj.Expand {
		if e == "" || strings.HasPrefix(e, "data.") {
			return bad("Expand path %q: give the object's own path, the kit adds data. for lists", e)
		}
	}
	obj.ListParams = cloneValues(obj.ListParams)
	obj.Expand = slices.Clone(obj.Expand)
	obj.EventTypes = slices.Clone(obj.EventTypes)
	return obj, nil
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// label is the name for messages: "checkout session".
func (obj *Object[T]) label() string {
	return strings.NewReplacer("_", " ", ".", " ").Replace(obj.Name)
}

// plural is label's plural for messages ("list subscriptions").
func (obj *Object[T]) plural() string { return obj.label() + "s" }

// validID reports whether id has the shape of one of obj's ids.
func (obj *Object[T]) validID(id string) bool {
	if obj.ValidID != nil {
		return obj.ValidID(id)
	}
	return validID(obj.IDPrefix, id)
}

// answers reports whether v is an answer about an object: not nil, with a valid id and a
// state.
func (obj *Object[T]) answers(v T) bool {
	return !isNil(v) && obj.validID(obj.ID(v)) && obj.State(v) != ""
}

// rank is Rank's, 0 without one.
func (obj *Object[T]) rank(v T) int {
	if obj.Rank == nil {
		return 0
	}
	return obj.Rank(v)
}

// isNil reports whether v is nil, a nil pointer (a JSON null in a list) included.
func isNil[T any](v T) bool {
	rv := reflect.ValueOf(any(v))
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// PaymentIntents describes PaymentIntents, their latest charge expanded (it carries the money:
// refunds, disputes). Their state is the status; among events of one second the furthest
// status along wins (a payment that succeeds in the second it is created lists both events in
// either order). Package stripemoney reads Payments on this descriptor's gateway.
func PaymentIntents() Object[*stripe.PaymentIntent] {
	return Object[*stripe.PaymentIntent]{
		Name:       "payment_intent",
		Path:       "/v1/payment_intents",
		IDPrefix:   "pi_",
		Expand:     []string{"latest_charge"},
		EventTypes: []string{"payment_intent.*"},
		ID:         func(pi *stripe.PaymentIntent) string { return pi.ID },
		Created:    func(pi *stripe.PaymentIntent) int64 { return pi.Created },
		State:      func(pi *stripe.PaymentIntent) string { return string(pi.Status) },
		Rank:       func(pi *stripe.PaymentIntent) int { return statusRank(pi.Status) },
		decodeList: paymentIntentList,
	}
}

// statusRank orders PaymentIntent statuses by how far along a payment they are.
func statusRank(s stripe.PaymentIntentStatus) int {
	switch s {
	case stripe.PaymentIntentStatusSucceeded, stripe.PaymentIntentStatusCanceled:
		return 2
	case stripe.PaymentIntentStatusProcessing, stripe.PaymentIntentStatusRequiresAction, stripe.PaymentIntentStatusRequiresCapture:
		return 1
	}
	return 0
}

// ValidPaymentIntentID reports whether id has the shape of a PaymentIntent id: "pi_" and
// letters and digits. Anything else would be a wasted call, or a request to another path (a
// client secret, pi_..._secret_..., is refused too).
func ValidPaymentIntentID(id string) bool { return validID("pi_", id) }

// Subscriptions describes Subscriptions. Lists send status=all: without it Stripe leaves
// canceled subscriptions out, and a sweep would report each as missing. Their state is the
// status (incomplete, incomplete_expired, trialing, active, past_due, canceled, unpaid,
// paused); events are customer.subscription.*. Among events of one second an ended status
// wins over any other, and any over incomplete (a subscription created and paid in the same
// second lists customer.subscription.created and .updated in either order).
func Subscriptions() Object[*stripe.Subscription] {
	return Object[*stripe.Subscription]{
		Name:       "subscription",
		Path:       "/v1/subscriptions",
		IDPrefix:   "sub_",
		ListParams: url.Values{"status": {"all"}},
		EventTypes: []string{"customer.subscription.*"},
		ID:         func(s *stripe.Subscription) string { return s.ID },
		Created:    func(s *stripe.Subscription) int64 { return s.Created },
		State:      func(s *stripe.Subscription) string { return string(s.Status) },
		Rank:       subscriptionRank,
		decodeList: subscriptionList,
	}
}

// subscriptionRank orders subscription statuses by the only ways Stripe moves them one way:
// out of incomplete, and into canceled or incomplete_expired, which are final. The statuses
// between (trialing, active, past_due, unpaid, paused) go back and forth and rank alike.
func subscriptionRank(s *stripe.Subscription) int {
	switch s.Status {
	case stripe.SubscriptionStatusIncomplete:
		return 0
	case stripe.SubscriptionStatusCanceled, stripe.SubscriptionStatusIncompleteExpired:
		return 2
	}
	return 1
}

// Invoices describes Invoices. Their state is the status (draft, open, paid, uncollectible,
// void); events are invoice.* but invoice.upcoming (InvoiceEventTypes), whose object is a
// preview of the next invoice, without an invoice's id: not a state of any row. Among events of one second the furthest status along wins: an
// invoice finalized and paid in one second (a subscription's first invoice, a renewal
// charged on finalization) lists its events in either order.
func Invoices() Object[*stripe.Invoice] {
	return Object[*stripe.Invoice]{
		Name:       "invoice",
		Path:       "/v1/invoices",
		IDPrefix:   "in_",
		EventTypes: slices.Clone(InvoiceEventTypes),
		ID:         func(in *stripe.Invoice) string { return in.ID },
		Created:    func(in *stripe.Invoice) int64 { return in.Created },
		State:      func(in *stripe.Invoice) string { return string(in.Status) },
		Rank:       invoiceRank,
		decodeList: invoiceList,
	}
}

// InvoiceEventTypes are the events Invoices reads: every invoice.* type Stripe sends with an
// invoice in data.object, invoice.upcoming left out. Stripe takes a pattern with * only alone,
// so they are named; a type Stripe adds later is not read (the sweep still finds its change).
var InvoiceEventTypes = []string{
	"invoice.created", "invoice.deleted", "invoice.finalization_failed", "invoice.finalized",
	"invoice.marked_uncollectible", "invoice.overdue", "invoice.overpaid", "invoice.paid",
	"invoice.payment_action_required", "invoice.payment_failed", "invoice.payment_succeeded",
	"invoice.sent", "invoice.updated", "invoice.voided", "invoice.will_be_due",
}

// invoiceRank orders invoice statuses as Stripe moves them: draft, open, uncollectible, then
// paid or void, which are final.
func invoiceRank(in *stripe.Invoice) int {
	switch in.Status {
	case stripe.InvoiceStatusOpen:
		return 1
	case stripe.InvoiceStatusUncollectible:
		return 2
	case stripe.InvoiceStatusPaid, stripe.InvoiceStatusVoid:
		return 3
	}
	return 0
}

// CheckoutSessions describes Checkout Sessions. Their state is the status (open, complete,
// expired; payment_status is the policy's to read); events are checkout.session.*. Among
// events of one second a closed session wins over an open one, and a paid one over an unpaid
// one. Their ids are cs_ and letters and digits, with test_ or live_ after cs_ as Stripe
// issues them.
func CheckoutSessions() Object[*stripe.CheckoutSession] {
	return Object[*stripe.CheckoutSession]{
		Name:       "checkout.session",
		Path:       "/v1/checkout/sessions",
		IDPrefix:   "cs_",
		ValidID:    ValidCheckoutSessionID,
		EventTypes: []string{"checkout.session.*"},
		ID:         func(cs *stripe.CheckoutSession) string { return cs.ID },
		Created:    func(cs *stripe.CheckoutSession) int64 { return cs.Created },
		State:      func(cs *stripe.CheckoutSession) string { return string(cs.Status) },
		Rank:       checkoutRank,
		decodeList: checkoutList,
	}
}

// checkoutRank orders sessions as Stripe moves them: open, then complete or expired (never
// reopened), and a complete session's payment from unpaid to paid (never back).
func checkoutRank(cs *stripe.CheckoutSession) int {
	switch {
	case cs.Status == stripe.CheckoutSessionStatusOpen:
		return 0
	case cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid || cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusNoPaymentRequired:
		return 2
	}
	return 1
}

// ValidCheckoutSessionID reports whether id has the shape of a Checkout Session id: cs_, then
// optionally test_ or live_, then letters and digits.
func ValidCheckoutSessionID(id string) bool {
	for _, p := range []string{"cs_test_", "cs_live_", "cs_"} {
		if validID(p, id) {
			return true
		}
	}
	return false
}

// Payouts describes payouts: money sent from the account's balance to its bank. Their state is
// the status (pending, in_transit, paid, failed, canceled); events are PayoutEventTypes. Paid is
// not final: Stripe says some payouts show paid and then fail, within 5 business days, so among
// events of one second failed and canceled win over paid, and paid over pending and in_transit.
// Package stripepayouts ties a payout's balance transactions out on this descriptor's gateway.
func Payouts() Object[*stripe.Payout] {
	return Object[*stripe.Payout]{
		Name:       "payout",
		Path:       "/v1/payouts",
		IDPrefix:   "po_",
		EventTypes: slices.Clone(PayoutEventTypes),
		ID:         func(p *stripe.Payout) string { return p.ID },
		Created:    func(p *stripe.Payout) int64 { return p.Created },
		State:      func(p *stripe.Payout) string { return string(p.Status) },
		Rank:       payoutRank,
	}
}

// PayoutEventTypes are the events Payouts reads: every change of a payout's status, and
// payout.reconciliation_completed, after which its balance transactions are final.
var PayoutEventTypes = []string{
	"payout.created", "payout.updated", "payout.paid", "payout.failed", "payout.canceled",
	"payout.reconciliation_completed",
}

// payoutRank orders payout statuses as Stripe moves them: pending, in_transit, paid, then
// failed or canceled, which are final (a paid payout can still fail).
func payoutRank(p *stripe.Payout) int {
	switch p.Status {
	case stripe.PayoutStatusInTransit:
		return 1
	case stripe.PayoutStatusPaid:
		return 2
	case stripe.PayoutStatusFailed, stripe.PayoutStatusCanceled:
		return 3
	}
	return 0
}

// ValidPayoutID reports whether id has the shape of a payout id: "po_" and letters and digits.
func ValidPayoutID(id string) bool { return validID("po_", id) }

// Accounts describes connected accounts, read on the platform: their calls never carry
// Stripe-Account. An account has no status field; its state is derived, in this order:
//
//	rejected     requirements.disabled_reason is rejected.* (fraud, terms of service, ...)
//	enabled      charges_enabled and payouts_enabled
//	pending      disabled_reason is requirements.pending_verification or under_review
//	onboarding   details_submitted is false
//	restricted   anything else: charges or payouts are off and Stripe wants information
//
// A body whose object is not "account" has no state (not an answer). A retrieve answered 403
// account_invalid (Stripe's answer for an account that is not, or no longer, connected) is
// ErrNotFound: the account is missing, not the key at fault. It names no event types:
// account.updated is an event of the connected account itself, listed only with its
// Stripe-Account header, never in the platform's log, so a change is found by the sweep and
// the reverse scan.
func Accounts() Object[*stripe.Account] {
	return Object[*stripe.Account]{
		Name:        "account",
		Path:        "/v1/accounts",
		IDPrefix:    "acct_",
		ID:          func(a *stripe.Account) string { return a.ID },
		Created:     func(a *stripe.Account) int64 { return a.Created },
		State:       AccountState,
		Platform:    true,
		missingCode: stripe.ErrorCodeAccountInvalid,
		decodeList:  accountList,
	}
}

// AccountState is the state Accounts gives an account (see there); "" for a body that is not
// an account.
func AccountState(a *stripe.Account) string {
	if a == nil || a.Object != "account" {
		return ""
	}
	var reason string
	if a.Requirements != nil {
		reason = string(a.Requirements.DisabledReason)
	}
	switch {
	case strings.HasPrefix(reason, "rejected"):
		return "rejected"
	case a.ChargesEnabled && a.PayoutsEnabled:
		return "enabled"
	case reason == "requirements.pending_verification" || reason == "under_review":
		return "pending"
	case !a.DetailsSubmitted:
		return "onboarding"
	}
	return "restricted"
}
