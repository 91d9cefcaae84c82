package main

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// A story is one way a payment row and its PaymentIntent can relate, together with what the
// reconciler must conclude about it. Each story is planted in a known number of rows, and the
// run ends by checking that the reconciler found exactly those.
type story struct {
	name  string
	share float64 // of all rows, at least one row; the first story gets the remainder

	local    string
	external stripe.PaymentIntentStatus // Stripe's status; unused when notFound
	// notFound: Stripe never saw the PaymentIntent id: stripetest does not hold it, so the
	// bulk list cannot show it and its retrieve is answered 404.
	notFound bool
	// unavailable: every retrieve of this row's PaymentIntent is answered 503, as in an outage.
	// The intent was created long before its row, outside the creation window the bulk fetch
	// lists, so only retrieves reach it.
	unavailable bool
	// recent: the row changed just now, inside the grace period.
	recent bool
	// later, if set, is the status the PaymentIntent moves to at Stripe after the sweep, with
	// the webhook lost on the way: the sweep finds the row in sync, and the events lane must
	// find the change (kind, command) long before the next cycle would.
	later stripe.PaymentIntentStatus
	// stripeOnly: no row refers to the PaymentIntent (our transaction rolled back after it was
	// created). The sweep starts from rows and cannot see it; the reverse scan, which starts
	// from Stripe, must report it.
	stripeOnly bool
	// young: a stripeOnly PaymentIntent created youngAge before the reverse scan runs, a
	// checkout under way whose row may not be committed yet. It is younger than the scan's
	// MinAge, so the scan must not report it.
	young bool
	// money is what differs in the payment's money, here or at Stripe, from a payment that
	// agrees on amount and currency and was never refunded or disputed.
	money money

	// verdict is the sweep's on the row; for a stripeOnly story, the reverse scan's on the
	// PaymentIntent (none for a young one, which the scan does not list).
	verdict reconcile.Verdict
	kind    string // the finding the reconciler must open, by whichever lane finds it; "" for none
	command string // the repair command it must queue; "" for none
}

// money is how a story's payment differs in its money, here or at Stripe.
type money struct {
	// currency is the row's currency, if not its PaymentIntent's, usd.
	currency string
	// amountOff is how much more the row's amount is than its PaymentIntent's, in minor units.
	amountOff int64
	// refunded is the share of the amount refunded at Stripe (1: all of it), in the Dashboard
	// or by another service: no webhook reached us, so the row records none.
	refunded float64
	// refundFails: the whole amount was refunded and the row recorded it; then the refund
	// fails at Stripe (the card was closed, say), after the sweep.
	refundFails bool
	// dispute is the status of a dispute on the payment's charge, of which the row knows
	// nothing.
	dispute stripe.DisputeStatus
	// afterSweep: the refund, its failure or the dispute happens at Stripe after the sweep,
	// its webhook lost: the sweep finds the payment in sync, and the events lane must find
	// the change. Without it, the change is there before the run begins, for the sweep.
	afterSweep bool
}

// finder returns the lane that must find the story's drift.
func (s *story) finder() string {
	switch {
	case s.stripeOnly:
		return laneReverse
	case s.later != "" || s.money.afterSweep:
		return laneEvents
	}
	return laneSweep
}

// laneVerdict is the verdict of the lane that finds the story's drift; for a story the events
// lane finds, the sweep's verdict (in the verdict field) is InSync.
func (s *story) laneVerdict() reconcile.Verdict {
	switch {
	case s.finder() != laneEvents:
		return s.verdict
	case s.command != "":
		return reconcile.Repairable
	}
	return reconcile.NeedsReview
}

const (
	paid    = stripepolicy.LocalPaid
	pending = stripepolicy.LocalPending
	failed  = stripepolicy.LocalFailed
)

// stories is the drift a payments table accumulates in real life, in realistic proportions.
var stories = []story{
	{name: "in sync: paid", local: paid, external: stripe.PaymentIntentStatusSucceeded,
		verdict: reconcile.InSync},
	{name: "in sync: failed", share: 0.08, local: failed, external: stripe.PaymentIntentStatusCanceled,
		verdict: reconcile.InSync},
	{name: "in sync: awaiting payment", share: 0.06, local: pending, external: stripe.PaymentIntentStatusRequiresPaymentMethod,
		verdict: reconcile.InSync},
	{name: "in flight: processing at Stripe", share: 0.04, local: pending, external: stripe.PaymentIntentStatusProcessing,
		verdict: reconcile.InFlight},
	{name: "missed success webhook", share: 0.06, local: pending, external: stripe.PaymentIntentStatusSucceeded,
		verdict: reconcile.Repairable, kind: stripepolicy.KindMissedSuccess, command: stripepolicy.CommandApplyPaymentSucceeded},
	{name: "missed cancel webhook", share: 0.03, local: pending, external: stripe.PaymentIntentStatusCanceled,
		verdict: reconcile.Repairable, kind: stripepolicy.KindMissedCancel, command: stripepolicy.CommandApplyPaymentCanceled},
	{name: "paid here, canceled at Stripe", share: 0.004, local: paid, external: stripe.PaymentIntentStatusCanceled,
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindPaidLocallyNotExternally},
	{name: "paid here, requires_action at Stripe", share: 0.003, local: paid, external: stripe.PaymentIntentStatusRequiresAction,
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindPaidLocallyNotExternally},
	// A customer retried after a failure and the retry succeeded: money taken for an order we
	// gave up on. Refund it or fulfil the order: a person decides.
	{name: "failed here, succeeded at Stripe", share: 0.002, local: failed, external: stripe.PaymentIntentStatusSucceeded,
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindFailedLocallyNotExternally},
	{name: "unknown to Stripe", share: 0.003, local: paid, notFound: true,
		verdict: reconcile.NeedsReview, kind: reconcile.KindMissingExternally},
	// The success webhook is being applied right now. The row looks like a missed success, but
	// it is inside the grace period, so it is InFlight and Stripe is not asked.
	{name: "changed in the last minute", share: 0.02, local: pending, external: stripe.PaymentIntentStatusSucceeded, recent: true,
		verdict: reconcile.InFlight},
	{name: "Stripe unavailable", share: 0.02, local: paid, external: stripe.PaymentIntentStatusSucceeded, unavailable: true,
		verdict: reconcile.Unverifiable},
	// Awaiting payment, and in sync when the sweep reads them; then the customer pays and the
	// success webhook is lost. The next cycle would find them hours later; the events lane
	// reads Stripe's event log and finds them within a minute.
	{name: "succeeds after the sweep, webhook lost", share: 0.003, local: pending,
		external: stripe.PaymentIntentStatusRequiresPaymentMethod, later: stripe.PaymentIntentStatusSucceeded,
		verdict: reconcile.InSync, kind: stripepolicy.KindMissedSuccess, command: stripepolicy.CommandApplyPaymentSucceeded},
	// Our transaction rolled back after the PaymentIntent was created, and the customer paid:
	// money taken for an order we do not have. The share is of the rows, but these stories
	// add PaymentIntents, not rows.
	{name: "only at Stripe", share: 0.003, external: stripe.PaymentIntentStatusSucceeded, stripeOnly: true,
		verdict: reconcile.NeedsReview, kind: reconcile.KindMissingLocally},
	// Share 0: exactly one.
	{name: "only at Stripe, created 2 minutes ago", external: stripe.PaymentIntentStatusRequiresPaymentMethod,
		stripeOnly: true, young: true},

	// The money: a status says nothing of it. A refunded payment, or one whose dispute was
	// lost, stays succeeded; each of these is InSync by status alone. A refund made at Stripe
	// is caught up here; everything else is a person's, who may have to charge again, refund,
	// answer the dispute or correct the order.
	{name: "partly refunded in the Dashboard", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{refunded: 0.5},
		verdict: reconcile.Repairable, kind: stripepolicy.KindMissedPartialRefund, command: stripepolicy.CommandApplyRefund},
	{name: "dispute lost", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{dispute: stripe.DisputeStatusLost},
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindDisputeLost},
	// The order was changed after checkout and the PaymentIntent was not updated.
	{name: "amount differs from Stripe's", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{amountOff: 100},
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindAmountMismatch},
	// The same number of minor units, in yen here and in cents at Stripe: the amounts agree and
	// the money does not. JPY has no minor unit, so 1000 is ¥1,000 and $10.00.
	{name: "JPY here, USD at Stripe", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{currency: "jpy"},
		verdict: reconcile.NeedsReview, kind: stripepolicy.KindCurrencyMismatch},
	{name: "Dashboard refund after the sweep", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{refunded: 1, afterSweep: true},
		verdict: reconcile.InSync, kind: stripepolicy.KindMissedRefund, command: stripepolicy.CommandApplyRefund},
	{name: "refund fails after the sweep", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{refunded: 1, refundFails: true, afterSweep: true},
		verdict: reconcile.InSync, kind: stripepolicy.KindRefundFailed},
	{name: "disputed after the sweep", share: 0.002, local: paid, external: stripe.PaymentIntentStatusSucceeded,
		money:   money{dispute: stripe.DisputeStatusNeedsResponse, afterSweep: true},
		verdict: reconcile.InSync, kind: stripepolicy.KindDisputeNeedsResponse},
}

// payment is one row to load, with the story it tells; in plan.stripeOnly, a PaymentIntent
// that no row refers to (no orderID, no updatedAgo, no intentAfter).
type payment struct {
	orderID    string
	externalID string // the PaymentIntent id
	amount     int64  // the row's, in the currency's minor unit
	// createdAgo and updatedAgo are measured back from the database's now(). createdAgo
	// decreases with the row's position: rows are created in id order, as in a real table, so
	// a batch of rows read in id order covers one stretch of time.
	createdAgo, updatedAgo time.Duration
	// intentAfter is how long after the row its PaymentIntent was created; negative is before.
	// Unused when the story is notFound.
	intentAfter time.Duration
	story       *story
	// refundID and disputeID are the refund and the dispute the fake Stripe made before the
	// run (newStripe), for a refund to fail after the sweep.
	refundID, disputeID string
}

// plan is the table's content: every row and how many rows tell each story, and the
// PaymentIntents no row refers to.
type plan struct {
	payments []payment // the rows, in id order
	// stripeOnly holds the PaymentIntents of the stripeOnly stories, which have no row; their
	// createdAgo is the intent's age (for a young one, when the reverse scan starts).
	stripeOnly []payment
	counts     []int // indexed like stories: rows, or PaymentIntents for a stripeOnly story
}

const (
	history     = 7 * 24 * time.Hour // created_at is spread over the past week, up to an hour ago
	quietBefore = 15 * time.Minute   // rows not in a recent story last changed before this
	// intentLag is the most a PaymentIntent is created after its row: the checkout creates the
	// order, then the intent. The gateway's bulk fetch finds intents within 5 minutes of their
	// rows' created_at.
	intentLag = 30 * time.Second
	// unavailableEarly is how long before its row the PaymentIntent of a "Stripe unavailable"
	// row was created. Every row was created within the last week and at least an hour ago, so
	// such an intent is older than every row (by more than the gateway's 5 minutes of skew) and
	// lies outside the list window of every batch, whatever -rows and -batch: the gateway must
	// retrieve it one by one, and that retrieve is the call that fails.
	unavailableEarly = history
	// youngAge is how old the young Stripe-only PaymentIntent is when the reverse scan starts:
	// younger than the scan's MinAge (stripeadapter.ObjectReverseOptions.MinAge, 10 minutes).
	youngAge = 2 * time.Minute
)

// newPlan deals the stories out over rows payments, in an order and with ids, amounts and times
// drawn from seed: the same seed gives the same table.
func newPlan(rows int, seed uint64) (plan, error) {
	counts := make([]int, len(stories))
	rest := rows
	for i := 1; i < len(stories); i++ {
		counts[i] = max(1, int(math.Round(stories[i].share*float64(rows))))
		if !stories[i].stripeOnly {
			rest -= counts[i]
		}
	}
	if rest < 1 {
		return plan{}, fmt.Errorf("payments: %d rows are too few to plant every story; use at least %d", rows, rows-rest+1)
	}
	counts[0] = rest

	rng := rand.New(rand.NewPCG(seed, 0))
	order := make([]*story, 0, rows)
	var stripeOnly []*story
	for i, n := range counts {
		for range n {
			if stories[i].stripeOnly {
				stripeOnly = append(stripeOnly, &stories[i])
			} else {
				order = append(order, &stories[i])
			}
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	p := plan{payments: make([]payment, rows), counts: counts}
	seen := make(map[string]bool, rows)
	// Row i is created in the i-th of rows equal slots of the past week (less its last hour),
	// in the first half of its slot: created_at strictly increases with the row id.
	slot := (history - time.Hour) / time.Duration(rows)
	for i, s := range order {
		id := paymentIntentID(rng)
		for seen[id] {
			id = paymentIntentID(rng)
		}
		seen[id] = true
		created := history - time.Duration(i)*slot - time.Duration(rng.Int64N(int64(max(1, slot/2))))
		updated := quietBefore + time.Duration(rng.Int64N(int64(created-quietBefore)))
		if s.recent {
			updated = 0
		}
		after := time.Duration(rng.Int64N(int64(intentLag) + 1))
		if s.unavailable {
			after = -unavailableEarly
		}
		p.payments[i] = payment{
			orderID:     fmt.Sprintf("ord_%06d", i+1),
			externalID:  id,
			amount:      100 * (5 + rng.Int64N(500)), // $5 to $504
			createdAgo:  created,
			updatedAgo:  updated,
			intentAfter: after,
			story:       s,
		}
	}
	// The Stripe-only PaymentIntents were created within the week, at least an hour before the
	// run, well inside the reverse scan's window and past its grace; the young one just now.
	for _, s := range stripeOnly {
		id := paymentIntentID(rng)
		for seen[id] {
			id = paymentIntentID(rng)
		}
		seen[id] = true
		created := time.Hour + time.Duration(rng.Int64N(int64(history-2*time.Hour)))
		if s.young {
			created = youngAge
		}
		p.stripeOnly = append(p.stripeOnly, payment{
			externalID: id,
			amount:     100 * (5 + rng.Int64N(500)),
			createdAgo: created,
			story:      s,
		})
	}
	return p, nil
}

// paymentIntentID returns an id shaped like Stripe's: "pi_" and 24 letters and digits.
func paymentIntentID(rng *rand.Rand) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte("pi_")
	for range 24 {
		b = append(b, alphabet[rng.IntN(len(alphabet))])
	}
	return string(b)
}

// currency is the row's currency.
func (pay payment) currency() string {
	return cmp.Or(pay.story.money.currency, string(stripe.CurrencyUSD))
}

// intentAmount is the amount of the row's PaymentIntent.
func (pay payment) intentAmount() int64 {
	return pay.amount - pay.story.money.amountOff
}

// refund is the amount refunded at Stripe, in its PaymentIntent's currency: a share of its amount.
func (pay payment) refund() int64 {
	return int64(math.Round(pay.story.money.refunded * float64(pay.intentAmount())))
}

// refundedHere is the amount the row records as refunded when it is loaded.
func (pay payment) refundedHere() int64 {
	if pay.story.money.refundFails {
		return pay.refund()
	}
	return 0
}

// where returns the payments (rows) whose story satisfies pred.
func (p plan) where(pred func(*story) bool) []payment {
	var out []payment
	for _, pay := range p.payments {
		if pred(pay.story) {
			out = append(out, pay)
		}
	}
	return out
}

// lateWebhook is the payment whose success webhook arrives late, after the lanes: one of the
// missed successes the sweep finds.
func (p plan) lateWebhook() payment {
	return p.where(func(s *story) bool {
		return s.command == stripepolicy.CommandApplyPaymentSucceeded && s.finder() == laneSweep
	})[0]
}

// orphans returns the ids of the Stripe-only PaymentIntents the reverse scan must report: all
// but the young one.
func (p plan) orphans() []string {
	var ids []string
	for _, pay := range p.stripeOnly {
		if !pay.story.young {
			ids = append(ids, pay.externalID)
		}
	}
	return ids
}
