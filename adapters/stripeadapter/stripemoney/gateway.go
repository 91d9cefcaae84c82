package stripemoney

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// DisputeCacheSize is how many charges' final dispute outcomes a Gateway keeps.
const DisputeCacheSize = 10000

// DefaultDisputeCacheTTL is Config.DisputeCacheTTL's default: the sweep reads a disputed
// charge's disputes at least daily.
const DefaultDisputeCacheTTL = 24 * time.Hour

// Config configures a Gateway. Its zero value is the defaults.
type Config struct {
	// DisputeCacheTTL bounds how long the Gateway keeps a charge's final dispute outcomes (at
	// most DisputeCacheSize charges) before the sweep reads them again: a charge may be
	// disputed anew after its disputes closed (a chargeback after an inquiry), and the events
	// lane, which reads it anew on the event, may miss the event. Zero means
	// DefaultDisputeCacheTTL (24 h); negative turns keeping off, a disputes call per disputed
	// charge per read.
	DisputeCacheTTL time.Duration
}

// Gateway reads Payments: a reconcile.DatedBatchGateway[*stripepolicy.Payment] and IDChecker
// over a gateway of PaymentIntents. A batch costs the intents' list calls, whose intents carry
// their charges, plus one disputes call for each disputed charge whose disputes may still
// change: a final outcome (won, lost, warning_closed, prevented) is kept for
// Config.DisputeCacheTTL (a day), so a closed dispute costs one call a day, not one per cycle.
// It is kept no longer because a charge may be disputed again (a chargeback after a closed
// inquiry) and the events lane, which reads such a charge anew, may miss the event. Refunds
// cost nothing: the charge's amount_refunded and refunded say what the policy compares. It is
// safe for concurrent use.
type Gateway struct {
	intents  *stripeadapter.ObjectGateway[*stripe.PaymentIntent]
	c        *stripeadapter.Client
	outcomes *outcomeCache
}

var (
	_ reconcile.DatedBatchGateway[*stripepolicy.Payment] = (*Gateway)(nil)
	_ reconcile.IDChecker                                = (*Gateway)(nil)
)

// New returns the Gateway of Payments read through intents, a gateway of
// stripeadapter.PaymentIntents(), whose latest charge it expands: its calls, client and
// look-ahead. Jobs that share the returned Gateway share its dispute outcomes.
func New(intents *stripeadapter.ObjectGateway[*stripe.PaymentIntent], cfg Config) (*Gateway, error) {
	if intents == nil {
		return nil, errors.New("stripemoney: the PaymentIntents gateway is nil")
	}
	if obj, want := intents.Object(), stripeadapter.PaymentIntents(); obj.Path != want.Path || !slices.Contains(obj.Expand, "latest_charge") {
		return nil, fmt.Errorf("stripemoney: the gateway reads %s expanding %q; give it stripeadapter.PaymentIntents(), "+
			"whose intents carry their latest charge", obj.Path, obj.Expand)
	}
	return &Gateway{intents: intents, c: intents.Client(),
		outcomes: newOutcomeCache(DisputeCacheSize, cmp.Or(cfg.DisputeCacheTTL, DefaultDisputeCacheTTL))}, nil
}

// Intents is the gateway of PaymentIntents g reads through.
func (p *Gateway) Intents() *stripeadapter.ObjectGateway[*stripe.PaymentIntent] { return p.intents }

// CheckID rejects, without a call, an id that cannot be a PaymentIntent's, as the intents'
// gateway does.
func (p *Gateway) CheckID(externalID string) error { return p.intents.CheckID(externalID) }

// Fetch retrieves one PaymentIntent, its charge expanded, and the charge's disputes as
// FetchBatch does: the same answer as in bulk, for the same row. A disputed charge whose
// outcome is not known yet costs a second call, which the engine counts as part of this one.
func (p *Gateway) Fetch(ctx context.Context, externalID string) (*stripepolicy.Payment, error) {
	pi, err := p.intents.Fetch(ctx, externalID)
	if err != nil {
		return nil, err
	}
	return p.complete(ctx, pi, nil, false)
}

// FetchBatch is FetchBatchSince with answers obtained by this call only (see
// stripeadapter.ObjectGateway.FetchBatch).
func (p *Gateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]*stripepolicy.Payment, error) {
	found, err := p.FetchBatchSince(ctx, lookups, p.c.Now(), wait)
	out := make(map[string]*stripepolicy.Payment, len(found))
	for id, a := range found {
		out[id] = a.Object
	}
	return out, err
}

// FetchBatchSince lists as the intents' gateway's FetchBatchSince does, then reads the disputes of each
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
func (p *Gateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[*stripepolicy.Payment], error) {
	start := p.c.Now()
	pis, err := p.intents.FetchBatchSince(ctx, lookups, since, wait)
	// After a rate limit no call is made, but payments that need none are still returned.
	stopped := err != nil && !errors.Is(err, reconcile.ErrUnavailable)
	answered := false // a call of this fetch has answered
	for _, a := range pis {
		answered = answered || !a.At.Before(start)
	}
	down := err != nil && !answered // the list failed, and nothing this fetch asked has answered
	out := make(map[string]reconcile.Answer[*stripepolicy.Payment], len(pis))
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
			out[l.ExternalID] = reconcile.Answer[*stripepolicy.Payment]{Object: pay, At: a.At}
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
func (p *Gateway) needsDisputes(pi *stripe.PaymentIntent) bool {
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
func (p *Gateway) complete(ctx context.Context, pi *stripe.PaymentIntent, wait func(context.Context) error, fresh bool) (*stripepolicy.Payment, error) {
	pay := &stripepolicy.Payment{Intent: pi}
	ch := pi.LatestCharge
	switch {
	case ch == nil:
		return pay, nil // no charge yet: no money moved
	case !expanded(ch):
		// Asked for and not given: judging the intent alone would miss its refunds and disputes.
		return nil, fmt.Errorf("stripemoney: read payment %s: Stripe answered without its latest charge expanded "+
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
	ds, err := p.disputes(ctx, pi.ID)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		// Stripe's lists lag a little behind its objects: the charge says disputed, so an
		// empty list is not "no dispute".
		return nil, fmt.Errorf("stripemoney: list disputes of %s: none listed though its charge is disputed: %w", pi.ID, reconcile.ErrUnavailable)
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

// expanded reports whether ch is a whole charge, not only the id stripe-go decodes from an
// unexpanded latest_charge.
func expanded(ch *stripe.Charge) bool { return ch != nil && ch.Object == "charge" }

// finalDispute reports whether a dispute's status can no longer change: the outcome is known.
func finalDispute(s stripe.DisputeStatus) bool {
	switch s {
	case stripe.DisputeStatusWon, stripe.DisputeStatusLost, stripe.DisputeStatusWarningClosed, stripe.DisputeStatusPrevented:
		return true
	}
	return false
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
