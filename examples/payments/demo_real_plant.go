package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Stripe's test payment methods, which make a test PaymentIntent end where a story needs it.
const (
	pmVisa         = "pm_card_visa"                   // succeeds
	pmAuthRequired = "pm_card_authenticationRequired" // needs 3D Secure: requires_action
)

// recipe is how the PaymentIntent of a story is made in test mode.
type recipe struct {
	// paymentMethod, if set, is the test payment method the intent is confirmed with when it
	// is created; without one it stays requires_payment_method.
	paymentMethod string
	cancel        bool // canceled once created
	// refund: refunded (a share of it, as the story says) once created, or after the sweep.
	refund bool
	made   string // how, in words
}

// recipeOf returns how s's PaymentIntent is made in test mode, or why it cannot be.
func recipeOf(s *story) (r recipe, cannot string) {
	switch {
	case s.unavailable:
		return recipe{}, "an outage cannot be ordered"
	case s.notFound:
		return recipe{made: "no PaymentIntent: the row has a pi_ id Stripe never issued"}, ""
	case s.young:
		return recipe{made: "created, not confirmed, just before the reverse scan"}, ""
	case s.later == stripe.PaymentIntentStatusSucceeded && s.external == stripe.PaymentIntentStatusRequiresPaymentMethod:
		return recipe{made: "created, not confirmed; confirmed with " + pmVisa + " after the sweep"}, ""
	case s.later != "":
		return recipe{}, fmt.Sprintf("no recipe moves a PaymentIntent from %s to %s", s.external, s.later)
	case s.money.dispute != "":
		// pm_card_createDispute would, a moment after the charge, and evidence decides its fate later.
		return recipe{}, "Stripe opens a test dispute on its own time, not when the run needs it"
	case s.money.refundFails:
		// pm_card_refundFail's refunds fail a while after they succeed.
		return recipe{}, "a test refund fails on Stripe's own time, not when the run needs it"
	case s.money.refunded > 0 && s.money.afterSweep:
		return recipe{paymentMethod: pmVisa, refund: true, made: "created with " + pmVisa + ", confirm=true; refunded after the sweep"}, ""
	case s.money.refunded > 0:
		return recipe{paymentMethod: pmVisa, refund: true,
			made: fmt.Sprintf("created with %s, confirm=true, %.0f%% refunded", pmVisa, 100*s.money.refunded)}, ""
	}
	switch s.external {
	case stripe.PaymentIntentStatusSucceeded:
		return recipe{paymentMethod: pmVisa, made: "created with " + pmVisa + ", confirm=true"}, ""
	case stripe.PaymentIntentStatusRequiresAction:
		return recipe{paymentMethod: pmAuthRequired, made: "created with " + pmAuthRequired + ", confirm=true"}, ""
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		return recipe{made: "created, not confirmed"}, ""
	case stripe.PaymentIntentStatusCanceled:
		return recipe{cancel: true, made: "created, then canceled"}, ""
	case stripe.PaymentIntentStatusProcessing:
		return recipe{}, "no test card stays processing"
	}
	return recipe{}, fmt.Sprintf("no recipe makes a %s PaymentIntent", s.external)
}

// leftOut is a story real mode cannot plant, and why.
type leftOut struct {
	story  *story
	rows   int // planted as the first story's instead
	cannot string
}

// realPlan is newPlan for real mode: the rows of the stories no test payment method can make
// are planted as the first story's (in sync: paid) instead, so that -rows still counts the
// rows; and rows not in a recent story last changed realUpdatedAgo ago.
func realPlan(rows int, seed uint64) (plan, []leftOut, error) {
	p, err := newPlan(rows, seed)
	if err != nil {
		return p, nil, err
	}
	var left []leftOut
	at := map[*story]int{}
	for i := range stories {
		s := &stories[i]
		if _, cannot := recipeOf(s); cannot != "" {
			if s.stripeOnly {
				return p, nil, fmt.Errorf("payments: real mode cannot plant %q: %s", s.name, cannot)
			}
			at[s] = len(left)
			left = append(left, leftOut{story: s, rows: p.counts[i], cannot: cannot})
			p.counts[0] += p.counts[i]
			p.counts[i] = 0
		}
	}
	for i := range p.payments {
		pay := &p.payments[i]
		if _, ok := at[pay.story]; ok {
			pay.story = &stories[0]
			pay.intentAfter = min(max(pay.intentAfter, 0), intentLag)
		}
		if !pay.story.recent {
			pay.updatedAgo = realUpdatedAgo
		}
	}
	return p, left, nil
}

// insertPaymentsAt is insertPayments with each row's created_at given ($5), in real mode that
// of its PaymentIntent at Stripe.
const insertPaymentsAt = `
INSERT INTO reconcile_demo.payments (order_id, external_id, status, amount, created_at, updated_at, currency, amount_refunded)
SELECT o, e, s, a, c, now() - make_interval(secs => u), cur, r
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[], $6::float8[], $7::text[], $8::bigint[])
	WITH ORDINALITY AS t(o, e, s, a, c, u, cur, r, n)
ORDER BY n
RETURNING external_id, created_at`

// plantWorkers is how many PaymentIntents the planting makes at once; the limiter sets the pace.
const plantWorkers = 8

// made is a PaymentIntent as Stripe made it.
type made struct {
	id      string
	created time.Time
	status  stripe.PaymentIntentStatus
}

// plant creates at Stripe the PaymentIntent of every row of p but those unknown to Stripe, and
// the PaymentIntents only at Stripe but the young one, several at a time, paced by the limiter.
// It gives p's payments (whose arrays it shares with the caller) the ids Stripe gave them, and
// returns the rows' created_at: their intent's created time, less how long before it the row
// was created. Every status is checked against the story's, but at stripe-mock.
func (rs *realStripe) plant(ctx context.Context, p plan) ([]time.Time, error) {
	var todo []*payment
	for i := range p.payments {
		if !p.payments[i].story.notFound {
			todo = append(todo, &p.payments[i])
		}
	}
	for i := range p.stripeOnly {
		if !p.stripeOnly[i].story.young {
			todo = append(todo, &p.stripeOnly[i])
		}
	}
	intents, err := rs.makeAll(ctx, todo)
	if err != nil {
		return nil, err
	}
	rs.plantedAt = time.Now()
	byRow := make(map[*payment]made, len(todo))
	for i, pay := range todo {
		byRow[pay] = intents[i]
		pay.externalID = intents[i].id
		if pay.story.stripeOnly && intents[i].created.After(rs.newestOrphan) {
			rs.newestOrphan = intents[i].created
		}
	}
	createdAt := make([]time.Time, len(p.payments))
	for i := range p.payments {
		pay := &p.payments[i]
		if m, ok := byRow[pay]; ok {
			createdAt[i] = m.created.Add(-pay.intentAfter)
		} else {
			createdAt[i] = rs.plantedAt // when our checkout created a row whose intent Stripe never saw
		}
	}
	return createdAt, nil
}

// makeAll makes the PaymentIntent of each of pays, plantWorkers at a time, and returns them in
// the order of pays. The first failure stops the rest.
func (rs *realStripe) makeAll(ctx context.Context, pays []*payment) ([]made, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	intents := make([]made, len(pays))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(plantWorkers, len(pays)) {
		wg.Go(func() {
			for i := range next {
				m, err := rs.create(ctx, pays[i])
				if err != nil {
					cancel(err)
					continue
				}
				intents[i] = m
			}
		})
	}
feed:
	for i := range pays {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return intents, nil
}

// create makes pay's PaymentIntent as its story's recipe says, with the run's metadata and an
// idempotency key per call, so that a call stripe-go retries acts once.
func (rs *realStripe) create(ctx context.Context, pay *payment) (made, error) {
	r, cannot := recipeOf(pay.story)
	if cannot != "" {
		return made{}, fmt.Errorf("payments: real mode cannot plant %q: %s", pay.story.name, cannot)
	}
	params := &stripe.PaymentIntentCreateParams{
		Amount:             stripe.Int64(pay.intentAmount()),
		Currency:           stripe.String(string(stripe.CurrencyUSD)),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
	}
	params.AddMetadata(metadataKey, rs.runID)
	if pay.orderID != "" {
		params.AddMetadata("order_id", pay.orderID)
	}
	if r.paymentMethod != "" {
		params.PaymentMethod = stripe.String(r.paymentMethod)
		params.Confirm = stripe.Bool(true)
	}
	// The plan's id is unique within the run, and the run id across runs.
	params.SetIdempotencyKey(rs.idempotencyKey(pay.externalID, "create"))
	if err := rs.limiter.Wait(ctx); err != nil {
		return made{}, err
	}
	rs.creates.Add(1)
	pi, err := rs.sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return made{}, rs.failed(ctx, fmt.Sprintf("create the PaymentIntent of %q", pay.story.name), err)
	}
	if r.cancel {
		cp := &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String(string(stripe.PaymentIntentCancellationReasonAbandoned))}
		cp.SetIdempotencyKey(rs.idempotencyKey(pi.ID, "cancel"))
		if err := rs.limiter.Wait(ctx); err != nil {
			return made{}, err
		}
		rs.cancels.Add(1)
		id := pi.ID
		if pi, err = rs.sc.V1PaymentIntents.Cancel(ctx, id, cp); err != nil {
			return made{}, rs.failed(ctx, "cancel "+id, err)
		}
	}
	if r.refund && !pay.story.money.afterSweep {
		if err := rs.refund(ctx, pi.ID, pay.refund()); err != nil {
			return made{}, err
		}
	}
	m := made{id: pi.ID, created: time.Unix(pi.Created, 0), status: pi.Status}
	return m, rs.checkStatus(pay.story, m.id, m.status, pay.story.external)
}

// refund refunds amount of the PaymentIntent id, as a person would in the Dashboard.
func (rs *realStripe) refund(ctx context.Context, id string, amount int64) error {
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(id), Amount: stripe.Int64(amount)}
	params.SetIdempotencyKey(rs.idempotencyKey(id, "refund"))
	if err := rs.limiter.Wait(ctx); err != nil {
		return err
	}
	rs.refunds.Add(1)
	if _, err := rs.sc.V1Refunds.Create(ctx, params); err != nil {
		return rs.failed(ctx, "refund "+id, err)
	}
	return nil
}

// checkStatus returns an error if Stripe made the PaymentIntent id of story s got rather than
// want: the planted drift would not be what the checks expect. stripe-mock answers every
// PaymentIntent requires_payment_method, so it is not checked there.
func (rs *realStripe) checkStatus(s *story, id string, got, want stripe.PaymentIntentStatus) error {
	if rs.wire || got == want {
		return nil
	}
	return fmt.Errorf("payments: real mode planted %q, but Stripe made PaymentIntent %s %s, not %s: the test account's "+
		"settings (Radar rules, payment method settings) may treat test cards differently", s.name, id, got, want)
}

// idempotencyKey is the key of call step about object id in this run.
func (rs *realStripe) idempotencyKey(id, step string) string {
	return "reconcile-demo/" + rs.runID + "/" + id + "/" + step
}

// loseWebhooks confirms with pm_card_visa the PaymentIntents of the stories with a later status:
// they succeed at Stripe, which records payment_intent.succeeded for each; and refunds those
// of the stories refunded after the sweep. No webhook reaches the run, so the rows stay as they
// are. It returns when the last call returned.
func (rs *realStripe) loseWebhooks(ctx context.Context, p plan) (time.Time, error) {
	for _, pay := range p.where(func(s *story) bool { return s.money.afterSweep && s.money.refunded > 0 }) {
		if err := rs.refund(ctx, pay.externalID, pay.refund()); err != nil {
			return time.Time{}, err
		}
	}
	for _, pay := range p.where(func(s *story) bool { return s.later != "" }) {
		params := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String(pmVisa)}
		params.SetIdempotencyKey(rs.idempotencyKey(pay.externalID, "confirm"))
		if err := rs.limiter.Wait(ctx); err != nil {
			return time.Time{}, err
		}
		rs.confirms.Add(1)
		pi, err := rs.sc.V1PaymentIntents.Confirm(ctx, pay.externalID, params)
		if err != nil {
			return time.Time{}, rs.failed(ctx, "confirm "+pay.externalID, err)
		}
		if err := rs.checkStatus(pay.story, pi.ID, pi.Status, pay.story.later); err != nil {
			return time.Time{}, err
		}
	}
	return time.Now(), nil
}

// checkoutUnderWay creates the young PaymentIntents only at Stripe: a checkout under way, whose
// row is not committed yet. They are created just before the reverse scan, inside its grace.
func (rs *realStripe) checkoutUnderWay(ctx context.Context, p plan) error {
	for i := range p.stripeOnly {
		pay := &p.stripeOnly[i]
		if !pay.story.young {
			continue
		}
		m, err := rs.create(ctx, pay)
		if err != nil {
			return err
		}
		pay.externalID = m.id
	}
	return nil
}
