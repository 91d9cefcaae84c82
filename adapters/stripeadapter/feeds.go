package stripeadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Feeds for reconcile.Lane: the events catch-up lane and the reverse scan. Both list through the
// gateway's client, key, account and error mapping, one page of a hundred per call.

// Defaults of EventsOptions and ReverseOptions.
const (
	DefaultEventSettle   = time.Minute
	DefaultEventMaxAge   = 25 * 24 * time.Hour
	DefaultEventsPerStep = 1000
	DefaultReverseWindow = 7 * 24 * time.Hour
)

// EventsOptions configures EventsFeed.
type EventsOptions struct {
	// Types are the event types to read, "*" matching any run of characters. Empty means
	// payment_intent.* for EventsFeed, PaymentEventTypes for PaymentEventsFeed. At most 20; a
	// pattern with * must be the only one.
	Types []string
	// Settle: events younger than this are left for the next step, so that an event Stripe
	// lists a little late is not skipped, and a webhook merely on its way is not taken for a
	// missed one. It is a correctness setting, not only a delay: an event that becomes visible
	// in the list more than Settle after its creation time, behind the checkpoint, is not read
	// (the sweep still finds its change). It is measured by Now against Stripe's clock, so keep
	// the host's clock synchronized. Zero means DefaultEventSettle.
	Settle time.Duration
	// MaxAge: a checkpoint older than this is not replayed (Stripe keeps events 30 days); the
	// feed starts again from the newest event and reports a gap, which the sweep covers. Zero
	// means DefaultEventMaxAge.
	MaxAge time.Duration
	// PerStep bounds the events one step reads before it commits. Zero means
	// DefaultEventsPerStep.
	PerStep int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a warning for each step that skipped events because their object cannot
	// be read or has no id or status, and, from PaymentEventsFeed, for each step it ended
	// before an event whose payment could not be read. Nil means no logging.
	Logger *slog.Logger
}

// EventsFeed reads PaymentIntent events after a checkpoint, oldest first, and yields the newest
// state of each intent they carry: a reconcile.Feed for an events catch-up lane, which finds a
// missed webhook within minutes rather than when the sweep reaches its row. It costs one call
// per hundred events. Objects carry the event's time as ObservedAt, so a row changed since is
// not judged against the older state.
type EventsFeed struct {
	log *eventLog
}

var _ reconcile.Feed[*stripe.PaymentIntent] = (*EventsFeed)(nil)

// EventsFeed returns a feed of the account's events, through g's client.
func (g *Gateway) EventsFeed(opt EventsOptions) (*EventsFeed, error) {
	log, err := newEventLog(g, opt, []string{"payment_intent.*"})
	if err != nil {
		return nil, err
	}
	return &EventsFeed{log: log}, nil
}

// Next reads the events after pos, oldest first, up to PerStep of them and none younger than
// Settle. Without a checkpoint it starts at the newest settled event (events before it are the
// sweep's to find). A checkpoint older than MaxAge, or whose event Stripe no longer has, starts
// again the same way and reports a Gap.
func (f *EventsFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[*stripe.PaymentIntent], error) {
	b, err := f.log.read(ctx, pos, wait)
	if b == nil {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, err
	}
	return reconcile.FeedPage[*stripe.PaymentIntent]{Objects: f.newestStates(b.events), Next: b.next(len(b.events)), End: b.end, Gap: b.gap}, err
}

// newestStates turns events, oldest first, into the newest PaymentIntent state each carries.
// Events of other objects are skipped, and so are events whose object cannot be read (an event
// rendered in an old API version, say) or has no id or no status (not an answer about any
// intent), with one warning per step: one such event must not stop the lane.
// Stripe orders events by their creation second only, so among events of one intent in the
// same second the furthest status along wins (a payment that succeeds in the second it is
// created lists both events in either order).
func (f *EventsFeed) newestStates(events []*stripe.Event) []reconcile.FeedObject[*stripe.PaymentIntent] {
	at := make(map[string]int)
	var objs []reconcile.FeedObject[*stripe.PaymentIntent]
	skipped, firstSkipped, firstErr := 0, "", ""
	skip := func(e *stripe.Event, why string) {
		if skipped == 0 {
			firstSkipped, firstErr = f.log.g.redact(shorten(e.ID)), f.log.g.redact(why)
		}
		skipped++
	}
	for _, e := range events {
		if e.Data == nil || len(e.Data.Raw) == 0 {
			continue
		}
		var head struct {
			Object string `json:"object"`
		}
		if err := json.Unmarshal(e.Data.Raw, &head); err != nil {
			skip(e, "its object cannot be read: "+err.Error())
			continue
		}
		if head.Object != "payment_intent" {
			continue
		}
		pi := &stripe.PaymentIntent{}
		if err := json.Unmarshal(e.Data.Raw, pi); err != nil {
			skip(e, "its payment intent cannot be read: "+err.Error())
			continue
		}
		if !ValidPaymentIntentID(pi.ID) || pi.Status == "" {
			// Not a state of anything: judging it would verify or repair a row on no evidence.
			skip(e, "its payment intent has no id or no status")
			continue
		}
		o := reconcile.FeedObject[*stripe.PaymentIntent]{ExternalID: pi.ID, Object: pi,
			CreatedAt: time.Unix(pi.Created, 0), ObservedAt: time.Unix(e.Created, 0)}
		i, ok := at[pi.ID]
		switch {
		case !ok:
			at[pi.ID] = len(objs)
			objs = append(objs, o)
		case o.ObservedAt.After(objs[i].ObservedAt) || statusRank(pi.Status) >= statusRank(objs[i].Object.Status):
			objs[i] = o
		}
	}
	if skipped > 0 {
		f.log.opt.Logger.Warn("stripeadapter: events feed: skipped events whose payment intent cannot be judged",
			"skipped", skipped, "first_event", firstSkipped, "first_reason", firstErr)
	}
	return objs
}

// statusRank orders PaymentIntent statuses by how far along a payment they are.
func statusRank(s stripe.PaymentIntentStatus) int {
	switch s {
	case stripe.PaymentIntentStatusSucceeded, stripe.PaymentIntentStatusCanceled:
		return 2
	case stripe.PaymentIntentStatusProcessing, stripe.PaymentIntentStatusRequiresAction, stripe.PaymentIntentStatusRequiresCapture:
		return 1
	}
	return 0
}

// ReverseOptions configures ReverseFeed.
type ReverseOptions struct {
	// Window is how far back a pass lists PaymentIntents by creation time. Zero means
	// DefaultReverseWindow (7 days).
	Window time.Duration
	// Grace: intents created more recently are left to a later pass, since our own row for
	// them may not be committed yet. Zero means reconcile.DefaultGrace.
	Grace time.Duration
	// Include, if set, says which intents are this table's to account for; the others are
	// skipped, neither judged nor reported missing. Intents created by Invoices, Checkout,
	// Payment Links, the Dashboard or another service of the same account have no row here:
	// tell them apart by a metadata key your checkout sets, say. Nil means every intent.
	Include func(*stripe.PaymentIntent) bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a warning for each page that listed objects without an id or a status,
	// which are skipped: not judged, not reported missing. Nil means no logging.
	Logger *slog.Logger
}

// ReverseFeed lists the PaymentIntents created within a window, newest first, a page of a
// hundred per step: a reconcile.Feed for the reverse scan, which finds intents that no local
// row refers to (with LaneConfig.ReportMissing) and verifies the others in bulk. A pass fixes
// its window when it starts, so that paging is stable; when the window is exhausted the pass
// is complete and the next step starts a new one. The Search API is not used: it can lag by an
// hour, and absence must not be concluded from a lagging index.
type ReverseFeed struct {
	g   *Gateway
	opt ReverseOptions
}

var _ reconcile.Feed[*stripe.PaymentIntent] = (*ReverseFeed)(nil)

// ReverseFeed returns a reverse-scan feed of the account's PaymentIntents, through g's client.
func (g *Gateway) ReverseFeed(opt ReverseOptions) (*ReverseFeed, error) {
	if opt.Window < 0 || opt.Grace < 0 {
		return nil, errors.New("stripeadapter: reverse options: Window and Grace must not be negative")
	}
	if opt.Window == 0 {
		opt.Window = DefaultReverseWindow
	}
	if opt.Grace == 0 {
		opt.Grace = reconcile.DefaultGrace
	}
	if opt.Grace >= opt.Window {
		return nil, fmt.Errorf("stripeadapter: reverse options: Grace %v leaves nothing of Window %v", opt.Grace, opt.Window)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &ReverseFeed{g: g, opt: opt}, nil
}

// reversePosition is a pass's window and the last intent listed.
type reversePosition struct {
	From  int64  `json:"from"`
	To    int64  `json:"to"`
	After string `json:"after,omitempty"`
}

// Next lists the next page of the current pass, starting a pass when pos is empty.
func (f *ReverseFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[*stripe.PaymentIntent], error) {
	var rp reversePosition
	if pos == "" {
		now := f.opt.Now()
		rp = reversePosition{From: now.Add(-f.opt.Window).Unix(), To: now.Add(-f.opt.Grace).Unix()}
	} else if err := json.Unmarshal([]byte(pos), &rp); err != nil || rp.From <= 0 || rp.To < rp.From || (rp.After != "" && !ValidPaymentIntentID(rp.After)) {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, fmt.Errorf("stripeadapter: reverse scan position %q is not one of this feed's", pos)
	}
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, err
	}
	items, more, err := f.g.listPage(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: rp.From, LesserThanOrEqual: rp.To}, rp.After)
	if errors.Is(err, errCursorGone) {
		// The intent we paged from is gone: start the pass again rather than skip the rest.
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, nil
	}
	if err != nil {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, err
	}
	page := reconcile.FeedPage[*stripe.PaymentIntent]{Objects: make([]reconcile.FeedObject[*stripe.PaymentIntent], 0, len(items))}
	seen := make(map[string]bool, len(items))
	skipped := 0
	for _, pi := range items {
		if pi == nil || !ValidPaymentIntentID(pi.ID) || pi.Status == "" {
			skipped++ // not a state of anything: neither judged nor reported missing
			continue
		}
		if seen[pi.ID] || (f.opt.Include != nil && !f.opt.Include(pi)) {
			continue
		}
		seen[pi.ID] = true
		page.Objects = append(page.Objects, reconcile.FeedObject[*stripe.PaymentIntent]{ExternalID: pi.ID, Object: pi, CreatedAt: time.Unix(pi.Created, 0)})
	}
	if skipped > 0 {
		f.opt.Logger.Warn("stripeadapter: reverse feed: skipped listed payment intents without an id or a status",
			"skipped", skipped, "listed", len(items))
	}
	if !more || len(items) == 0 {
		page.End = true // the pass is complete; Next "" starts the next one
		return page, nil
	}
	last := lastValidID(items)
	if last == "" {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, fmt.Errorf("stripeadapter: list payment intents: "+
			"no listed object has a PaymentIntent id to page on (a proxy or cache in between?): %w", reconcile.ErrUnavailable)
	}
	rp.After = last
	b, _ := json.Marshal(rp)
	page.Next = string(b)
	return page, nil
}
