package stripeadapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// DisputeCacheSize is how many charges' final dispute outcomes a PaymentGateway keeps.
const DisputeCacheSize = 10000

// DefaultDisputeCacheTTL is GatewayConfig.DisputeCacheTTL's default: the sweep reads a disputed
// charge's disputes at least daily.
const DefaultDisputeCacheTTL = 24 * time.Hour

// PaymentGateway reads Payments: a reconcile.BatchGateway[*Payment] and IDChecker over its
// Gateway's calls. A batch costs the Gateway's list calls, whose intents carry their charges,
// plus one disputes call for each disputed charge whose disputes may still change: a final
// outcome (won, lost, warning_closed, prevented) is kept for GatewayConfig.DisputeCacheTTL (a
// day), so a closed dispute costs one call a day, not one per cycle. It is kept no longer
// because a charge may be disputed again (a chargeback after a closed inquiry) and the events
// lane, which reads such a charge anew, may miss the event. Refunds cost nothing: the charge's amount_refunded and
// refunded say what the policy compares. It is safe for concurrent use.
type PaymentGateway struct {
	g        *Gateway
	outcomes *outcomeCache
}

var (
	_ reconcile.DatedBatchGateway[*Payment] = (*PaymentGateway)(nil)
	_ reconcile.IDChecker                   = (*PaymentGateway)(nil)
)

// Payments returns the gateway's PaymentGateway, the one for the money policy. Every call
// returns the same one, so jobs of one gateway share its dispute outcomes.
func (g *Gateway) Payments() *PaymentGateway { return g.payments }

// CheckID rejects, without a call, an id that cannot be a PaymentIntent's, as Gateway.CheckID.
func (p *PaymentGateway) CheckID(externalID string) error { return p.g.CheckID(externalID) }

// Fetch retrieves one PaymentIntent, its charge expanded, and the charge's disputes as
// FetchBatch does: the same answer as in bulk, for the same row. A disputed charge whose
// outcome is not known yet costs a second call, which the engine counts as part of this one.
func (p *PaymentGateway) Fetch(ctx context.Context, externalID string) (*Payment, error) {
	pi, err := p.g.Fetch(ctx, externalID)
	if err != nil {
		return nil, err
	}
	return p.complete(ctx, pi, nil, false)
}

// FetchBatch is FetchBatchSince with answers obtained by this call only (see
// ObjectGateway.FetchBatch).
func (p *PaymentGateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]*Payment, error) {
	found, err := p.FetchBatchSince(ctx, lookups, p.g.intents.ahead.clock(), wait)
	return objects(found), err
}

// FetchBatchSince lists as Gateway.FetchBatchSince does, then reads the disputes of each
// disputed charge whose outcome is not known yet, in the batch's order, each call paced by
// wait. A payment is dated by its intent's listing: its disputes are read later, or are final
// outcomes kept for DisputeCacheTTL. A row whose disputes cannot be read is left out, so the
// engine asks Fetch about it, and it is never judged without them; the first such failure is
// returned after the others are read. After a rate limit (the list's, a follow-up's or
// wait's) no call is made, and the rows that need none are still returned with the error. So
// that an outage costs no more calls than the engine's rule allows, none is made either once
// a call of this fetch failed before any answered (the list, or the first follow-up when the
// look-ahead answered every row): the intents kept from earlier calls are no sign that Stripe
// is up.
func (p *PaymentGateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[*Payment], error) {
	start := p.g.intents.ahead.clock()
	pis, err := p.g.FetchBatchSince(ctx, lookups, since, wait)
	// After a rate limit no call is made, but payments that need none are still returned.
	stopped := err != nil && !errors.Is(err, reconcile.ErrUnavailable)
	answered := false // a call of this fetch has answered
	for _, a := range pis {
		answered = answered || !a.At.Before(start)
	}
	down := err != nil && !answered // the list failed, and nothing this fetch asked has answered
	out := make(map[string]reconcile.Answer[*Payment], len(pis))
	done := make(map[string]bool, len(pis)) // rows may share an intent: read it once
	var firstErr error
	for _, l := range lookups {
		a, ok := pis[l.ExternalID]
		if !ok || done[l.ExternalID] {
			continue
		}
		needs := p.needsDisputes(a.Object)
		if needs && (stopped || down) {
			continue
		}
		done[l.ExternalID] = true
		pay, ferr := p.complete(ctx, a.Object, wait, false)
		switch {
		case ferr == nil:
			out[l.ExternalID] = reconcile.Answer[*Payment]{Object: pay, At: a.At}
			answered = answered || needs
		case ctx.Err() != nil, errors.Is(ferr, reconcile.ErrAbortBatch):
			return out, ferr
		case errors.Is(ferr, reconcile.ErrRateLimited):
			stopped, err = true, ferr
		default:
			if firstErr == nil {
				firstErr = ferr
			}
			down = down || !answered
		}
	}
	if err != nil {
		return out, err
	}
	return out, firstErr
}

// needsDisputes reports whether pi's Payment takes a disputes call.
func (p *PaymentGateway) needsDisputes(pi *stripe.PaymentIntent) bool {
	ch := pi.LatestCharge
	if !expanded(ch) || !ch.Disputed {
		return false
	}
	_, known := p.outcomes.get(ch.ID)
	return !known
}

// complete builds pi's Payment, reading the disputes of a disputed charge unless their outcome
// is known and fresh is false. wait, if not nil, paces that call. The events lane asks fresh:
// an event about the payment may be a new dispute on a charge whose earlier ones are all
// final (an inquiry closed, then a chargeback), which the kept outcome cannot show.
func (p *PaymentGateway) complete(ctx context.Context, pi *stripe.PaymentIntent, wait func(context.Context) error, fresh bool) (*Payment, error) {
	pay := &Payment{Intent: pi}
	ch := pi.LatestCharge
	switch {
	case ch == nil:
		return pay, nil // no charge yet: no money moved
	case !expanded(ch):
		// Asked for and not given: judging the intent alone would miss its refunds and disputes.
		return nil, fmt.Errorf("stripeadapter: read payment %s: Stripe answered without its latest charge expanded "+
			"(a proxy or cache in between?): %w", pi.ID, reconcile.ErrUnavailable)
	case !ch.Disputed:
		return pay, nil
	}
	if ds, ok := p.outcomes.get(ch.ID); ok && !fresh {
		pay.Disputes = ds
		return pay, nil
	}
	if wait != nil {
		if err := wait(ctx); err != nil {
			return nil, err
		}
	}
	ds, err := p.g.disputes(ctx, pi.ID)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		// Stripe's lists lag a little behind its objects: the charge says disputed, so an
		// empty list is not "no dispute".
		return nil, fmt.Errorf("stripeadapter: list disputes of %s: none listed though its charge is disputed: %w", pi.ID, reconcile.ErrUnavailable)
	}
	pay.Disputes = ds
	final := true
	for _, d := range ds {
		final = final && finalDispute(d.Status)
	}
	if final {
		p.outcomes.put(ch.ID, ds)
	} else {
		p.outcomes.drop(ch.ID) // a dispute opened since the outcome was kept
	}
	return pay, nil
}

// outcomeCache keeps the disputes of charges whose disputes are all final, by charge id, each
// for ttl from when it was read, at most size of them, the oldest dropped first. A nil
// outcomeCache keeps nothing. It is safe for concurrent use.
type outcomeCache struct {
	size  int
	ttl   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	byID  map[string]outcome
	order []string // by when first kept; an id is in it once
}

// outcome is a charge's kept disputes and when they were read.
type outcome struct {
	disputes []*stripe.Dispute
	read     time.Time
}

// newOutcomeCache returns a cache of size charges for ttl each; nil, keeping nothing, when ttl
// is negative.
func newOutcomeCache(size int, ttl time.Duration) *outcomeCache {
	if ttl < 0 {
		return nil
	}
	return &outcomeCache{size: size, ttl: ttl, now: time.Now, byID: map[string]outcome{}}
}

// get returns the disputes kept for chargeID, if they were read less than ttl ago.
func (c *outcomeCache) get(chargeID string) ([]*stripe.Dispute, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.byID[chargeID]
	if ok && c.now().Sub(o.read) >= c.ttl {
		c.dropLocked(chargeID)
		return nil, false
	}
	return o.disputes, ok
}

func (c *outcomeCache) put(chargeID string, ds []*stripe.Dispute) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := outcome{disputes: ds, read: c.now()}
	if _, ok := c.byID[chargeID]; ok {
		c.byID[chargeID] = o // read again: the newer list, for another ttl
		return
	}
	c.byID[chargeID] = o
	c.order = append(c.order, chargeID)
	if len(c.order) > c.size {
		delete(c.byID, c.order[0])
		c.order = c.order[1:]
	}
}

// drop forgets the disputes kept for chargeID, if any: they are no longer all final.
func (c *outcomeCache) drop(chargeID string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(chargeID)
}

func (c *outcomeCache) dropLocked(chargeID string) {
	if _, ok := c.byID[chargeID]; !ok {
		return
	}
	delete(c.byID, chargeID)
	c.order = slices.DeleteFunc(c.order, func(id string) bool { return id == chargeID })
}
