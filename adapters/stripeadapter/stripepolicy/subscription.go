package stripepolicy

import (
	"fmt"
	"slices"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Finding kinds and the repair command of the subscription policy.
const (
	// KindSubscriptionCanceledExternally: the row grants access, Stripe canceled the subscription.
	KindSubscriptionCanceledExternally = "subscription_canceled_externally"
	// KindAccessWithoutBilling: the row grants access, Stripe does not bill (unpaid, paused,
	// incomplete, incomplete_expired).
	KindAccessWithoutBilling = "access_without_billing"
	// KindMissedActivation: Stripe bills the subscription, the row grants no access.
	KindMissedActivation = "missed_activation"
	// KindMissedStatusChange: another status change the row missed, access unchanged.
	KindMissedStatusChange = "missed_status_change"
	// KindBillingWithoutAccess: the row ended the subscription, Stripe still bills it.
	KindBillingWithoutAccess = "billing_without_access"
	// KindEndedLocallyNotExternally: the row ended the subscription, Stripe has not (and does
	// not bill it now).
	KindEndedLocallyNotExternally = "ended_locally_not_externally"
	// KindCancellationMissingExternally: the row cancels at period end, Stripe will renew.
	KindCancellationMissingExternally = "cancellation_missing_externally"
	// KindCancellationScheduledExternally: Stripe cancels at period end, the row expects a renewal.
	KindCancellationScheduledExternally = "cancellation_scheduled_externally"
	// KindPaidThroughAhead: the row grants access beyond the end of the period Stripe billed.
	KindPaidThroughAhead = "paid_through_ahead"
	// KindPaidThroughBehind: Stripe's current period ends later than the row records.
	KindPaidThroughBehind = "paid_through_behind"

	// CommandApplySubscriptionStatus asks the canonical writer to re-read the subscription and
	// record its status, SubscriptionPeriodEnd and cancel_at_period_end, as the
	// customer.subscription.* webhook handler does.
	CommandApplySubscriptionStatus = "ApplySubscriptionStatus"
)

// LocalSubscription is a subscriptions row as the subscription policy reads it; the view
// given to SubscriptionPolicy builds it from the host's own row type.
type LocalSubscription struct {
	// Status is the subscription's status as the row records it, in Stripe's words:
	// incomplete, incomplete_expired, trialing, active, past_due, canceled, unpaid or paused.
	Status string
	// CancelAtPeriodEnd is whether the row expects the subscription to end at the end of its
	// current period rather than renew.
	CancelAtPeriodEnd bool
	// PaidThrough is the time through which the row grants access: the end of Stripe's current
	// period as the row last recorded it (SubscriptionPeriodEnd, to the second). The zero time
	// means the row keeps none, and it is not compared.
	PaidThrough time.Time
}

// SubscriptionPolicy returns the subscription policy: it judges a subscriptions row, seen
// through view, against a Subscription. Stripe is where the customer is billed, so its status
// and period are the truth, and the row is what grants access: access Stripe no longer bills
// for is taken back through ApplySubscriptionStatus, while a row that ended or cancels a
// subscription Stripe still renews (the customer is billed for what we withdrew) goes to a
// person. The first rule that matches names the decision, and Decision.Diffs lists every
// field that differs (status, cancel_at_period_end, paid_through). The package doc has the
// table, with the reason for each direction.
//
// It is pure (no network, no clock) and safe for concurrent use, as view must be too. It is a
// reconcile.StateNamer: findings record the local Status and the subscription's status. It
// reads the current period from the subscription's items, which Stripe includes in every
// subscription it returns.
func SubscriptionPolicy[L any](view func(L) LocalSubscription) *Policy[L, *stripe.Subscription] {
	return viewed(view, subscriptionTable, func(sub *stripe.Subscription) bool { return sub != nil })
}

// SubscriptionPeriodEnd returns the end of the subscription's current period: the latest
// current_period_end of its items (stripe-go v82 has the period on items, not on the
// subscription), the zero time without items. The subscription policy compares it with
// LocalSubscription.PaidThrough, so a canonical writer that records a paid-through time
// should record this.
func SubscriptionPeriodEnd(sub *stripe.Subscription) time.Time {
	var end int64
	if sub != nil && sub.Items != nil {
		for _, it := range sub.Items.Data {
			if it != nil {
				end = max(end, it.CurrentPeriodEnd)
			}
		}
	}
	if end == 0 {
		return time.Time{}
	}
	return time.Unix(end, 0).UTC()
}

// Subscription statuses by what they mean for access and billing.
var (
	subBilling   = []string{"trialing", "active", "past_due"} // access granted, Stripe bills (a trial at its end)
	subPending   = []string{"incomplete"}                     // the first payment is not made yet
	subSuspended = []string{"unpaid", "paused"}               // no access, billing stopped, may resume
	subEnded     = []string{"canceled", "incomplete_expired"} // final at Stripe
	subKnown     = slices.Concat(subBilling, subPending, subSuspended, subEnded)
)

// subscriptionState names the subscription's state: its status, redacted; "" for nil.
func subscriptionState(sub *stripe.Subscription) string {
	if sub == nil {
		return ""
	}
	return redactKeys(string(sub.Status))
}

// subscriptionTable is the subscription policy; the package doc gives each direction's
// reason. Every rule names the statuses it applies to, so that a status nobody knows, on
// either side, matches none: NeedsReview unexpected. What needs a person comes before every
// repair, since ApplySubscriptionStatus writes all of Stripe's side and would erase what the
// person must see.
var subscriptionTable = mustTable(func(ls LocalSubscription) string { return ls.Status }, subscriptionState, subscriptionDiffs,
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subEnded, External: subBilling,
		Decision: review(KindBillingWithoutAccess),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("the row ended the subscription (%s), Stripe still bills it (%s)", ls.Status, subscriptionState(sub))
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subEnded, External: slices.Concat(subPending, subSuspended),
		Decision: review(KindEndedLocallyNotExternally),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("the row ended the subscription (%s), Stripe has not (%s) and may bill it again", ls.Status, subscriptionState(sub))
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subKnown, External: subKnown,
		When: func(ls LocalSubscription, sub *stripe.Subscription) bool {
			return cancelDiffers(ls, sub) && ls.CancelAtPeriodEnd
		},
		Decision: review(KindCancellationMissingExternally),
		Detail: func(_ LocalSubscription, sub *stripe.Subscription) string {
			d := fmt.Sprintf("the row cancels at period end, Stripe's %s subscription does not", subscriptionState(sub))
			if slices.Contains(subBilling, string(sub.Status)) {
				d += ": it renews at " + formatTime(SubscriptionPeriodEnd(sub))
			}
			return d
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subBilling, External: []string{"canceled"},
		Decision: repair(KindSubscriptionCanceledExternally, CommandApplySubscriptionStatus), Detail: canceledDetail},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subBilling, External: slices.Concat(subPending, subSuspended, subEnded),
		Decision: repair(KindAccessWithoutBilling, CommandApplySubscriptionStatus),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("the row grants access (%s), Stripe does not bill the subscription (%s)", ls.Status, subscriptionState(sub))
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: slices.Concat(subPending, subSuspended), External: subBilling,
		Decision: repair(KindMissedActivation, CommandApplySubscriptionStatus),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("Stripe bills the subscription (%s), the row grants no access (%s)", subscriptionState(sub), ls.Status)
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subKnown, External: subKnown,
		When:     func(ls LocalSubscription, sub *stripe.Subscription) bool { return ls.Status != string(sub.Status) },
		Decision: repair(KindMissedStatusChange, CommandApplySubscriptionStatus),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("the row says %s, Stripe %s", ls.Status, subscriptionState(sub))
		}},
	// The statuses agree from here on.
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subKnown, External: subKnown,
		When:     func(ls LocalSubscription, sub *stripe.Subscription) bool { return paidThroughAhead(ls, sub) },
		Decision: repair(KindPaidThroughAhead, CommandApplySubscriptionStatus),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("the row grants access through %s, Stripe's current period ends %s", formatTime(ls.PaidThrough), formatTime(SubscriptionPeriodEnd(sub)))
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subKnown, External: subKnown,
		When:     cancelDiffers,
		Decision: repair(KindCancellationScheduledExternally, CommandApplySubscriptionStatus),
		Detail: func(_ LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("Stripe cancels the subscription at period end (%s), the row expects it to renew", formatTime(SubscriptionPeriodEnd(sub)))
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subKnown, External: subKnown,
		When:     paidThroughBehind,
		Decision: repair(KindPaidThroughBehind, CommandApplySubscriptionStatus),
		Detail: func(ls LocalSubscription, sub *stripe.Subscription) string {
			return fmt.Sprintf("Stripe's current period ends %s, the row records %s", formatTime(SubscriptionPeriodEnd(sub)), formatTime(ls.PaidThrough))
		}},
	reconcile.Rule[LocalSubscription, *stripe.Subscription]{Local: subKnown, External: subKnown, Decision: inSync},
)

// cancelDiffers reports whether cancel_at_period_end differs while Stripe's subscription has
// not ended (once it has, there is no period end to cancel at).
func cancelDiffers(ls LocalSubscription, sub *stripe.Subscription) bool {
	return !slices.Contains(subEnded, string(sub.Status)) && ls.CancelAtPeriodEnd != sub.CancelAtPeriodEnd
}

// paidThrough compares the row's paid-through time with Stripe's period end, to the second,
// while Stripe bills; the zero time on either side is not compared.
func paidThrough(ls LocalSubscription, sub *stripe.Subscription) (ahead, behind bool) {
	end := SubscriptionPeriodEnd(sub)
	if ls.PaidThrough.IsZero() || end.IsZero() || !slices.Contains(subBilling, string(sub.Status)) {
		return false, false
	}
	// A past_due subscription's period has already moved on unpaid, so a row behind it is
	// right; only one ahead of it is drift.
	return ls.PaidThrough.Unix() > end.Unix(), ls.PaidThrough.Unix() < end.Unix() && sub.Status != stripe.SubscriptionStatusPastDue
}

func paidThroughAhead(ls LocalSubscription, sub *stripe.Subscription) bool {
	ahead, _ := paidThrough(ls, sub)
	return ahead
}

func paidThroughBehind(ls LocalSubscription, sub *stripe.Subscription) bool {
	_, behind := paidThrough(ls, sub)
	return behind
}

// canceledDetail says when Stripe ended the subscription, and why if it says.
func canceledDetail(ls LocalSubscription, sub *stripe.Subscription) string {
	d := fmt.Sprintf("the row grants access (%s), Stripe canceled the subscription", ls.Status)
	if at := max(sub.EndedAt, sub.CanceledAt); at > 0 {
		d += " at " + formatTime(time.Unix(at, 0))
	}
	if cd := sub.CancellationDetails; cd != nil && cd.Reason != "" {
		d += ": " + redactKeys(string(cd.Reason))
	}
	return d
}

// subscriptionDiffs lists every field on which the two sides differ. cancel_at_period_end and
// the period are not compared once Stripe's subscription has ended, nor the period while it
// does not bill.
func subscriptionDiffs(ls LocalSubscription, sub *stripe.Subscription) []reconcile.Diff {
	var out diffList
	if ls.Status != string(sub.Status) {
		out.add("status", ls.Status, subscriptionState(sub))
	}
	if cancelDiffers(ls, sub) {
		out.add("cancel_at_period_end", fmt.Sprint(ls.CancelAtPeriodEnd), fmt.Sprint(sub.CancelAtPeriodEnd))
	}
	if ahead, behind := paidThrough(ls, sub); ahead || behind {
		out.add("paid_through", formatTime(ls.PaidThrough), formatTime(SubscriptionPeriodEnd(sub)))
	}
	return out
}
