package stripeadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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

// maxUnanchoredPages bounds the pages an events feed without a checkpoint event reads to find
// the oldest event since its checkpoint time.
const maxUnanchoredPages = 50

// EventsOptions configures EventsFeed.
type EventsOptions struct {
	// Types are the event types to read, "*" matching any run of characters. Empty means
	// payment_intent.*. At most 20; a pattern with * must be the only one.
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
	// be read or has no id or status. Nil means no logging.
	Logger *slog.Logger
}

// EventsFeed reads PaymentIntent events after a checkpoint, oldest first, and yields the newest
// state of each intent they carry: a reconcile.Feed for an events catch-up lane, which finds a
// missed webhook within minutes rather than when the sweep reaches its row. It costs one call
// per hundred events. Objects carry the event's time as ObservedAt, so a row changed since is
// not judged against the older state.
type EventsFeed struct {
	g   *Gateway
	opt EventsOptions
}

var _ reconcile.Feed[*stripe.PaymentIntent] = (*EventsFeed)(nil)

// EventsFeed returns a feed of the account's events, through g's client.
func (g *Gateway) EventsFeed(opt EventsOptions) (*EventsFeed, error) {
	switch {
	case opt.Settle < 0, opt.MaxAge < 0, opt.PerStep < 0:
		return nil, errors.New("stripeadapter: events options: Settle, MaxAge and PerStep must not be negative")
	case len(opt.Types) > 20:
		return nil, fmt.Errorf("stripeadapter: events options: %d types, Stripe takes at most 20", len(opt.Types))
	case len(opt.Types) > 1 && slices.ContainsFunc(opt.Types, func(t string) bool { return strings.Contains(t, "*") }):
		return nil, errors.New("stripeadapter: events options: a type with * must be the only one")
	case slices.Contains(opt.Types, ""):
		return nil, errors.New("stripeadapter: events options: empty event type")
	}
	if len(opt.Types) == 0 {
		opt.Types = []string{"payment_intent.*"}
	}
	if opt.Settle == 0 {
		opt.Settle = DefaultEventSettle
	}
	if opt.MaxAge == 0 {
		opt.MaxAge = DefaultEventMaxAge
	}
	if opt.MaxAge > 30*24*time.Hour {
		return nil, fmt.Errorf("stripeadapter: events options: MaxAge %v is beyond the 30 days Stripe keeps events", opt.MaxAge)
	}
	if opt.PerStep == 0 {
		opt.PerStep = DefaultEventsPerStep
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &EventsFeed{g: g, opt: opt}, nil
}

// eventsPosition is the events feed's checkpoint: the last event read, and the time up to which
// every event has been read (for the age guard).
type eventsPosition struct {
	After string `json:"after,omitempty"`
	Until int64  `json:"until"`
}

func (p eventsPosition) String() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// eventPage is one page of the events list, with has_more.
type eventPage struct {
	stripe.APIResource
	stripe.ListMeta
	Object string          `json:"object"`
	Data   []*stripe.Event `json:"data"`
}

// page lists one page of events: with after, the hundred just newer than it (ending_before);
// without, the newest created after since. Both only up to cutoff.
func (f *EventsFeed) page(ctx context.Context, after string, since, cutoff int64, startingAfter string, limit int64) (*eventPage, error) {
	params := &stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{LesserThanOrEqual: cutoff}}
	if len(f.opt.Types) == 1 {
		params.Type = stripe.String(f.opt.Types[0])
	} else {
		params.Types = stripe.StringSlice(f.opt.Types)
	}
	switch {
	case after != "":
		params.EndingBefore = stripe.String(after)
	default:
		params.CreatedRange.GreaterThan = since
		if startingAfter != "" {
			params.StartingAfter = stripe.String(startingAfter)
		}
	}
	if limit > 0 {
		params.Limit = stripe.Int64(limit)
	}
	svc := f.g.sc.V1Events
	var p eventPage
	if err := f.g.list(ctx, "list events", svc.B, svc.Key, "/v1/events", &params.ListParams, params, &p); err != nil {
		return nil, err
	}
	if p.Object != "list" {
		// A 200 that is not a list ({} from a misrouted proxy, say) must not read as "no
		// events": the checkpoint would move past events never read.
		return nil, fmt.Errorf("stripeadapter: list events: Stripe answered 200 with an object that is not a list "+
			"(a proxy or cache in between?): %w", reconcile.ErrUnavailable)
	}
	for _, e := range p.Data {
		// Event ids become the checkpoint, stored and shown: one that is not an event id is
		// not Stripe's answer.
		if e == nil || !validEventID(e.ID) {
			return nil, fmt.Errorf("stripeadapter: list events: Stripe listed an event without an event id "+
				"(a proxy or cache in between?): %w", reconcile.ErrUnavailable)
		}
	}
	if limit > 0 && int64(len(p.Data)) > limit {
		p.Data = p.Data[:limit]
	}
	return &p, nil
}

// Next reads the events after pos, oldest first, up to PerStep of them and none younger than
// Settle. Without a checkpoint it starts at the newest settled event (events before it are the
// sweep's to find). A checkpoint older than MaxAge, or whose event Stripe no longer has, starts
// again the same way and reports a Gap.
func (f *EventsFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[*stripe.PaymentIntent], error) {
	now := f.opt.Now()
	cutoff := now.Add(-f.opt.Settle).Unix()
	if pos == "" {
		return f.anchor(ctx, wait, cutoff, "")
	}
	var cp eventsPosition
	if err := json.Unmarshal([]byte(pos), &cp); err != nil || cp.Until <= 0 || (cp.After != "" && !strings.HasPrefix(cp.After, "evt_")) {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, fmt.Errorf("stripeadapter: events checkpoint %q is not one of this feed's", pos)
	}
	if age := now.Sub(time.Unix(cp.Until, 0)); age > f.opt.MaxAge {
		return f.anchor(ctx, wait, cutoff, fmt.Sprintf("the events checkpoint is %s old, past the %s Stripe's 30-day event log allows replaying",
			age.Round(time.Hour), f.opt.MaxAge))
	}

	var events []*stripe.Event // oldest first
	var end bool
	var err error
	if cp.After != "" {
		events, end, err = f.readAfter(ctx, wait, cp.After, cutoff)
		if errors.Is(err, errCursorGone) {
			// Stripe no longer has the checkpoint event (it keeps events 30 days, and a quiet
			// account may have had none since), but every event up to Until has been read and
			// Until is recent: read by time from there instead.
			cp.After, err = "", nil
		}
	}
	if cp.After == "" && err == nil {
		events, err = f.readSince(ctx, wait, cp.Until, cutoff)
		if errors.Is(err, errTooManyEvents) {
			return f.anchor(ctx, wait, cutoff, err.Error())
		}
		end = true
	}
	if err != nil && (len(events) == 0 || !errors.Is(err, reconcile.ErrRateLimited)) {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, err
	}
	if err != nil {
		end = false // a rate limit cut the step short: keep what was read
	}
	if len(events) > f.opt.PerStep {
		events, end = events[:f.opt.PerStep], false
	}

	next := cp
	if len(events) > 0 {
		last := events[len(events)-1]
		next.After, next.Until = last.ID, max(next.Until, last.Created)
	}
	if end {
		next.Until = max(next.Until, cutoff)
	}
	return reconcile.FeedPage[*stripe.PaymentIntent]{Objects: f.newestStates(events), Next: next.String(), End: end}, err
}

// readAfter reads the events just newer than the event after, oldest first, up to PerStep and
// none after cutoff; end reports that none remain. On an error it returns the events read so far.
func (f *EventsFeed) readAfter(ctx context.Context, wait func(context.Context) error, after string, cutoff int64) (events []*stripe.Event, end bool, err error) {
	seen := make(map[string]bool)
	for len(events) < f.opt.PerStep {
		if err := wait(ctx); err != nil {
			return events, false, err
		}
		// ending_before gives the hundred events just newer than the cursor, newest first.
		p, err := f.page(ctx, after, 0, cutoff, "", 0)
		if err != nil {
			return events, false, err
		}
		for _, e := range slices.Backward(p.Data) {
			if !seen[e.ID] {
				seen[e.ID] = true
				events = append(events, e)
			}
		}
		if !p.HasMore || len(p.Data) == 0 {
			return events, true, nil
		}
		after = p.Data[0].ID
	}
	return events, false, nil
}

// validEventID reports whether id has the shape of an event id: "evt_" and letters and digits.
func validEventID(id string) bool { return validID("evt_", id) }

// errTooManyEvents: readSince found more events than it reads to find the oldest.
var errTooManyEvents = fmt.Errorf("more than %d events arrived while the lane had no event to page from", maxUnanchoredPages*listLimit)

// readSince reads every event created after since and up to cutoff, oldest first: the path
// without an event to page from (none existed when the lane started, or Stripe no longer has
// it). The list is newest first, so it is read whole before it can be taken oldest first.
func (f *EventsFeed) readSince(ctx context.Context, wait func(context.Context) error, since, cutoff int64) ([]*stripe.Event, error) {
	var newestFirst []*stripe.Event
	for startingAfter, pages := "", 0; ; pages++ {
		if pages == maxUnanchoredPages {
			return nil, errTooManyEvents
		}
		if err := wait(ctx); err != nil {
			return nil, err
		}
		p, err := f.page(ctx, "", since, cutoff, startingAfter, 0)
		if err != nil {
			return nil, err
		}
		newestFirst = append(newestFirst, p.Data...)
		if !p.HasMore || len(p.Data) == 0 {
			break
		}
		startingAfter = p.Data[len(p.Data)-1].ID
	}
	seen := make(map[string]bool, len(newestFirst))
	events := make([]*stripe.Event, 0, len(newestFirst))
	for _, e := range slices.Backward(newestFirst) {
		if !seen[e.ID] {
			seen[e.ID] = true
			events = append(events, e)
		}
	}
	return events, nil
}

// anchor starts the feed at the newest settled event, reporting gap (empty for a first start).
func (f *EventsFeed) anchor(ctx context.Context, wait func(context.Context) error, cutoff int64, gap string) (reconcile.FeedPage[*stripe.PaymentIntent], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, err
	}
	p, err := f.page(ctx, "", 0, cutoff, "", 1)
	if err != nil {
		return reconcile.FeedPage[*stripe.PaymentIntent]{}, err
	}
	cp := eventsPosition{Until: cutoff}
	if len(p.Data) > 0 {
		cp.After = p.Data[0].ID
	}
	return reconcile.FeedPage[*stripe.PaymentIntent]{Next: cp.String(), End: true, Gap: gap}, nil
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
			firstSkipped, firstErr = f.g.redact(shorten(e.ID)), f.g.redact(why)
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
		f.opt.Logger.Warn("stripeadapter: events feed: skipped events whose payment intent cannot be judged",
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
