package stripepolicy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// subRow is a host's own subscriptions row, seen by the policy through its view.
type subRow struct {
	status      string
	cancel      bool
	paidThrough time.Time
}

func subView(r subRow) stripepolicy.LocalSubscription {
	return stripepolicy.LocalSubscription{Status: r.status, CancelAtPeriodEnd: r.cancel, PaidThrough: r.paidThrough}
}

// periodEnd is the latest period end of the subscriptions the tests build; an earlier item
// ends a day before it, so that the policy must take the latest.
var periodEnd = time.Date(2026, 4, 1, 9, 30, 0, 0, time.UTC)

func subscription(status stripe.SubscriptionStatus, cancel bool) *stripe.Subscription {
	return &stripe.Subscription{ID: "sub_1", Status: status, CancelAtPeriodEnd: cancel, Items: &stripe.SubscriptionItemList{
		Data: []*stripe.SubscriptionItem{
			{ID: "si_2", CurrentPeriodEnd: periodEnd.Add(-24 * time.Hour).Unix()},
			{ID: "si_1", CurrentPeriodEnd: periodEnd.Unix()},
		}}}
}

var subStatuses = []stripe.SubscriptionStatus{"incomplete", "incomplete_expired", "trialing", "active", "past_due", "canceled", "unpaid", "paused"}

func repairSub(kind string) reconcile.Decision {
	return reconcile.Decision{Verdict: reconcile.Repairable, Kind: kind, Command: "ApplySubscriptionStatus"}
}

func reviewKind(kind string) reconcile.Decision {
	return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: kind}
}

// checkDecision compares what matters of a decision: verdict, kind, command and diffs, and
// that it validates and its detail says what it must.
func checkDecision(t *testing.T, got, want reconcile.Decision, wantDiffs []reconcile.Diff, detail string) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Fatalf("invalid decision %+v: %v", got, err)
	}
	if got.Verdict != want.Verdict || got.Kind != want.Kind || got.Command != want.Command {
		t.Fatalf("got %s %q %q, want %s %q %q (detail %q)", got.Verdict, got.Kind, got.Command, want.Verdict, want.Kind, want.Command, got.Detail)
	}
	if d := cmp.Diff(wantDiffs, got.Diffs); d != "" {
		t.Errorf("diffs (-want +got):\n%s", d)
	}
	if !strings.Contains(got.Detail, detail) {
		t.Errorf("detail %q does not say %q", got.Detail, detail)
	}
}

func TestSubscriptionPolicyCoversEveryStatusPair(t *testing.T) {
	var (
		sync      = inSync
		canceled  = repairSub("subscription_canceled_externally")
		noBilling = repairSub("access_without_billing")
		activated = repairSub("missed_activation")
		changed   = repairSub("missed_status_change")
		billed    = reviewKind("billing_without_access")
		ended     = reviewKind("ended_locally_not_externally")
	)
	// Written out by hand from the policy table in the package doc, not derived from the
	// rules: the row's status down, Stripe's across, in the order of subStatuses.
	matrix := map[string][8]reconcile.Decision{
		//                     incomplete  inc_expired trialing   active     past_due   canceled  unpaid     paused
		"incomplete":         {sync, changed, activated, activated, activated, changed, changed, changed},
		"incomplete_expired": {ended, sync, billed, billed, billed, changed, ended, ended},
		"trialing":           {noBilling, noBilling, sync, changed, changed, canceled, noBilling, noBilling},
		"active":             {noBilling, noBilling, changed, sync, changed, canceled, noBilling, noBilling},
		"past_due":           {noBilling, noBilling, changed, changed, sync, canceled, noBilling, noBilling},
		"canceled":           {ended, changed, billed, billed, billed, sync, ended, ended},
		"unpaid":             {changed, changed, activated, activated, activated, changed, sync, changed},
		"paused":             {changed, changed, activated, activated, activated, changed, changed, sync},
	}
	policy := stripepolicy.SubscriptionPolicy(subView)
	for _, local := range subStatuses {
		for i, ext := range subStatuses {
			want := matrix[string(local)][i]
			var diffs []reconcile.Diff
			if local != ext {
				diffs = []reconcile.Diff{diff("status", string(local), string(ext))}
			}
			t.Run(string(local)+" against "+string(ext), func(t *testing.T) {
				got := policy.Classify(subRow{status: string(local), paidThrough: periodEnd}, subscription(ext, false))
				checkDecision(t, got, want, diffs, "")
			})
		}
	}
}

func TestSubscriptionPolicyComparesCancellationAndPaidThrough(t *testing.T) {
	var (
		sync      = inSync
		ahead     = repairSub("paid_through_ahead")
		behind    = repairSub("paid_through_behind")
		scheduled = repairSub("cancellation_scheduled_externally")
		missing   = reviewKind("cancellation_missing_externally")
	)
	aheadBy1s, behindByDay := periodEnd.Add(time.Second), periodEnd.Add(-24*time.Hour)
	aheadDiff := diff("paid_through", "2026-04-01T09:30:01Z", "2026-04-01T09:30:00Z")
	behindDiff := diff("paid_through", "2026-03-31T09:30:00Z", "2026-04-01T09:30:00Z")
	stripeCancels := diff("cancel_at_period_end", "false", "true")
	rowCancels := diff("cancel_at_period_end", "true", "false")

	// outcome is what one case decides for one group of statuses, with its diffs.
	type outcome struct {
		want  reconcile.Decision
		diffs []reconcile.Diff
	}
	none := outcome{want: sync}
	// Each case gives its outcome for the statuses that grant access (trialing, active), for
	// past_due (whose period moved on unpaid), for those that do not bill (incomplete, unpaid,
	// paused) and for the ended ones (canceled, incomplete_expired). Both sides have the same
	// status. Written by hand from the package doc's table.
	cases := []struct {
		name                         string
		row                          subRow
		stripeCancels, noItems       bool
		billing, pastDue, idle, done outcome
		detail                       string // said by the billing outcome's detail
	}{
		{name: "the row agrees", row: subRow{paidThrough: periodEnd}, billing: none, pastDue: none, idle: none, done: none},
		{name: "the row is paid through a second past the period",
			row:     subRow{paidThrough: aheadBy1s},
			billing: outcome{ahead, []reconcile.Diff{aheadDiff}}, pastDue: outcome{ahead, []reconcile.Diff{aheadDiff}}, idle: none, done: none,
			detail: "the row grants access through 2026-04-01T09:30:01Z, Stripe's current period ends 2026-04-01T09:30:00Z"},
		{name: "the row is paid through a day before the period ends",
			row:     subRow{paidThrough: behindByDay},
			billing: outcome{behind, []reconcile.Diff{behindDiff}}, pastDue: none, idle: none, done: none,
			detail: "Stripe's current period ends 2026-04-01T09:30:00Z, the row records 2026-03-31T09:30:00Z"},
		{name: "the row keeps no paid-through time", row: subRow{}, billing: none, pastDue: none, idle: none, done: none},
		{name: "Stripe's subscription has no items", row: subRow{paidThrough: aheadBy1s}, noItems: true, billing: none, pastDue: none, idle: none, done: none},
		{name: "the row's paid-through time is within the period's last second",
			row: subRow{paidThrough: periodEnd.Add(999 * time.Millisecond)}, billing: none, pastDue: none, idle: none, done: none},
		{name: "the row's paid-through time is the period's end in another zone",
			row: subRow{paidThrough: periodEnd.In(time.FixedZone("UTC+9", 9*3600))}, billing: none, pastDue: none, idle: none, done: none},
		{name: "Stripe cancels at period end, the row expects a renewal",
			row: subRow{paidThrough: periodEnd}, stripeCancels: true,
			billing: outcome{scheduled, []reconcile.Diff{stripeCancels}}, pastDue: outcome{scheduled, []reconcile.Diff{stripeCancels}},
			idle: outcome{scheduled, []reconcile.Diff{stripeCancels}}, done: none,
			detail: "Stripe cancels the subscription at period end (2026-04-01T09:30:00Z)"},
		{name: "the row cancels at period end, Stripe will renew",
			row:     subRow{cancel: true, paidThrough: periodEnd},
			billing: outcome{missing, []reconcile.Diff{rowCancels}}, pastDue: outcome{missing, []reconcile.Diff{rowCancels}},
			idle: outcome{missing, []reconcile.Diff{rowCancels}}, done: none,
			detail: "it renews at 2026-04-01T09:30:00Z"},
		{name: "a cancellation Stripe lacks comes before a paid-through time ahead",
			row:     subRow{cancel: true, paidThrough: aheadBy1s},
			billing: outcome{missing, []reconcile.Diff{rowCancels, aheadDiff}}, pastDue: outcome{missing, []reconcile.Diff{rowCancels, aheadDiff}},
			idle: outcome{missing, []reconcile.Diff{rowCancels}}, done: none},
		{name: "a paid-through time ahead comes before a cancellation scheduled at Stripe",
			row: subRow{paidThrough: aheadBy1s}, stripeCancels: true,
			billing: outcome{ahead, []reconcile.Diff{stripeCancels, aheadDiff}}, pastDue: outcome{ahead, []reconcile.Diff{stripeCancels, aheadDiff}},
			idle: outcome{scheduled, []reconcile.Diff{stripeCancels}}, done: none},
		{name: "a cancellation scheduled at Stripe comes before a paid-through time behind",
			row: subRow{paidThrough: behindByDay}, stripeCancels: true,
			billing: outcome{scheduled, []reconcile.Diff{stripeCancels, behindDiff}}, pastDue: outcome{scheduled, []reconcile.Diff{stripeCancels}},
			idle: outcome{scheduled, []reconcile.Diff{stripeCancels}}, done: none},
	}
	policy := stripepolicy.SubscriptionPolicy(subView)
	for _, c := range cases {
		for _, status := range subStatuses {
			var o outcome
			switch status {
			case "trialing", "active":
				o = c.billing
			case "past_due":
				o = c.pastDue
			case "incomplete", "unpaid", "paused":
				o = c.idle
			default:
				o = c.done
			}
			t.Run(string(status)+": "+c.name, func(t *testing.T) {
				row := c.row
				row.status = string(status)
				sub := subscription(status, c.stripeCancels)
				if c.noItems {
					sub.Items = nil
				}
				detail := ""
				if status == "active" {
					detail = c.detail
				}
				checkDecision(t, policy.Classify(row, sub), o.want, o.diffs, detail)
			})
		}
	}
}

// Where a status change and a difference in the details meet, the table's order decides:
// what needs a person first, since the repair command writes all of Stripe's side.
func TestSubscriptionPolicyDecidesInTheTablesOrder(t *testing.T) {
	canceledAt := time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		row    subRow
		sub    *stripe.Subscription
		want   reconcile.Decision
		diffs  []reconcile.Diff
		detail string
	}{
		{name: "a subscription canceled at Stripe, with its reason",
			row: subRow{status: "active", paidThrough: periodEnd},
			sub: func() *stripe.Subscription {
				s := subscription("canceled", false)
				s.CanceledAt, s.EndedAt = canceledAt.Unix(), canceledAt.Unix()
				s.CancellationDetails = &stripe.SubscriptionCancellationDetails{Reason: "payment_failed"}
				return s
			}(),
			want: repairSub("subscription_canceled_externally"), diffs: []reconcile.Diff{diff("status", "active", "canceled")},
			detail: "the row grants access (active), Stripe canceled the subscription at 2026-03-14T08:00:00Z: payment_failed"},
		{name: "a subscription canceled at period end as the row expected",
			row:  subRow{status: "active", cancel: true, paidThrough: periodEnd},
			sub:  subscription("canceled", true),
			want: repairSub("subscription_canceled_externally"), diffs: []reconcile.Diff{diff("status", "active", "canceled")}},
		{name: "a cancellation Stripe lacks comes before a missed past_due",
			row:    subRow{status: "active", cancel: true, paidThrough: periodEnd},
			sub:    subscription("past_due", false),
			want:   reviewKind("cancellation_missing_externally"),
			diffs:  []reconcile.Diff{diff("status", "active", "past_due"), diff("cancel_at_period_end", "true", "false")},
			detail: "the row cancels at period end, Stripe's past_due subscription does not"},
		{name: "access without billing comes before a cancellation scheduled at Stripe",
			row:    subRow{status: "active", paidThrough: periodEnd},
			sub:    subscription("unpaid", true),
			want:   repairSub("access_without_billing"),
			diffs:  []reconcile.Diff{diff("status", "active", "unpaid"), diff("cancel_at_period_end", "false", "true")},
			detail: "the row grants access (active), Stripe does not bill the subscription (unpaid)"},
		{name: "a missed activation names the paid-through time Stripe moved on",
			row:    subRow{status: "incomplete", paidThrough: behindDayOf(periodEnd)},
			sub:    subscription("active", false),
			want:   repairSub("missed_activation"),
			diffs:  []reconcile.Diff{diff("status", "incomplete", "active"), diff("paid_through", "2026-03-31T09:30:00Z", "2026-04-01T09:30:00Z")},
			detail: "Stripe bills the subscription (active), the row grants no access (incomplete)"},
		{name: "billing without access comes before a cancellation Stripe lacks",
			row:    subRow{status: "canceled", cancel: true, paidThrough: periodEnd},
			sub:    subscription("active", false),
			want:   reviewKind("billing_without_access"),
			diffs:  []reconcile.Diff{diff("status", "canceled", "active"), diff("cancel_at_period_end", "true", "false")},
			detail: "the row ended the subscription (canceled), Stripe still bills it (active)"},
		{name: "a status nobody knows",
			row: subRow{status: "active"}, sub: subscription("suspended", false),
			want: reviewKind("unexpected:active->suspended"), diffs: []reconcile.Diff{diff("status", "active", "suspended")}},
		{name: "a local status in capitals is not Stripe's",
			row: subRow{status: "ACTIVE"}, sub: subscription("active", false),
			want: reviewKind("unexpected:ACTIVE->active"), diffs: []reconcile.Diff{diff("status", "ACTIVE", "active")}},
		{name: "an empty local status",
			row: subRow{}, sub: subscription("canceled", false),
			want: reviewKind("unexpected:->canceled"), diffs: []reconcile.Diff{diff("status", "", "canceled")}},
	}
	policy := stripepolicy.SubscriptionPolicy(subView)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, policy.Classify(tt.row, tt.sub), tt.want, tt.diffs, tt.detail)
		})
	}
}

func behindDayOf(t time.Time) time.Time { return t.Add(-24 * time.Hour) }

func TestSubscriptionPolicyNamesStatesAndHandlesNoSubscription(t *testing.T) {
	policy := stripepolicy.SubscriptionPolicy(subView)
	namer, ok := any(policy).(reconcile.StateNamer[subRow, *stripe.Subscription])
	if !ok {
		t.Fatal("the subscription policy is not a StateNamer")
	}
	if got := namer.LocalState(subRow{status: "active"}); got != "active" {
		t.Errorf("LocalState = %q, want active", got)
	}
	sub := subscription("past_due", false)
	if got := namer.ExternalState(sub); got != "past_due" {
		t.Errorf("ExternalState = %q, want past_due", got)
	}
	sub.Status = "sk_live_abcdefgh12345678"
	if got := namer.ExternalState(sub); strings.Contains(got, "sk_live") {
		t.Errorf("ExternalState %q holds a key", got)
	}
	if got := policy.Classify(subRow{status: "active"}, sub); strings.Contains(got.Kind+got.Detail+fmt.Sprint(got.Diffs), "sk_live") {
		t.Errorf("a decision holds a key: %+v", got)
	}
	if got, want := namer.ExternalState(nil), ""; got != want {
		t.Errorf("ExternalState(nil) = %q", got)
	}
	if got, want := policy.Classify(subRow{status: "active"}, nil), reconcile.Unexpected("active", ""); !cmp.Equal(got, want) {
		t.Errorf("Classify(active, nil) = %+v, want %+v", got, want)
	}
}

func TestSubscriptionPeriodEndIsTheLatestItemsEnd(t *testing.T) {
	if got := stripepolicy.SubscriptionPeriodEnd(subscription("active", false)); !got.Equal(periodEnd) || got.Location() != time.UTC {
		t.Errorf("SubscriptionPeriodEnd = %v, want %v in UTC", got, periodEnd)
	}
	for _, sub := range []*stripe.Subscription{nil, {}, {Items: &stripe.SubscriptionItemList{}}, {Items: &stripe.SubscriptionItemList{Data: []*stripe.SubscriptionItem{nil, {}}}}} {
		if got := stripepolicy.SubscriptionPeriodEnd(sub); !got.IsZero() {
			t.Errorf("SubscriptionPeriodEnd(%+v) = %v, want the zero time", sub, got)
		}
	}
}
