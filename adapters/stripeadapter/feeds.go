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

// Defaults of EventsOptions and ObjectReverseOptions.
const (
	DefaultEventSettle   = time.Minute
	DefaultEventMaxAge   = 25 * 24 * time.Hour
	DefaultEventsPerStep = 1000
	DefaultReverseWindow = 7 * 24 * time.Hour
)

// EventsOptions configures ObjectGateway.EventsFeed and an EventLog.
type EventsOptions struct {
	// Types are the event types to read, "*" matching any run of characters. Empty means the
	// object's EventTypes (payment_intent.* for PaymentIntents), or the extension's own
	// (stripemoney.EventTypes). At most 20; a pattern with * must be the only one.
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
	// be read or has no id or status, and, from stripemoney's events feed, for each step it
	// ended before an event whose payment could not be read. Nil means no logging.
	Logger *slog.Logger
}

// ObjectEventsFeed reads the events of an object type after a checkpoint, oldest first, and
// yields the newest state of each object they carry (data.object, decoded as a T): a
// reconcile.Feed for an events catch-up lane, which finds a missed webhook within minutes rather
// than when the sweep reaches its row. It costs one call per hundred events. Objects carry the
// event's time as ObservedAt, so a row changed since is not judged against the older state.
type ObjectEventsFeed[T any] struct {
	log *EventLog
	obj *Object[T]
}

var _ reconcile.Feed[*stripe.PaymentIntent] = (*ObjectEventsFeed[*stripe.PaymentIntent])(nil)

// EventsFeed returns a feed of the account's events of the object's EventTypes (opt.Types, if
// set, instead), through g's client and account.
func (g *ObjectGateway[T]) EventsFeed(opt EventsOptions) (*ObjectEventsFeed[T], error) {
	log, err := newEventLog(g.c, opt, g.obj.EventTypes)
	if err != nil {
		return nil, err
	}
	return &ObjectEventsFeed[T]{log: log, obj: &g.obj}, nil
}

// Next reads the events after pos, oldest first, up to PerStep of them and none younger than
// Settle. Without a checkpoint it starts at the newest settled event (events before it are the
// sweep's to find). A checkpoint older than MaxAge, or whose event Stripe no longer has, starts
// again the same way and reports a Gap.
func (f *ObjectEventsFeed[T]) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[T], error) {
	b, err := f.log.Read(ctx, pos, wait)
	if b == nil {
		return reconcile.FeedPage[T]{}, err
	}
	return reconcile.FeedPage[T]{Objects: f.newestStates(b.Events), Next: b.Next(len(b.Events)), End: b.End, Gap: b.Gap}, err
}

// newestStates turns events, oldest first, into the newest state each object's events carry.
// Events of other object types are skipped, and so are events whose object cannot be read (an
// event rendered in an old API version, say) or has no id or no state (not an answer about any
// object), with one warning per step: one such event must not stop the lane. Stripe orders
// events by their creation second only, so among events of one object in the same second the
// highest Rank wins, the later listed on a tie.
func (f *ObjectEventsFeed[T]) newestStates(events []*stripe.Event) []reconcile.FeedObject[T] {
	at := make(map[string]int)
	var objs []reconcile.FeedObject[T]
	skipped, firstSkipped, firstErr := 0, "", ""
	skip := func(e *stripe.Event, why string) {
		if skipped == 0 {
			firstSkipped, firstErr = f.log.c.redact(shorten(e.ID)), f.log.c.redact(why)
		}
		skipped++
	}
	label := f.obj.label()
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
		if head.Object != f.obj.Name {
			continue
		}
		var v T
		if err := json.Unmarshal(e.Data.Raw, &v); err != nil {
			skip(e, "its "+label+" cannot be read: "+err.Error())
			continue
		}
		if !f.obj.answers(v) {
			// Not a state of anything: judging it would verify or repair a row on no evidence.
			skip(e, "its "+label+" has no id or no status")
			continue
		}
		id := f.obj.ID(v)
		o := reconcile.FeedObject[T]{ExternalID: id, Object: v, CreatedAt: time.Unix(f.obj.Created(v), 0), ObservedAt: time.Unix(e.Created, 0)}
		i, ok := at[id]
		switch {
		case !ok:
			at[id] = len(objs)
			objs = append(objs, o)
		case o.ObservedAt.After(objs[i].ObservedAt) || f.obj.rank(v) >= f.obj.rank(objs[i].Object):
			objs[i] = o
		}
	}
	if skipped > 0 {
		f.log.opt.Logger.Warn("stripeadapter: events feed: skipped events whose "+label+" cannot be judged",
			"skipped", skipped, "first_event", firstSkipped, "first_reason", firstErr)
	}
	return objs
}

// ObjectReverseOptions configures ObjectGateway.ReverseFeed.
type ObjectReverseOptions[T any] struct {
	// Window is how far back a pass lists objects by creation time. Zero means
	// DefaultReverseWindow (7 days).
	Window time.Duration
	// MinAge: objects created more recently than this are left to a later pass, since our own
	// row for them may not be committed yet. It is about the objects' creation at Stripe; the
	// rows' grace, how recently a row may have changed and still be judged, is
	// reconcile.LaneConfig.Grace, which a lane over this feed gets from LaneGrace. Zero means
	// 10 minutes (reconcile.DefaultGrace).
	MinAge time.Duration
	// Include, if set, says which objects are this table's to account for; the others are
	// skipped, neither judged nor reported missing. Objects another service of the same
	// account created have no row here (for PaymentIntents, also those of Invoices, Checkout,
	// Payment Links, the Dashboard): tell them apart by a metadata key your code sets, say.
	// Nil means every object.
	Include func(T) bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a warning for each page that listed objects without an id or a state,
	// which are skipped: not judged, not reported missing. Nil means no logging.
	Logger *slog.Logger
}

// ObjectReverseFeed lists the objects created within a window, newest first, a page of a
// hundred per step: a reconcile.Feed for the reverse scan, which finds objects that no local
// row refers to (with LaneConfig.ReportMissing) and verifies the others in bulk. A pass fixes
// its window when it starts, so that paging is stable; when the window is exhausted the pass
// is complete and the next step starts a new one. The Search API is not used: it can lag by an
// hour, and absence must not be concluded from a lagging index. Each list call sends the
// object's ListParams: without status=all a reverse scan of Subscriptions would not see the
// canceled ones. For an object without a created filter (NoCreatedFilter) a pass pages the
// list from its newest object and keeps those within the window, ending at the first older.
type ObjectReverseFeed[T any] struct {
	g   *ObjectGateway[T]
	opt ObjectReverseOptions[T]
}

var _ reconcile.Feed[*stripe.PaymentIntent] = (*ObjectReverseFeed[*stripe.PaymentIntent])(nil)

// ReverseFeed returns a reverse-scan feed of the account's objects, through g's client.
func (g *ObjectGateway[T]) ReverseFeed(opt ObjectReverseOptions[T]) (*ObjectReverseFeed[T], error) {
	if opt.Window < 0 || opt.MinAge < 0 {
		return nil, errors.New("stripeadapter: reverse options: Window and MinAge must not be negative")
	}
	if opt.Window == 0 {
		opt.Window = DefaultReverseWindow
	}
	if opt.MinAge == 0 {
		opt.MinAge = reconcile.DefaultGrace
	}
	if opt.MinAge >= opt.Window {
		return nil, fmt.Errorf("stripeadapter: reverse options: MinAge %v leaves nothing of Window %v", opt.MinAge, opt.Window)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &ObjectReverseFeed[T]{g: g, opt: opt}, nil
}

var _ reconcile.LaneGracer = (*ObjectReverseFeed[*stripe.PaymentIntent])(nil)

// LaneGrace is the grace a lane over the feed gives its rows unless LaneConfig.Grace is set:
// the sweep's, reconcile.DefaultGrace. The scan verifies the rows whose objects it lists as the
// sweep does, so a row the sweep leaves in flight (a webhook being applied) is left by the scan
// too.
func (f *ObjectReverseFeed[T]) LaneGrace() time.Duration { return reconcile.DefaultGrace }

// reversePosition is a pass's window and the last object listed.
type reversePosition struct {
	From  int64  `json:"from"`
	To    int64  `json:"to"`
	After string `json:"after,omitempty"`
}

// Next lists the next page of the current pass, starting a pass when pos is empty.
func (f *ObjectReverseFeed[T]) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[T], error) {
	obj := &f.g.obj
	var rp reversePosition
	if pos == "" {
		now := f.opt.Now()
		rp = reversePosition{From: now.Add(-f.opt.Window).Unix(), To: now.Add(-f.opt.MinAge).Unix()}
	} else if err := json.Unmarshal([]byte(pos), &rp); err != nil || rp.From <= 0 || rp.To < rp.From || (rp.After != "" && !obj.validID(rp.After)) {
		return reconcile.FeedPage[T]{}, fmt.Errorf("stripeadapter: reverse scan position %q is not one of this feed's", pos)
	}
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[T]{}, err
	}
	var window *stripe.RangeQueryParams
	if !obj.NoCreatedFilter {
		window = &stripe.RangeQueryParams{GreaterThanOrEqual: rp.From, LesserThanOrEqual: rp.To}
	}
	items, more, err := f.g.listPage(ctx, window, rp.After)
	if errors.Is(err, errCursorGone) {
		// The object we paged from is gone: start the pass again rather than skip the rest.
		return reconcile.FeedPage[T]{}, nil
	}
	if err != nil {
		return reconcile.FeedPage[T]{}, err
	}
	page := reconcile.FeedPage[T]{Objects: make([]reconcile.FeedObject[T], 0, len(items))}
	seen := make(map[string]bool, len(items))
	skipped, older := 0, false
	for _, v := range items {
		if !obj.answers(v) {
			skipped++ // not a state of anything: neither judged nor reported missing
			continue
		}
		id, created := obj.ID(v), obj.Created(v)
		if obj.NoCreatedFilter && (created < rp.From || created > rp.To) { // the list is not by window
			older = older || created < rp.From
			continue
		}
		if seen[id] || (f.opt.Include != nil && !f.opt.Include(v)) {
			continue
		}
		seen[id] = true
		page.Objects = append(page.Objects, reconcile.FeedObject[T]{ExternalID: id, Object: v, CreatedAt: time.Unix(created, 0)})
	}
	if skipped > 0 {
		f.opt.Logger.Warn("stripeadapter: reverse feed: skipped listed "+obj.plural()+" without an id or a status",
			"skipped", skipped, "listed", len(items))
	}
	if !more || len(items) == 0 || older {
		page.End = true // the pass is complete; Next "" starts the next one
		return page, nil
	}
	last := f.g.lastValidID(items)
	if last == "" {
		return reconcile.FeedPage[T]{}, fmt.Errorf("stripeadapter: list %s: "+
			"no listed object has a %s id to page on (a proxy or cache in between?): %w", obj.plural(), obj.label(), reconcile.ErrUnavailable)
	}
	rp.After = last
	b, _ := json.Marshal(rp)
	page.Next = string(b)
	return page, nil
}
