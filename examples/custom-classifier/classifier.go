package main

import (
	"fmt"
	"strings"

	"github.com/reconcilekit/reconcile"
)

// Subscription is our row for a customer's subscription: what we sold.
type Subscription struct {
	// Status is "pending" (checkout started), "active" or "canceled".
	Status string
	// Seats is the number of seats we sold: our truth, which the provider must bill.
	Seats int
	// UnitPrice is the price per seat and month we agreed with the customer, in cents.
	UnitPrice int64
}

// Remote is the billing provider's subscription: what it bills.
type Remote struct {
	ID string `json:"id"`
	// Status is "incomplete", "active", "past_due" or "canceled". The provider collects the
	// money, so whether a subscription is live is its truth.
	Status     string `json:"status"`
	Quantity   int    `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// Finding kinds and repair commands of the subscriptions job.
const (
	KindMissedCancellation = "missed_cancellation"
	KindMissedActivation   = "missed_activation"
	KindSeatsUnderbilled   = "seats_underbilled"
	KindSeatsOverbilled    = "seats_overbilled"
	KindPriceMismatch      = "price_mismatch"
	KindBilledAfterCancel  = "billed_after_cancel"

	// CmdApplyCanceled and CmdApplyActivated make our row catch up with the provider.
	CmdApplyCanceled  = "ApplySubscriptionCanceled"
	CmdApplyActivated = "ApplySubscriptionActivated"
	// CmdPushSeats makes the provider catch up with our row: it sends the seats we sold.
	CmdPushSeats = "PushSeatCount"
)

// subscriptionRules is the policy, one line per case, first match wins. Statuses are compared
// by the rule table itself; seats and prices by When. Each side is the truth for its own part:
// the provider for whether a subscription is live (it collects the money), we for how many
// seats were sold. Where money may already have been taken wrongly, a person decides.
func subscriptionRules() []reconcile.Rule[Subscription, Remote] {
	active := []string{"active"}
	return []reconcile.Rule[Subscription, Remote]{
		{Local: []string{"canceled"}, External: []string{"canceled"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		// The provider canceled it (say, after failed payments) and the webhook got lost: we
		// catch up.
		{Local: active, External: []string{"canceled"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindMissedCancellation, Command: CmdApplyCanceled}},
		// We canceled it and the provider still bills the customer: money, a person decides.
		{Local: []string{"canceled"}, External: active,
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindBilledAfterCancel}},
		// The checkout is still completing at the provider: judge later.
		{Local: []string{"pending"}, External: []string{"incomplete"},
			Decision: reconcile.Decision{Verdict: reconcile.InFlight}},
		{Local: []string{"pending"}, External: active,
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindMissedActivation, Command: CmdApplyActivated}},
		// Both active: now the amounts. A price that differs is never fixed automatically.
		{Local: active, External: active, When: priceDiffers,
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindPriceMismatch}},
		// The provider bills more seats than we sold: the customer may be owed money.
		{Local: active, External: active, When: func(l Subscription, r Remote) bool { return r.Quantity > l.Seats },
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindSeatsOverbilled}},
		// The provider bills fewer seats than we sold: push our count.
		{Local: active, External: active, When: func(l Subscription, r Remote) bool { return r.Quantity < l.Seats },
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindSeatsUnderbilled, Command: CmdPushSeats}},
		{Local: active, External: active,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		// Anything else, such as active here and past_due there, is NeedsReview
		// "unexpected:active->past_due": the rule table's fallback.
	}
}

func priceDiffers(l Subscription, r Remote) bool { return l.UnitPrice != r.UnitAmount }

// Classifier wraps the rule table: the table decides on statuses and quantities, and the
// wrapper adds what the table cannot express, a Detail with the figures for the person who
// reads the finding, and state names that carry seats and price, so that findings, observations
// and repair commands record them (it is a reconcile.StateNamer, which reconcile.New uses).
type Classifier struct {
	table *reconcile.RuleTable[Subscription, Remote]
}

var (
	_ reconcile.Classifier[Subscription, Remote] = Classifier{}
	_ reconcile.StateNamer[Subscription, Remote] = Classifier{}
)

// NewClassifier returns the subscriptions classifier.
func NewClassifier() (Classifier, error) {
	table, err := reconcile.NewRuleTable(
		func(l Subscription) string { return l.Status },
		func(r Remote) string { return r.Status },
		subscriptionRules()...)
	if err != nil {
		return Classifier{}, err
	}
	return Classifier{table: table}, nil
}

// Classify returns the rule table's decision, with what differs in Detail when there is a
// finding. Like the table, it is pure.
func (c Classifier) Classify(l Subscription, r Remote) reconcile.Decision {
	d := c.table.Classify(l, r)
	if d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview {
		d.Detail = difference(l, r)
	}
	return d
}

// difference says what differs between the two sides, for the person reading the finding.
func difference(l Subscription, r Remote) string {
	var diffs []string
	if l.Status != r.Status {
		diffs = append(diffs, fmt.Sprintf("%s here, %s at the provider", l.Status, r.Status))
	}
	if l.Seats != r.Quantity {
		diffs = append(diffs, fmt.Sprintf("we sold %s, the provider bills %d", seats(l.Seats), r.Quantity))
	}
	if l.UnitPrice != r.UnitAmount {
		diffs = append(diffs, fmt.Sprintf("%s a seat here, %s at the provider", money(l.UnitPrice), money(r.UnitAmount)))
	}
	return strings.Join(diffs, "; ")
}

// LocalState names our side with its figures, such as "active, 12 seats at 9.00".
func (c Classifier) LocalState(l Subscription) string {
	return fmt.Sprintf("%s, %s at %s", l.Status, seats(l.Seats), money(l.UnitPrice))
}

// ExternalState names the provider's side the same way.
func (c Classifier) ExternalState(r Remote) string {
	return fmt.Sprintf("%s, %s at %s", r.Status, seats(r.Quantity), money(r.UnitAmount))
}

func seats(n int) string {
	if n == 1 {
		return "1 seat"
	}
	return fmt.Sprintf("%d seats", n)
}

// money formats cents as units, such as 9.00.
func money(cents int64) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }
