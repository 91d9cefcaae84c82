package stripeadapter

// The account's event log, read after a checkpoint, oldest first, a hundred events per call: what
// the events feeds of objects (ObjectEventsFeed) and of payments (package stripemoney's) share.
// They differ only in what they make of the events.

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

// maxUnanchoredPages bounds the pages an events feed without a checkpoint event reads to find
// the oldest event since its checkpoint time.
const maxUnanchoredPages = 50

// EventLog reads an account's events of some types after a checkpoint, oldest first, a hundred
// per call, through a Client: what ObjectEventsFeed is built on, for a feed that makes
// something else of the events (package stripemoney's reads the payment each event touches).
// Its checkpoints are opaque strings, as reconcile.Feed positions are.
type EventLog struct {
	c   *Client
	opt EventsOptions
}

// EventLog returns a reader of the account's events of opt.Types, or of types when opt.Types
// is empty, checking opt as ObjectGateway.EventsFeed does and filling in its defaults.
func (c *Client) EventLog(opt EventsOptions, types []string) (*EventLog, error) {
	return newEventLog(c, opt, types)
}

// newEventLog checks opt, whose empty Types mean types, and fills in its defaults.
func newEventLog(c *Client, opt EventsOptions, types []string) (*EventLog, error) {
	switch {
	case opt.Settle < 0, opt.MaxAge < 0, opt.PerStep < 0:
		return nil, errors.New("stripeadapter: events options: Settle, MaxAge and PerStep must not be negative")
	case len(opt.Types) > maxEventTypes:
		return nil, fmt.Errorf("stripeadapter: events options: %d types, Stripe takes at most 20", len(opt.Types))
	case len(opt.Types) > 1 && slices.ContainsFunc(opt.Types, func(t string) bool { return strings.Contains(t, "*") }):
		return nil, errors.New("stripeadapter: events options: a type with * must be the only one")
	case slices.Contains(opt.Types, ""):
		return nil, errors.New("stripeadapter: events options: empty event type")
	}
	if len(opt.Types) == 0 {
		opt.Types = types
	}
	if len(opt.Types) == 0 {
		return nil, errors.New("stripeadapter: events options: no event types, and the object describes none")
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
	return &EventLog{c: c, opt: opt}, nil
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
type eventPage = listPageOf[*stripe.Event]

// page lists one page of events: with after, the hundred just newer than it (ending_before);
// without, the newest created after since. Both only up to cutoff.
func (l *EventLog) page(ctx context.Context, after string, since, cutoff int64, startingAfter string, limit int64) (*eventPage, error) {
	params := &stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{LesserThanOrEqual: cutoff}}
	if len(l.opt.Types) == 1 {
		params.Type = stripe.String(l.opt.Types[0])
	} else {
		params.Types = stripe.StringSlice(l.opt.Types)
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
	svc := l.c.sc.V1Events
	var p eventPage
	if err := l.c.list(ctx, "list events", svc.B, svc.Key, "/v1/events", &params.ListParams, params, &p); err != nil {
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

// Read reads the events after pos, oldest first, up to PerStep of them and none younger than
// Settle, each list call paced by wait. Without a checkpoint it starts at the newest settled
// event (events before it are the sweep's to find). A checkpoint older than MaxAge, or whose
// event Stripe no longer has, starts again the same way and reports a Gap. On a rate limit
// after some events were read it returns them with the error; on any other error, no batch.
func (l *EventLog) Read(ctx context.Context, pos string, wait func(context.Context) error) (*EventBatch, error) {
	now := l.opt.Now()
	cutoff := now.Add(-l.opt.Settle).Unix()
	if pos == "" {
		return l.anchor(ctx, wait, cutoff, "")
	}
	var cp eventsPosition
	if err := json.Unmarshal([]byte(pos), &cp); err != nil || cp.Until <= 0 || (cp.After != "" && !strings.HasPrefix(cp.After, "evt_")) {
		return nil, fmt.Errorf("stripeadapter: events checkpoint %q is not one of this feed's", pos)
	}
	if age := now.Sub(time.Unix(cp.Until, 0)); age > l.opt.MaxAge {
		return l.anchor(ctx, wait, cutoff, fmt.Sprintf("the events checkpoint is %s old, past the %s Stripe's 30-day event log allows replaying",
			age.Round(time.Hour), l.opt.MaxAge))
	}

	var events []*stripe.Event // oldest first
	var end bool
	var err error
	if cp.After != "" {
		events, end, err = l.readAfter(ctx, wait, cp.After, cutoff)
		if errors.Is(err, errCursorGone) {
			// Stripe no longer has the checkpoint event (it keeps events 30 days, and a quiet
			// account may have had none since), but every event up to Until has been read and
			// Until is recent: read by time from there instead.
			cp.After, err = "", nil
		}
	}
	if cp.After == "" && err == nil {
		events, err = l.readSince(ctx, wait, cp.Until, cutoff)
		if errors.Is(err, errTooManyEvents) {
			return l.anchor(ctx, wait, cutoff, err.Error())
		}
		end = true
	}
	if err != nil && (len(events) == 0 || !errors.Is(err, reconcile.ErrRateLimited)) {
		return nil, err
	}
	if err != nil {
		end = false // a rate limit cut the step short: keep what was read
	}
	if len(events) > l.opt.PerStep {
		events, end = events[:l.opt.PerStep], false
	}
	return &EventBatch{Events: events, End: end, from: cp, cutoff: cutoff}, err
}

// EventBatch is one step's events, oldest first, and where they leave the checkpoint.
type EventBatch struct {
	// Events are the events read, oldest first.
	Events []*stripe.Event
	// End reports that every settled event after the checkpoint was read: a feed's page ends
	// its pass when it took all of Events.
	End bool
	// Gap, if not empty, says why events were skipped: the checkpoint was too old to replay.
	Gap string

	from   eventsPosition // the checkpoint read from
	cutoff int64          // the settle cutoff: every event up to it is read when End
}

// Next is the checkpoint after the first n events: a step may cut its batch short where it
// could not read what an event touched, so that the rest is read again.
func (b *EventBatch) Next(n int) string {
	p := b.from
	if n > 0 {
		last := b.Events[n-1]
		p.After, p.Until = last.ID, max(p.Until, last.Created)
	}
	if n == len(b.Events) && b.End {
		p.Until = max(p.Until, b.cutoff)
	}
	return p.String()
}

// readAfter reads the events just newer than the event after, oldest first, up to PerStep and
// none after cutoff; end reports that none remain. On an error it returns the events read so far.
func (l *EventLog) readAfter(ctx context.Context, wait func(context.Context) error, after string, cutoff int64) (events []*stripe.Event, end bool, err error) {
	seen := make(map[string]bool)
	for len(events) < l.opt.PerStep {
		if err := wait(ctx); err != nil {
			return events, false, err
		}
		// ending_before gives the hundred events just newer than the cursor, newest first.
		p, err := l.page(ctx, after, 0, cutoff, "", 0)
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
func (l *EventLog) readSince(ctx context.Context, wait func(context.Context) error, since, cutoff int64) ([]*stripe.Event, error) {
	var newestFirst []*stripe.Event
	for startingAfter, pages := "", 0; ; pages++ {
		if pages == maxUnanchoredPages {
			return nil, errTooManyEvents
		}
		if err := wait(ctx); err != nil {
			return nil, err
		}
		p, err := l.page(ctx, "", since, cutoff, startingAfter, 0)
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
func (l *EventLog) anchor(ctx context.Context, wait func(context.Context) error, cutoff int64, gap string) (*EventBatch, error) {
	if err := wait(ctx); err != nil {
		return nil, err
	}
	p, err := l.page(ctx, "", 0, cutoff, "", 1)
	if err != nil {
		return nil, err
	}
	cp := eventsPosition{Until: cutoff}
	if len(p.Data) > 0 {
		cp.After = p.Data[0].ID
	}
	return &EventBatch{End: true, Gap: gap, from: cp, cutoff: cutoff}, nil
}
