package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile"
)

// plant is one subscription of the demo: our row, the provider's object, what went wrong, and
// what the checks expect of each cycle.
type plant struct {
	Key    int64
	Ours   Subscription
	Theirs Remote // the zero Remote: the provider never created it
	// ChangedNow puts our row inside the grace period, ReadsFail makes the provider answer 503
	// to every read of it, LoseFirstAnswer loses the answer to its first seat update.
	ChangedNow, ReadsFail, LoseFirstAnswer bool
	// First and Second are the verdicts expected in the cycle before and after the repairs;
	// Kind the finding expected in the first.
	First, Second reconcile.Verdict
	Kind          string
}

// subID is the provider's id of a plant's subscription.
func (p plant) subID() string { return fmt.Sprintf("sub_%d", 1000+p.Key) }

// plants returns the demo's subscriptions. Prices are in cents per seat and month.
func plants() []plant {
	const price = 900
	active := func(seats int) Subscription { return Subscription{Status: "active", Seats: seats, UnitPrice: price} }
	remote := func(status string, seats int, unit int64) Remote {
		return Remote{Status: status, Quantity: seats, UnitAmount: unit}
	}
	const (
		inSync, inFlight, repairable = reconcile.InSync, reconcile.InFlight, reconcile.Repairable
		review, unverifiable         = reconcile.NeedsReview, reconcile.Unverifiable
	)
	return []plant{
		{Key: 1, Ours: active(10), Theirs: remote("active", 10, price), First: inSync, Second: inSync},
		// Two seats sold in our app; the update to the provider never went out.
		{Key: 2, Ours: active(12), Theirs: remote("active", 10, price), First: repairable, Kind: KindSeatsUnderbilled, Second: inSync},
		// Seats added in the provider's portal that we never sold.
		{Key: 3, Ours: active(5), Theirs: remote("active", 8, price), First: review, Kind: KindSeatsOverbilled, Second: review},
		// A discount set by hand at the provider.
		{Key: 4, Ours: active(20), Theirs: remote("active", 20, 750), First: review, Kind: KindPriceMismatch, Second: review},
		// Canceled by the provider after failed payments; the webhook was lost.
		{Key: 5, Ours: active(3), Theirs: remote("canceled", 3, price), First: repairable, Kind: KindMissedCancellation, Second: inSync},
		// Canceled here; the provider still bills the customer.
		{Key: 6, Ours: Subscription{Status: "canceled", Seats: 4, UnitPrice: price}, Theirs: remote("active", 4, price),
			First: review, Kind: KindBilledAfterCancel, Second: review},
		// Checkout completed; the webhook was lost.
		{Key: 7, Ours: Subscription{Status: "pending", Seats: 6, UnitPrice: price}, Theirs: remote("active", 6, price),
			First: repairable, Kind: KindMissedActivation, Second: inSync},
		// Checkout still completing at the provider.
		{Key: 8, Ours: Subscription{Status: "pending", Seats: 2, UnitPrice: price}, Theirs: remote("incomplete", 2, price),
			First: inFlight, Second: inFlight},
		// Payments failing at the provider: no rule covers it.
		{Key: 9, Ours: active(8), Theirs: remote("past_due", 8, price), First: review, Kind: "unexpected:active->past_due", Second: review},
		// Never created at the provider.
		{Key: 10, Ours: active(1), First: review, Kind: reconcile.KindMissingExternally, Second: review},
		// The provider fails every read of it.
		{Key: 11, Ours: active(9), Theirs: remote("active", 9, price), ReadsFail: true, First: unverifiable, Second: unverifiable},
		// Changed a minute ago: judged later.
		{Key: 12, Ours: active(7), Theirs: remote("active", 7, price), ChangedNow: true, First: inFlight, Second: inSync},
		// Like 2; the provider applies the first push but its answer is lost on the way back.
		{Key: 13, Ours: active(4), Theirs: remote("active", 2, price), LoseFirstAnswer: true,
			First: repairable, Kind: KindSeatsUnderbilled, Second: inSync},
	}
}

// clock is the store's clock, moved by hand so that the grace period and the output are the
// same on every run.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
