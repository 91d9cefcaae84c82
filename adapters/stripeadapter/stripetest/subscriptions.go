package stripetest

import (
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Subscription is a Subscription held by the fake, in the fields the project reads. It has one
// item, which carries the current period (API version basil moved the period from the
// subscription to its items).
type Subscription struct {
	// ID is the object's id; empty means a generated one, "sub_" and 24 alphanumeric
	// characters.
	ID string
	// Account is the Connect account ("acct_...") that owns the subscription; "" is the
	// platform. See PaymentIntent.Account.
	Account string
	// Customer is the customer's id; empty means a generated "cus_..." id. Customers are not
	// otherwise modeled.
	Customer string
	// Status is the subscription's status; empty means active.
	Status stripe.SubscriptionStatus
	// Created is when the subscription was created; zero means Options.Now.
	Created time.Time
	// Currency is a lowercase ISO code; empty means "usd".
	Currency string
	// CurrentPeriodStart and CurrentPeriodEnd bound the period paid for, on the item; zero
	// means Created and one month after CurrentPeriodStart.
	CurrentPeriodStart, CurrentPeriodEnd time.Time
	// CancelAtPeriodEnd means the subscription ends with its period; cancel_at is then the
	// period's end and canceled_at when the cancellation was asked for (Created here).
	CancelAtPeriodEnd bool
	// CanceledAt is when a subscription added as canceled ended (its canceled_at and
	// ended_at; for incomplete_expired only ended_at); zero means Created. It is ignored for
	// other statuses when adding. Read back, it is canceled_at, which is also set when
	// cancel_at_period_end was asked for.
	CanceledAt time.Time
	// LatestInvoice is the id of the subscription's newest invoice, read only: AddInvoice
	// sets it.
	LatestInvoice string
	// Metadata is copied when the subscription is added.
	Metadata map[string]string
}

// subState is a subscription as stored, copied into events as snapshots.
type subState struct {
	id, account       string
	customer          string
	status            stripe.SubscriptionStatus
	created           int64
	currency          string
	itemID            string
	periodStart       int64
	periodEnd         int64
	cancelAtPeriodEnd bool
	canceledAt        int64 // 0: null
	endedAt           int64 // 0: null
	latestInvoice     string
	latestInvoiceAt   sortKey // the latest invoice's key, to keep the newest
	metadata          map[string]string
}

// subscription is a stored Subscription.
type subscription struct {
	subState
	seq uint64
}

func (sb *subscription) sortKey() sortKey { return sortKey{sb.created, sb.seq} }

// knownSubscriptionStatuses are the Subscription statuses Stripe documents.
var knownSubscriptionStatuses = map[stripe.SubscriptionStatus]bool{
	stripe.SubscriptionStatusIncomplete:        true,
	stripe.SubscriptionStatusIncompleteExpired: true,
	stripe.SubscriptionStatusTrialing:          true,
	stripe.SubscriptionStatusActive:            true,
	stripe.SubscriptionStatusPastDue:           true,
	stripe.SubscriptionStatusCanceled:          true,
	stripe.SubscriptionStatusUnpaid:            true,
	stripe.SubscriptionStatusPaused:            true,
}

// ended reports whether a subscription in the status is over: canceled, or expired before its
// first payment. Neither comes back.
func ended(status stripe.SubscriptionStatus) bool {
	return status == stripe.SubscriptionStatusCanceled || status == stripe.SubscriptionStatusIncompleteExpired
}

// AddSubscription stores sub and records customer.subscription.created at its created time.
// It returns the subscription's id. It panics, as a broken fixture should, if the id is
// already used, the status is not one Stripe knows, or the period ends before it starts.
func (s *Server) AddSubscription(sub Subscription) string {
	return s.AddSubscriptions([]Subscription{sub})[0]
}

// AddSubscriptions stores many subscriptions at once, like AddSubscription, and returns their
// ids in order.
func (s *Server) AddSubscriptions(subs []Subscription) []string {
	return addObjects(s, subs, adding[Subscription, subState, *subscription]{
		kind: subscriptionObjects, name: "subscription",
		objects:  func(s *Server) *map[string]*subscription { return &s.subs },
		idPrefix: "sub_", idLen: 24,
		event:   "customer.subscription.created",
		created: func(sub Subscription) time.Time { return sub.Created },
		build:   buildSubscription,
		id:      func(st *subState) *string { return &st.id },
		store:   func(st subState, seq uint64) *subscription { return &subscription{subState: st, seq: seq} },
	})
}

// buildSubscription is an added subscription's state, with its defaults; it panics for a
// broken fixture, as AddSubscription documents.
func buildSubscription(_ *Server, sub Subscription, created int64) subState {
	st := subState{
		id:                sub.ID,
		account:           sub.Account,
		customer:          sub.Customer,
		status:            sub.Status,
		created:           created,
		currency:          sub.Currency,
		cancelAtPeriodEnd: sub.CancelAtPeriodEnd,
		itemID:            randomID("si_", 14),
	}
	if st.status == "" {
		st.status = stripe.SubscriptionStatusActive
	}
	if !knownSubscriptionStatuses[st.status] {
		panic(fmt.Sprintf("stripetest: unknown subscription status %q", st.status))
	}
	if st.currency == "" {
		st.currency = "usd"
	}
	if st.customer == "" {
		st.customer = randomID("cus_", 14)
	}
	st.periodStart, st.periodEnd = st.created, 0
	if !sub.CurrentPeriodStart.IsZero() {
		st.periodStart = sub.CurrentPeriodStart.Unix()
	}
	if sub.CurrentPeriodEnd.IsZero() {
		st.periodEnd = time.Unix(st.periodStart, 0).UTC().AddDate(0, 1, 0).Unix()
	} else {
		st.periodEnd = sub.CurrentPeriodEnd.Unix()
	}
	if st.periodEnd < st.periodStart {
		panic(fmt.Sprintf("stripetest: subscription period ends (%d) before it starts (%d)", st.periodEnd, st.periodStart))
	}
	if ended(st.status) {
		st.endedAt = st.created
		if !sub.CanceledAt.IsZero() {
			st.endedAt = sub.CanceledAt.Unix()
		}
		if st.status == stripe.SubscriptionStatusCanceled {
			st.canceledAt = st.endedAt // an expired one ended without being canceled
		}
	} else if st.cancelAtPeriodEnd {
		st.canceledAt = st.created
	}
	if len(sub.Metadata) > 0 {
		st.metadata = maps.Clone(sub.Metadata)
	}
	return st
}

// Subscription returns the subscription with the id, whatever its account.
func (s *Server) Subscription(id string) (Subscription, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.subs[id]
	if !ok {
		return Subscription{}, false
	}
	out := Subscription{
		ID:                 sb.id,
		Account:            sb.account,
		Customer:           sb.customer,
		Status:             sb.status,
		Created:            unixTime(sb.created),
		Currency:           sb.currency,
		CurrentPeriodStart: unixTime(sb.periodStart),
		CurrentPeriodEnd:   unixTime(sb.periodEnd),
		CancelAtPeriodEnd:  sb.cancelAtPeriodEnd,
		LatestInvoice:      sb.latestInvoice,
		Metadata:           maps.Clone(sb.metadata),
	}
	if sb.canceledAt != 0 {
		out.CanceledAt = unixTime(sb.canceledAt)
	}
	return out, true
}

// unixTime is a created-style time as a time.Time in UTC.
func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// SetSubscriptionStatus changes a subscription's status at Options.Now and records the events
// Stripe sends for it: customer.subscription.deleted for canceled (canceled_at and ended_at
// become now), customer.subscription.updated for any other status, followed by
// customer.subscription.paused when it becomes paused and customer.subscription.resumed when
// it leaves paused. A change to the current status records its events again. It fails for an
// unknown id or status, and for a subscription that has ended (canceled or
// incomplete_expired), which Stripe cannot revive.
func (s *Server) SetSubscriptionStatus(id string, status stripe.SubscriptionStatus) error {
	if !knownSubscriptionStatuses[status] {
		return fmt.Errorf("stripetest: unknown subscription status %q", status)
	}
	at := s.now().Unix()
	return s.changeSubscription(id, at, func(sb *subscription) ([]string, error) {
		if ended(sb.status) && sb.status != status {
			return nil, fmt.Errorf("stripetest: subscription %s has ended (%s) and cannot become %s", sb.id, sb.status, status)
		}
		was := sb.status
		sb.status = status
		switch {
		case status == stripe.SubscriptionStatusCanceled:
			if sb.endedAt == 0 {
				sb.canceledAt, sb.endedAt = at, at
			}
			return []string{"customer.subscription.deleted"}, nil
		case status == stripe.SubscriptionStatusIncompleteExpired:
			if sb.endedAt == 0 {
				sb.endedAt = at
			}
		case status == stripe.SubscriptionStatusPaused:
			return []string{"customer.subscription.updated", "customer.subscription.paused"}, nil
		case was == stripe.SubscriptionStatusPaused:
			return []string{"customer.subscription.updated", "customer.subscription.resumed"}, nil
		}
		return []string{"customer.subscription.updated"}, nil
	})
}

// SetCancelAtPeriodEnd asks for a subscription to end with its current period, or takes the
// request back, at Options.Now, as the Dashboard's "cancel at period end" does: cancel_at
// becomes the period's end (null when taken back) and canceled_at now (null when taken back).
// The status does not change; SetSubscriptionStatus(canceled) ends it. It records
// customer.subscription.updated, and fails for an unknown or ended subscription.
func (s *Server) SetCancelAtPeriodEnd(id string, cancel bool) error {
	at := s.now().Unix()
	return s.changeSubscription(id, at, func(sb *subscription) ([]string, error) {
		if ended(sb.status) {
			return nil, fmt.Errorf("stripetest: subscription %s has ended (%s)", sb.id, sb.status)
		}
		sb.cancelAtPeriodEnd = cancel
		sb.canceledAt = 0
		if cancel {
			sb.canceledAt = at
		}
		return []string{"customer.subscription.updated"}, nil
	})
}

// SetSubscriptionPeriod moves a subscription's current period, as a renewal does, and records
// customer.subscription.updated. It fails for an unknown or ended subscription, or a period
// that ends before it starts.
func (s *Server) SetSubscriptionPeriod(id string, start, end time.Time) error {
	if end.Before(start) {
		return fmt.Errorf("stripetest: subscription period ends (%s) before it starts (%s)", end, start)
	}
	return s.changeSubscription(id, s.now().Unix(), func(sb *subscription) ([]string, error) {
		if ended(sb.status) {
			return nil, fmt.Errorf("stripetest: subscription %s has ended (%s)", sb.id, sb.status)
		}
		sb.periodStart, sb.periodEnd = start.Unix(), end.Unix()
		return []string{"customer.subscription.updated"}, nil
	})
}

// changeSubscription applies change to a subscription under the lock and records the events
// it names at the time at, each with a snapshot after the change.
func (s *Server) changeSubscription(id string, at int64, change func(*subscription) ([]string, error)) error {
	return changeObject(s, subscriptionObjects, "subscription", id, at, func(sb *subscription) snapshot { return sb.subState }, change)
}

// subscriptionListStatuses are the values of the status filter of GET /v1/subscriptions:
// the statuses, and all and ended.
var subscriptionListStatuses = "active, all, canceled, ended, incomplete, incomplete_expired, past_due, paused, trialing, or unpaid"

// subscriptionObjects serves the subscription routes.
var subscriptionObjects = objectKind[*subscription]{object: kindSubscription, path: "/v1/subscriptions",
	param:     "id",
	byID:      func(s *Server) map[string]*subscription { return s.subs },
	byAccount: func(s *Server) map[string]*index[*subscription] { return s.subsBy },
	account:   func(sb *subscription) string { return sb.account },
	render: func(b []byte, sb *subscription, x expander) []byte {
		return appendSubscription(b, &sb.subState, x)
	},
	own: func(param string) bool { return param == "status" || param == "customer" },
	selection: func(s *Server, account string, q url.Values) (*index[*subscription], func(*subscription) bool, *failure) {
		var match func(*subscription) bool
		status := stripe.SubscriptionStatus(q.Get("status"))
		switch {
		case !q.Has("status"):
			// Stripe's default: every subscription that has not been canceled.
			match = func(sb *subscription) bool { return sb.status != stripe.SubscriptionStatusCanceled }
		case status == "all":
		case status == "ended":
			match = func(sb *subscription) bool { return ended(sb.status) }
		case knownSubscriptionStatuses[status]:
			match = func(sb *subscription) bool { return sb.status == status }
		default:
			return nil, nil, invalidRequest("status", "Invalid status: must be one of %s", subscriptionListStatuses)
		}
		if customer := q.Get("customer"); q.Has("customer") {
			byStatus := match
			match = func(sb *subscription) bool {
				return sb.customer == customer && (byStatus == nil || byStatus(sb))
			}
		}
		return s.subsBy[account], match, nil
	},
}

// appendSubscription appends a Subscription as Stripe renders it, in the fields
// stripe.Subscription decodes; fields the fake does not model are null or empty, as for a
// plain subscription.
func appendSubscription(b []byte, st *subState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, st.id)
	b = append(b, `,"object":"subscription","application":null,"application_fee_percent":null,"automatic_tax":{"disabled_reason":null,"enabled":false,"liability":null},"billing_cycle_anchor":`...)
	b = strconv.AppendInt(b, st.periodStart, 10)
	b = append(b, `,"billing_thresholds":null,"cancel_at":`...)
	if st.cancelAtPeriodEnd {
		b = strconv.AppendInt(b, st.periodEnd, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"cancel_at_period_end":`...)
	b = strconv.AppendBool(b, st.cancelAtPeriodEnd)
	b = append(b, `,"canceled_at":`...)
	b = appendTime(b, st.canceledAt)
	b = append(b, `,"cancellation_details":{"comment":null,"feedback":null,"reason":null},"collection_method":"charge_automatically","created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, st.currency)
	b = append(b, `,"customer":`...)
	b = appendString(b, st.customer)
	b = append(b, `,"days_until_due":null,"default_payment_method":null,"default_source":null,"default_tax_rates":[],"description":null,"discounts":[],"ended_at":`...)
	b = appendTime(b, st.endedAt)
	b = append(b, `,"items":{"object":"list","data":[{"id":`...)
	b = appendString(b, st.itemID)
	b = append(b, `,"object":"subscription_item","billing_thresholds":null,"created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"current_period_end":`...)
	b = strconv.AppendInt(b, st.periodEnd, 10)
	b = append(b, `,"current_period_start":`...)
	b = strconv.AppendInt(b, st.periodStart, 10)
	b = append(b, `,"discounts":[],"metadata":{},"plan":null,"price":null,"quantity":1,"subscription":`...)
	b = appendString(b, st.id)
	b = append(b, `,"tax_rates":[]}],"has_more":false,"url":`...)
	b = appendStrings(b, "/v1/subscription_items?subscription=", st.id)
	b = append(b, `},"latest_invoice":`...)
	b = e.appendRef(b, "latest_invoice", st.latestInvoice, func(b []byte, sub expander) []byte {
		return appendInvoice(b, &e.s.invoices[st.latestInvoice].invState, sub)
	})
	b = append(b, `,"livemode":false,"metadata":`...)
	b = appendMetadata(b, st.metadata)
	b = append(b, `,"on_behalf_of":null,"pause_collection":null,"pending_invoice_item_interval":null,"pending_setup_intent":null,"pending_update":null,"schedule":null,"start_date":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, string(st.status))
	b = append(b, `,"test_clock":null,"transfer_data":null,"trial_end":`...)
	if st.status == stripe.SubscriptionStatusTrialing {
		b = strconv.AppendInt(b, st.periodEnd, 10)
		b = append(b, `,"trial_start":`...)
		b = strconv.AppendInt(b, st.periodStart, 10)
	} else {
		b = append(b, `null,"trial_start":null`...)
	}
	return append(b, '}')
}

// appendTime appends a Unix time, 0 meaning null.
func appendTime(b []byte, sec int64) []byte {
	if sec == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, sec, 10)
}

func (st subState) appendJSON(b []byte) []byte { return appendSubscription(b, &st, expander{}) }
