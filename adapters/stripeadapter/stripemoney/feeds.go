package stripemoney

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// EventTypes are the events EventsFeed reads by default: every change of an
// intent, a refund or a dispute. Stripe's types parameter takes at most 20 exact names, and a
// wildcard only alone, so payment_intent.* is spelt out. Both refund families are read: until
// API version 2024-10-28, refund.* was sent only for refunds without a charge.
var EventTypes = []string{
	"payment_intent.amount_capturable_updated", "payment_intent.canceled", "payment_intent.created",
	"payment_intent.partially_funded", "payment_intent.payment_failed", "payment_intent.processing",
	"payment_intent.requires_action", "payment_intent.succeeded",
	"charge.refunded", "charge.refund.updated", "refund.created", "refund.updated", "refund.failed",
	"charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed",
	"charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated",
}

// EventsFeed reads the events of intents, refunds and disputes after a checkpoint, oldest
// first, and yields the current Payment of each intent they touch: a reconcile.Feed for an
// events lane under the money policy, so that a refund made in the Dashboard, a refund that
// failed or a dispute becomes a finding within two minutes, not when the sweep reaches its row.
//
// An event only says which payment to look at, never what became of it: the feed reads the
// intent (its charge expanded), the intent's refunds when a refund event touched it, and the
// disputes of a disputed charge, so that a dispute's outcome comes from dispute.status and a
// refund's from the Refund, whatever the event's type. That costs one call per hundred events,
// plus one to three per payment an event touches (once per step however many events touch it),
// each paced by the lane's limiter; lower EventsOptions.PerStep to bound a step's calls.
// Objects are the current state, so ObservedAt is zero.
type EventsFeed struct {
	log    *stripeadapter.EventLog
	p      *Gateway
	logger *slog.Logger
}

var _ reconcile.Feed[*stripepolicy.Payment] = (*EventsFeed)(nil)

// EventsFeed returns a feed of the account's payments as its events touch them, through the
// intents' client; opt.Types empty means EventTypes.
func (p *Gateway) EventsFeed(opt stripeadapter.EventsOptions) (*EventsFeed, error) {
	log, err := p.c.EventLog(opt, EventTypes)
	if err != nil {
		return nil, err
	}
	return &EventsFeed{log: log, p: p, logger: orDiscard(opt.Logger)}, nil
}

// orDiscard is l, or a logger that discards when l is nil.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Next reads the events after pos as an ObjectEventsFeed does, then each payment they touch. When a
// payment cannot be read, the step ends before the event that needed it, so that the event is
// read again next step: with a rate limit, the payments read so far are returned with the error;
// with another failure, they are returned alone (the failure is logged, and returned by the next
// step if it is the first event again); with nothing read, the error is returned. A payment
// Stripe does not have (a 404) is skipped: the sweep finds its row.
func (f *EventsFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[*stripepolicy.Payment], error) {
	b, logErr := f.log.Read(ctx, pos, wait)
	if b == nil {
		return reconcile.FeedPage[*stripepolicy.Payment]{}, logErr
	}
	var objs []reconcile.FeedObject[*stripepolicy.Payment]
	at := make(map[string]int)           // payment id → its index in objs
	refundsRead := make(map[string]bool) // payments whose refunds were read this step
	gone := make(map[string]bool)        // payments Stripe does not have
	skipped, firstSkipped := 0, ""
	for i, e := range b.Events {
		id, refund, ok := touched(e)
		if !ok {
			if skipped == 0 {
				firstSkipped = f.p.c.Redact(shorten(e.ID))
			}
			skipped++
			continue
		}
		if id == "" || gone[id] {
			continue // a charge without an intent (the Charges API), or an intent not found
		}
		j, seen := at[id]
		if seen && (!refund || refundsRead[id]) {
			continue // read already, after this event: the state is current
		}
		var err error
		switch {
		case !seen:
			var p *stripepolicy.Payment
			p, err = f.payment(ctx, id, refund, wait)
			if err == nil {
				at[id] = len(objs)
				objs = append(objs, reconcile.FeedObject[*stripepolicy.Payment]{ExternalID: id, Object: p, CreatedAt: time.Unix(p.Intent.Created, 0)})
			}
		default: // a refund event for a payment read this step without its refunds
			if err = wait(ctx); err == nil {
				objs[j].Object.Refunds, err = f.p.refunds(ctx, id)
			}
		}
		if refund && err == nil {
			refundsRead[id] = true
		}
		switch {
		case err == nil:
		case errors.Is(err, reconcile.ErrNotFound):
			gone[id] = true
			f.logger.Warn("stripemoney: events feed: an event's payment intent does not exist; the sweep checks its row",
				"event", f.p.c.Redact(shorten(e.ID)), "payment_intent", f.p.c.Redact(shorten(id)))
		case i == 0 || ctx.Err() != nil || errors.Is(err, reconcile.ErrAbortBatch):
			return reconcile.FeedPage[*stripepolicy.Payment]{}, err
		case errors.Is(err, reconcile.ErrRateLimited):
			return f.page(objs, b, i), err
		default:
			f.logger.Warn("stripemoney: events feed: the step ends before an event whose payment cannot be read",
				"event", f.p.c.Redact(shorten(e.ID)), "error", err.Error())
			return f.page(objs, b, i), nil
		}
	}
	if skipped > 0 {
		f.logger.Warn("stripemoney: events feed: skipped events whose object cannot be read",
			"skipped", skipped, "first_event", firstSkipped)
	}
	return f.page(objs, b, len(b.Events)), logErr
}

// page is the step's page when its first n events are done.
func (f *EventsFeed) page(objs []reconcile.FeedObject[*stripepolicy.Payment], b *stripeadapter.EventBatch, n int) reconcile.FeedPage[*stripepolicy.Payment] {
	return reconcile.FeedPage[*stripepolicy.Payment]{Objects: objs, Next: b.Next(n), End: n == len(b.Events) && b.End, Gap: b.Gap}
}

// payment reads the current Payment of the intent id: the intent, its charge expanded, its
// refunds if withRefunds, and the disputes of a disputed charge. Each call is paced by wait.
func (f *EventsFeed) payment(ctx context.Context, id string, withRefunds bool, wait func(context.Context) error) (*stripepolicy.Payment, error) {
	if err := wait(ctx); err != nil {
		return nil, err
	}
	pi, err := f.p.intents.Fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := f.p.complete(ctx, pi, wait, true)
	if err != nil || !withRefunds {
		return p, err
	}
	if err := wait(ctx); err != nil {
		return nil, err
	}
	if p.Refunds, err = f.p.refunds(ctx, id); err != nil {
		return nil, err
	}
	return p, nil
}

// touched returns the PaymentIntent id an event is about, read from its object: the intent's
// own id, or the payment_intent of a charge, refund or dispute ("" if it has none). refund
// reports an event about a refund, whose Refund objects are then read. ok is false when the
// object cannot be read or names an id that is not an intent's.
func touched(e *stripe.Event) (id string, refund, ok bool) {
	if e.Data == nil || len(e.Data.Raw) == 0 {
		return "", false, false
	}
	var obj struct {
		ID            string          `json:"id"`
		Object        string          `json:"object"`
		PaymentIntent json.RawMessage `json:"payment_intent"`
	}
	if err := json.Unmarshal(e.Data.Raw, &obj); err != nil {
		return "", false, false
	}
	refund = obj.Object == "refund" || e.Type == "charge.refunded" || strings.HasPrefix(string(e.Type), "refund.")
	switch obj.Object {
	case "payment_intent":
		id = obj.ID
	case "charge", "refund", "dispute":
		if id, ok = referenceID(obj.PaymentIntent); !ok {
			return "", false, false
		}
		if id == "" {
			return "", refund, true
		}
	default:
		return "", false, true // not a payment's: nothing to read
	}
	return id, refund, stripeadapter.ValidPaymentIntentID(id)
}

// referenceID reads an expandable reference: null, an id, or an object with an id.
func referenceID(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var id string
	if err := json.Unmarshal(raw, &id); err == nil {
		return id, true
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", false
	}
	return obj.ID, true
}

// ReverseFeed lists the PaymentIntents created within a window as the intents' gateway's
// ReverseFeed does, each with its charge expanded and the disputes of a disputed charge read,
// as Gateway reads them: a reconcile.Feed for a reverse scan under the money policy. A page
// costs one list call, plus one per disputed charge whose outcome is not known yet.
type ReverseFeed struct {
	r      *stripeadapter.ObjectReverseFeed[*stripe.PaymentIntent]
	p      *Gateway
	logger *slog.Logger
}

var (
	_ reconcile.Feed[*stripepolicy.Payment] = (*ReverseFeed)(nil)
	_ reconcile.LaneGracer                  = (*ReverseFeed)(nil)
)

// ReverseFeed returns a reverse-scan feed of the account's payments, through the intents'
// gateway.
func (p *Gateway) ReverseFeed(opt stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]) (*ReverseFeed, error) {
	r, err := p.intents.ReverseFeed(opt)
	if err != nil {
		return nil, err
	}
	return &ReverseFeed{r: r, p: p, logger: orDiscard(opt.Logger)}, nil
}

// LaneGrace is the ReverseFeed's: the sweep's grace, reconcile.DefaultGrace.
func (f *ReverseFeed) LaneGrace() time.Duration { return f.r.LaneGrace() }

// Next lists the next page of the current pass, starting a pass when pos is empty, and reads
// the disputes its payments need. A payment whose disputes cannot be read is left out of the
// page (neither judged nor reported missing: the sweep checks its row); a rate limit or a
// rejected key ends the step without it.
func (f *ReverseFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[*stripepolicy.Payment], error) {
	page, err := f.r.Next(ctx, pos, wait)
	if err != nil {
		return reconcile.FeedPage[*stripepolicy.Payment]{}, err
	}
	out := reconcile.FeedPage[*stripepolicy.Payment]{Objects: make([]reconcile.FeedObject[*stripepolicy.Payment], 0, len(page.Objects)), Next: page.Next, End: page.End, Gap: page.Gap}
	skipped := 0
	var firstErr error
	for _, o := range page.Objects {
		p, err := f.p.complete(ctx, o.Object, wait, false)
		switch {
		case err == nil:
			out.Objects = append(out.Objects, reconcile.FeedObject[*stripepolicy.Payment]{ExternalID: o.ExternalID, Object: p, CreatedAt: o.CreatedAt})
		case ctx.Err() != nil, errors.Is(err, reconcile.ErrRateLimited), errors.Is(err, reconcile.ErrAbortBatch):
			return reconcile.FeedPage[*stripepolicy.Payment]{}, err
		default:
			if skipped == 0 {
				firstErr = err
			}
			skipped++
		}
	}
	if skipped > 0 {
		f.logger.Warn("stripemoney: reverse feed: skipped payments whose disputes cannot be read; the sweep checks their rows",
			"skipped", skipped, "first_error", fmt.Sprint(firstErr))
	}
	return out, nil
}

// shorten quotes s, cut to 64 bytes: server-provided text in a message must stay short.
func shorten(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
