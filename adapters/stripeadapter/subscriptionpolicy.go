package stripeadapter

import (
	"fmt"
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
func SubscriptionPolicy[L any](view func(L) LocalSubscription) reconcile.Classifier[L, *stripe.Subscription] {
	return subscriptionPolicy[L]{view: view}
}

type subscriptionPolicy[L any] struct {
	view func(L) LocalSubscription
}

// LocalState names the row's state: its Status.
func (p subscriptionPolicy[L]) LocalState(local L) string { return p.view(local).Status }

// ExternalState names the subscription's state: its status, redacted.
func (p subscriptionPolicy[L]) ExternalState(sub *stripe.Subscription) string {
	if sub == nil {
		return ""
	}
	return redactKeys(string(sub.Status))
}

// Classify applies subscriptionRules in order; the first that matches decides.
func (p subscriptionPolicy[L]) Classify(local L, sub *stripe.Subscription) reconcile.Decision {
	ls := p.view(local)
	if sub == nil {
		return reconcile.Unexpected(ls.Status, "")
	}
	f := newSubscriptionFacts(ls, sub)
	return firstRule(subscriptionRules, &f, (*subscriptionFacts).diffs)
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

// subscriptionPhase groups statuses by what they mean for access and billing.
type subscriptionPhase int

const (
	phaseUnknown   subscriptionPhase = iota
	phaseBilling                     // trialing, active, past_due: access granted, Stripe bills (a trial at its end)
	phasePending                     // incomplete: the first payment is not made yet
	phaseSuspended                   // unpaid, paused: no access, billing stopped, may resume
	phaseEnded                       // canceled, incomplete_expired: final at Stripe
)

func phaseOf(status string) subscriptionPhase {
	switch stripe.SubscriptionStatus(status) {
	case stripe.SubscriptionStatusTrialing, stripe.SubscriptionStatusActive, stripe.SubscriptionStatusPastDue:
		return phaseBilling
	case stripe.SubscriptionStatusIncomplete:
		return phasePending
	case stripe.SubscriptionStatusUnpaid, stripe.SubscriptionStatusPaused:
		return phaseSuspended
	case stripe.SubscriptionStatusCanceled, stripe.SubscriptionStatusIncompleteExpired:
		return phaseEnded
	}
	return phaseUnknown
}

// subscriptionFacts is what the rules compare, read once from both sides.
type subscriptionFacts struct {
	local  LocalSubscription
	sub    *stripe.Subscription
	status string // Stripe's status, redacted
	// lp and sp are the phases of the row's and Stripe's status.
	lp, sp subscriptionPhase
	// end is SubscriptionPeriodEnd; ahead and behind compare the row's PaidThrough with it.
	end           time.Time
	ahead, behind bool
	// cancelDiffers: cancel_at_period_end differs, and Stripe's subscription has not ended.
	cancelDiffers bool
}

func newSubscriptionFacts(ls LocalSubscription, sub *stripe.Subscription) subscriptionFacts {
	f := subscriptionFacts{local: ls, sub: sub, status: redactKeys(string(sub.Status)),
		lp: phaseOf(ls.Status), sp: phaseOf(string(sub.Status)), end: SubscriptionPeriodEnd(sub)}
	f.cancelDiffers = f.sp != phaseEnded && f.sp != phaseUnknown && ls.CancelAtPeriodEnd != sub.CancelAtPeriodEnd
	// Paid-through is compared while Stripe bills. A past_due subscription's period has
	// already moved on unpaid, so a row behind it is right; only one ahead of it is drift.
	if !ls.PaidThrough.IsZero() && !f.end.IsZero() && f.sp == phaseBilling {
		f.ahead = ls.PaidThrough.Unix() > f.end.Unix()
		f.behind = ls.PaidThrough.Unix() < f.end.Unix() && sub.Status != stripe.SubscriptionStatusPastDue
	}
	return f
}

// subscriptionRules is the subscription policy, first match wins; the package doc gives each
// direction's reason. What needs a person comes before every repair, since
// ApplySubscriptionStatus writes all of Stripe's side and would erase what the person must see.
var subscriptionRules = []rule[subscriptionFacts]{
	{func(f *subscriptionFacts) bool { return f.lp == phaseUnknown || f.sp == phaseUnknown },
		func(f *subscriptionFacts) reconcile.Decision { return reconcile.Unexpected(f.local.Status, f.status) }},
	{func(f *subscriptionFacts) bool { return f.lp == phaseEnded && f.sp == phaseBilling },
		review(KindBillingWithoutAccess, func(f *subscriptionFacts) string {
			return fmt.Sprintf("the row ended the subscription (%s), Stripe still bills it (%s)", f.local.Status, f.status)
		})},
	{func(f *subscriptionFacts) bool { return f.lp == phaseEnded && f.sp != phaseEnded },
		review(KindEndedLocallyNotExternally, func(f *subscriptionFacts) string {
			return fmt.Sprintf("the row ended the subscription (%s), Stripe has not (%s) and may bill it again", f.local.Status, f.status)
		})},
	{func(f *subscriptionFacts) bool { return f.cancelDiffers && f.local.CancelAtPeriodEnd },
		review(KindCancellationMissingExternally, func(f *subscriptionFacts) string {
			d := fmt.Sprintf("the row cancels at period end, Stripe's %s subscription does not", f.status)
			if f.sp == phaseBilling {
				d += ": it renews at " + formatTime(f.end)
			}
			return d
		})},
	{func(f *subscriptionFacts) bool {
		return f.lp == phaseBilling && f.sub.Status == stripe.SubscriptionStatusCanceled
	},
		repair(KindSubscriptionCanceledExternally, CommandApplySubscriptionStatus, canceledDetail)},
	{func(f *subscriptionFacts) bool { return f.lp == phaseBilling && f.sp != phaseBilling },
		repair(KindAccessWithoutBilling, CommandApplySubscriptionStatus, func(f *subscriptionFacts) string {
			return fmt.Sprintf("the row grants access (%s), Stripe does not bill the subscription (%s)", f.local.Status, f.status)
		})},
	{func(f *subscriptionFacts) bool { return f.lp != phaseBilling && f.sp == phaseBilling },
		repair(KindMissedActivation, CommandApplySubscriptionStatus, func(f *subscriptionFacts) string {
			return fmt.Sprintf("Stripe bills the subscription (%s), the row grants no access (%s)", f.status, f.local.Status)
		})},
	{func(f *subscriptionFacts) bool { return f.local.Status != string(f.sub.Status) },
		repair(KindMissedStatusChange, CommandApplySubscriptionStatus, func(f *subscriptionFacts) string {
			return fmt.Sprintf("the row says %s, Stripe %s", f.local.Status, f.status)
		})},
	{func(f *subscriptionFacts) bool { return f.ahead },
		repair(KindPaidThroughAhead, CommandApplySubscriptionStatus, func(f *subscriptionFacts) string {
			return fmt.Sprintf("the row grants access through %s, Stripe's current period ends %s", formatTime(f.local.PaidThrough), formatTime(f.end))
		})},
	{func(f *subscriptionFacts) bool { return f.cancelDiffers },
		repair(KindCancellationScheduledExternally, CommandApplySubscriptionStatus, func(f *subscriptionFacts) string {
			return fmt.Sprintf("Stripe cancels the subscription at period end (%s), the row expects it to renew", formatTime(f.end))
		})},
	{func(f *subscriptionFacts) bool { return f.behind },
		repair(KindPaidThroughBehind, CommandApplySubscriptionStatus, func(f *subscriptionFacts) string {
			return fmt.Sprintf("Stripe's current period ends %s, the row records %s", formatTime(f.end), formatTime(f.local.PaidThrough))
		})},
}

// canceledDetail says when Stripe ended the subscription, and why if it says.
func canceledDetail(f *subscriptionFacts) string {
	d := fmt.Sprintf("the row grants access (%s), Stripe canceled the subscription", f.local.Status)
	if at := max(f.sub.EndedAt, f.sub.CanceledAt); at > 0 {
		d += " at " + formatTime(time.Unix(at, 0))
	}
	if cd := f.sub.CancellationDetails; cd != nil && cd.Reason != "" {
		d += ": " + redactKeys(string(cd.Reason))
	}
	return d
}

// diffs lists every field on which the two sides differ. cancel_at_period_end and the period
// are not compared once Stripe's subscription has ended, nor the period while it does not bill.
func (f *subscriptionFacts) diffs() []reconcile.Diff {
	var out diffList
	if f.local.Status != string(f.sub.Status) {
		out.add("status", f.local.Status, f.status)
	}
	if f.cancelDiffers {
		out.add("cancel_at_period_end", fmt.Sprint(f.local.CancelAtPeriodEnd), fmt.Sprint(f.sub.CancelAtPeriodEnd))
	}
	if f.ahead || f.behind {
		out.add("paid_through", formatTime(f.local.PaidThrough), formatTime(f.end))
	}
	return out
}
