package stripepayouts

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/tieout"
)

// EventTypes are the events an EventsLister reads by default: those after which a payout's
// balance transactions are final or its status is (payout.reconciliation_completed, payout.paid
// for a manual payout), and those of a payout that failed or was canceled, after showing paid
// perhaps, which must be judged again.
var EventTypes = []string{"payout.reconciliation_completed", "payout.paid", "payout.failed", "payout.canceled"}

// EventsLister is a tieout.Lister over the account's payout events: the payouts its events
// after a checkpoint touch, read anew (an event says which payout to look at, never what
// became of it), those that are final (as Lister.Groups decides), oldest event first. Run as
// a tie-out Step of its own (the same Job as the sweep's, another Lane) every minute or so, it
// ties a payout out shortly after Stripe finishes it, and judges again a paid payout that
// failed, which the sweep has passed. The sweep stays behind it: Stripe documents events that
// are never sent. Members are the Lister's.
type EventsLister struct {
	l      *Lister
	log    *stripeadapter.EventLog
	logger *slog.Logger
}

var _ tieout.Lister = (*EventsLister)(nil)

// EventsLister returns the lister of the payouts the account's events touch, through l's
// client and limiter; opt.Types empty means EventTypes. Its positions are the event log's
// checkpoints (stripeadapter.EventLog): a lane starting without one starts at the newest event.
func (l *Lister) EventsLister(opt stripeadapter.EventsOptions) (*EventsLister, error) {
	log, err := l.c.EventLog(opt, EventTypes)
	if err != nil {
		return nil, err
	}
	logger := opt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &EventsLister{l: l, log: log, logger: logger}, nil
}

// Groups reads the events after pos and returns the final payouts they touch, each once, read
// now (one retrieve each, paced by the limiter). A payout not final yet is left to its later
// event (payout.reconciliation_completed) and to the sweep; one Stripe does not have (404) or
// refuses to retrieve (400) is skipped with a warning, for the sweep. When a payout cannot be read, the page ends before the event that
// named it, so that the event is read again next step; with nothing read, the error is
// returned.
func (e *EventsLister) Groups(ctx context.Context, pos string) (tieout.GroupPage, error) {
	b, err := e.log.Read(ctx, pos, e.l.wait)
	if b == nil {
		return tieout.GroupPage{}, err
	}
	if err != nil {
		// A rate limit cut the read short; the events read are kept, and so is the error for
		// the step to be redone: a rate limit delays, never skips.
		return tieout.GroupPage{}, err
	}
	if b.Gap != "" {
		e.logger.Warn("stripepayouts: events lister: events were skipped; the sweep ties their payouts out", "gap", b.Gap)
	}
	page := tieout.GroupPage{}
	done := make(map[string]bool)
	for i, ev := range b.Events {
		id, ok := payoutID(ev.Data)
		if !ok {
			e.logger.Warn("stripepayouts: events lister: skipped an event whose object is not a payout",
				"event", e.l.c.Redact(shorten(ev.ID)))
			continue
		}
		if done[id] {
			continue
		}
		if err := e.l.wait(ctx); err != nil {
			return e.cut(page, b, i, err)
		}
		po, err := e.l.payouts.Fetch(ctx, id)
		var rl *reconcile.RateLimitError
		if errors.As(err, &rl) {
			if t, ok := e.l.cfg.Limiter.(reconcile.Throttler); ok {
				t.Throttle(rl.RetryAfter)
			}
		}
		var review *reconcile.ReviewError
		switch {
		case errors.Is(err, reconcile.ErrNotFound):
			e.logger.Warn("stripepayouts: events lister: an event's payout does not exist",
				"event", e.l.c.Redact(shorten(ev.ID)), "payout", e.l.c.Redact(shorten(id)))
			done[id] = true
			continue
		case errors.As(err, &review):
			// Asking again gets the same answer: the lane would stop at this event for ever.
			// The sweep, behind the lane, ties the payout out if Stripe lists it.
			e.logger.Warn("stripepayouts: events lister: Stripe refused to retrieve an event's payout; the sweep ties it out",
				"event", e.l.c.Redact(shorten(ev.ID)), "payout", e.l.c.Redact(shorten(id)), "error", review.Error())
			done[id] = true
			continue
		case err != nil:
			return e.cut(page, b, i, err)
		}
		done[id] = true
		if ready(po) {
			page.Groups = append(page.Groups, e.l.redactGroup(stripepolicy.PayoutGroup(po, e.l.c.Account())))
			// After this group: past its event (a later event naming it is read again).
			page.Positions = append(page.Positions, b.Next(i+1))
		}
	}
	page.Next, page.End = b.Next(len(b.Events)), b.End
	return page, nil
}

// cut ends the page before event i, which named a payout that could not be read: the events
// before it are done, and i is read again next step, which returns the error if it fails again
// then (i is its first event).
func (e *EventsLister) cut(page tieout.GroupPage, b *stripeadapter.EventBatch, i int, err error) (tieout.GroupPage, error) {
	if i == 0 || ctx(err) {
		return tieout.GroupPage{}, err
	}
	e.logger.Warn("stripepayouts: events lister: the step ends before an event whose payout cannot be read", "error", err.Error())
	page.Next = b.Next(i)
	return page, nil
}

// ctx reports whether err is the caller giving up or the batch aborting: never cut around.
func ctx(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, reconcile.ErrAbortBatch)
}

// Members returns the page of g's balance transactions after after, as Lister.Members does.
func (e *EventsLister) Members(ctx context.Context, g tieout.Group, after string) (tieout.MemberPage, error) {
	return e.l.Members(ctx, g, after)
}

// payoutID reads the payout id of an event's object; ok is false when it is not a payout.
func payoutID(data *stripe.EventData) (string, bool) {
	if data == nil || len(data.Raw) == 0 {
		return "", false
	}
	var obj struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(data.Raw, &obj); err != nil || obj.Object != "payout" || !stripeadapter.ValidPayoutID(obj.ID) {
		return "", false
	}
	return obj.ID, true
}
