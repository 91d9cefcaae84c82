package stripepayouts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/tieout"
)

// Defaults of Config.
const (
	DefaultPerPage       = 10
	DefaultMaxStartPages = 50
)

// listLimit is the most objects Stripe returns per list call.
const listLimit = 100

// Config configures a Lister. Its zero value is the defaults.
type Config struct {
	// Options says how the host books what a payout carries (the id it books a charge, a
	// refund or a dispute under), for stripepolicy.PayoutMember.
	Options stripepolicy.PayoutOptions
	// PerPage is the most payouts one Groups page holds, and so one tie-out step commits
	// together: a step lists each one's balance transactions before it commits. Zero means
	// DefaultPerPage; at most 100.
	PerPage int
	// Since is where a walk without a position starts: payouts created at or after it. Zero
	// means every payout the account has.
	Since time.Time
	// MaxStartPages bounds the list calls a walk without a position makes to find its oldest
	// payout (Stripe lists the newest first): more payouts than that since Since is an error
	// that asks for a later Since. Zero means DefaultMaxStartPages (5,000 payouts).
	MaxStartPages int
	// Limiter paces every call; nil means none. Share the one the account's other jobs use:
	// the budget is the account's. A reconcile.Throttler (an AdaptiveLimiter) is told of each
	// rate-limit answer.
	Limiter reconcile.Limiter
}

// Lister is the Stripe side of a payouts tie-out, a tieout.Lister over a gateway of payouts:
// the account's payouts whose balance transactions are final, oldest first, and each one's
// balance transactions (GET /v1/balance_transactions?payout=po_..., a hundred a call, sources
// expanded) as stripepolicy converts them. It is safe for concurrent use.
type Lister struct {
	payouts *stripeadapter.ObjectGateway[*stripe.Payout]
	c       *stripeadapter.Client
	cfg     Config
}

var _ tieout.Lister = (*Lister)(nil)

// New returns the Lister of the account of payouts, a gateway of stripeadapter.Payouts(): its
// calls go through that gateway's client (key, account, timeout, error mapping).
func New(payouts *stripeadapter.ObjectGateway[*stripe.Payout], cfg Config) (*Lister, error) {
	if payouts == nil {
		return nil, errors.New("stripepayouts: the payouts gateway is nil")
	}
	if obj := payouts.Object(); obj.Path != stripeadapter.Payouts().Path {
		return nil, fmt.Errorf("stripepayouts: the gateway reads %s; give it stripeadapter.Payouts()", obj.Path)
	}
	switch {
	case cfg.PerPage < 0 || cfg.PerPage > listLimit:
		return nil, fmt.Errorf("stripepayouts: config: PerPage %d is not between 0 and %d", cfg.PerPage, listLimit)
	case cfg.MaxStartPages < 0:
		return nil, fmt.Errorf("stripepayouts: config: MaxStartPages %d is negative", cfg.MaxStartPages)
	case !cfg.Since.IsZero() && cfg.Since.Unix() < 0:
		return nil, fmt.Errorf("stripepayouts: config: Since %v is before 1970", cfg.Since)
	}
	cfg.PerPage = cmp.Or(cfg.PerPage, DefaultPerPage)
	cfg.MaxStartPages = cmp.Or(cfg.MaxStartPages, DefaultMaxStartPages)
	return &Lister{payouts: payouts, c: payouts.Client(), cfg: cfg}, nil
}

// ForAccount returns the Lister of the connected account acct, over the same client and
// config: its calls carry Stripe-Account, and its groups name acct. Give each account's tie-out
// a Step (and a job) of its own; a reconcile.FanOut covers them all.
func (l *Lister) ForAccount(acct string) (*Lister, error) {
	g, err := l.payouts.ForAccount(acct)
	if err != nil {
		return nil, err
	}
	return &Lister{payouts: g, c: g.Client(), cfg: l.cfg}, nil
}

// Account is the connected account the lister reads, "" for the platform.
func (l *Lister) Account() string { return l.c.Account() }

// position is the walk's place among the account's payouts: after the payout After; or at the
// payout At, which it waits at, not tied out yet (a walk that has tied none out); or, with
// neither, at the payouts created at or after Created.
type position struct {
	After   string `json:"after,omitempty"`
	At      string `json:"at,omitempty"`
	Created int64  `json:"created"`
}

func (p position) String() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// parsePosition reads a position Groups returned; "" is the walk's start.
func (l *Lister) parsePosition(pos string) (position, error) {
	if pos == "" {
		if l.cfg.Since.IsZero() {
			return position{}, nil
		}
		return position{Created: l.cfg.Since.Unix()}, nil
	}
	var p position
	dec := json.NewDecoder(strings.NewReader(pos))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Created < 0 || (p.After != "" && !stripeadapter.ValidPayoutID(p.After)) ||
		(p.At != "" && (p.After != "" || !stripeadapter.ValidPayoutID(p.At))) {
		return position{}, fmt.Errorf("stripepayouts: position %s is not one of this lister's", l.c.Redact(strconv.Quote(shorten(pos))))
	}
	return p, nil
}

// Groups returns the next payouts after pos, oldest first, up to PerPage of them, as tieout
// Groups, stopping before the first whose balance transactions may still change (see ready):
// the walk waits there, and the page reports End, until that payout is final; that payout and
// the ones listed after it (at most 100) are in the page's Pending. A payout
// listed in the same second as the last one is listed by its id, so that a walk resumed
// after a restart neither skips nor repeats one. Payouts arrive newest first from Stripe: after
// a payout the page is the one just newer (ending_before, one call); without one, the list
// since Since is read whole (at most MaxStartPages calls), once per walk.
func (l *Lister) Groups(ctx context.Context, pos string) (tieout.GroupPage, error) {
	page, _, err := l.groups(ctx, pos)
	return page, err
}

// groups is Groups, returning also the payout of each of the page's Groups (payouts[i] is
// Groups[i]'s), for what a tieout.Group does not carry.
func (l *Lister) groups(ctx context.Context, pos string) (page tieout.GroupPage, payouts []*stripe.Payout, err error) {
	p, err := l.parsePosition(pos)
	if err != nil {
		return tieout.GroupPage{}, nil, err
	}
	var oldestFirst []*stripe.Payout
	var more bool
	if p.After != "" {
		oldestFirst, more, err = l.newer(ctx, p.After)
		if errors.Is(err, reconcile.ErrNotFound) {
			// Stripe no longer has the payout the walk stopped after (payouts are not deleted,
			// so this is a copied position, or another account's): go on by its time.
			p.After = ""
			err = nil
		}
	}
	if p.At != "" {
		oldestFirst, more, err = l.from(ctx, p.At)
		if errors.Is(err, reconcile.ErrNotFound) {
			p.At = "" // as for After
			err = nil
		}
	}
	if p.After == "" && p.At == "" && err == nil {
		oldestFirst, more, err = l.since(ctx, p.Created)
	}
	if err != nil {
		return tieout.GroupPage{}, nil, err
	}
	page = tieout.GroupPage{Next: p.String()}
	for i, po := range oldestFirst {
		if len(page.Groups) == l.cfg.PerPage {
			return page, payouts, nil
		}
		if !ready(po) {
			// The walk waits here. This payout and those listed after it are seen but not
			// tied out yet: reported, so the record of payouts not tied out says so.
			for _, w := range oldestFirst[i:min(len(oldestFirst), i+listLimit)] {
				page.Pending = append(page.Pending, l.redactGroup(stripepolicy.PayoutGroup(w, l.c.Account())))
			}
			page.End = true
			if i == 0 && p.After == "" {
				// A walk that has tied none out waits at po: the next step asks for po and those
				// after it (two calls), not for every payout since Since again.
				page.Next = position{At: po.ID, Created: po.Created}.String()
			}
			return page, payouts, nil
		}
		page.Groups = append(page.Groups, l.redactGroup(stripepolicy.PayoutGroup(po, l.c.Account())))
		payouts = append(payouts, po)
		page.Next = position{After: po.ID, Created: po.Created}.String()
		page.Positions = append(page.Positions, page.Next)
		if i == len(oldestFirst)-1 {
			page.End = !more
		}
	}
	if len(oldestFirst) == 0 {
		page.End = true
	}
	return page, payouts, nil
}

// ready reports whether payout p's balance transactions are final, so that a tie-out of them
// says what holds: an automatic payout once Stripe has completed its reconciliation
// (reconciliation_status completed), or once it failed or was canceled; a manual one (which
// cannot be itemized) once paid, failed or canceled. A status the policy does not know is
// ready too, so that the tie-out reports it rather than the walk waiting for ever.
func ready(p *stripe.Payout) bool {
	switch p.Status {
	case stripe.PayoutStatusPending, stripe.PayoutStatusInTransit:
		return p.Automatic && p.ReconciliationStatus == stripe.PayoutReconciliationStatusCompleted
	case stripe.PayoutStatusPaid:
		return !p.Automatic || p.ReconciliationStatus == stripe.PayoutReconciliationStatusCompleted
	}
	return true
}

// payoutPage is one page of the payouts list.
type payoutPage struct {
	Object  string           `json:"object"`
	Data    []*stripe.Payout `json:"data"`
	HasMore bool             `json:"has_more"`
}

// newer lists the payouts just newer than after, oldest first: one call.
func (l *Lister) newer(ctx context.Context, after string) ([]*stripe.Payout, bool, error) {
	q := url.Values{"ending_before": {after}, "limit": {strconv.Itoa(l.cfg.PerPage)}}
	var p payoutPage
	if err := l.call(ctx, "list payouts", "/v1/payouts", q, &p); err != nil {
		return nil, false, err
	}
	if err := l.checkPayouts(&p); err != nil {
		return nil, false, err
	}
	slices.Reverse(p.Data)
	return p.Data, p.HasMore, nil
}

// from lists the payout at and those just newer than it, oldest first: two calls.
func (l *Lister) from(ctx context.Context, at string) ([]*stripe.Payout, bool, error) {
	if err := l.wait(ctx); err != nil {
		return nil, false, err
	}
	po, err := l.payouts.Fetch(ctx, at)
	var rl *reconcile.RateLimitError
	if errors.As(err, &rl) {
		if t, ok := l.cfg.Limiter.(reconcile.Throttler); ok {
			t.Throttle(rl.RetryAfter)
		}
	}
	if err != nil {
		return nil, false, err
	}
	if po == nil || po.ID != at {
		return nil, false, fmt.Errorf("stripepayouts: retrieve payout %s: Stripe answered with another object "+
			"(a proxy or cache in between?): %w", at, reconcile.ErrUnavailable)
	}
	newer, more, err := l.newer(ctx, at)
	if err != nil {
		return nil, false, err
	}
	return append([]*stripe.Payout{po}, newer...), more, nil
}

// since lists every payout created at or after created, oldest first, paging the list (newest
// first) to its end.
func (l *Lister) since(ctx context.Context, created int64) ([]*stripe.Payout, bool, error) {
	var newestFirst []*stripe.Payout
	seen := make(map[string]bool)
	for after, pages := "", 0; ; pages++ {
		if pages == l.cfg.MaxStartPages {
			return nil, false, fmt.Errorf("stripepayouts: more than %d payouts since %s: set Config.Since later, or give a position",
				l.cfg.MaxStartPages*listLimit, time.Unix(created, 0).UTC().Format(time.RFC3339))
		}
		q := url.Values{"created[gte]": {strconv.FormatInt(created, 10)}, "limit": {strconv.Itoa(listLimit)}}
		if after != "" {
			q.Set("starting_after", after)
		}
		var p payoutPage
		if err := l.call(ctx, "list payouts", "/v1/payouts", q, &p); err != nil {
			return nil, false, err
		}
		if err := l.checkPayouts(&p); err != nil {
			return nil, false, err
		}
		for _, po := range p.Data {
			if !seen[po.ID] {
				seen[po.ID] = true
				newestFirst = append(newestFirst, po)
			}
		}
		if !p.HasMore || len(p.Data) == 0 {
			break
		}
		after = p.Data[len(p.Data)-1].ID
	}
	slices.Reverse(newestFirst)
	return newestFirst, false, nil
}

// checkPayouts refuses a page that is not Stripe's answer: a 200 that is not a list, or a
// payout without a payout id (a proxy or cache in between). Its ids become the walk's
// position, stored and shown.
func (l *Lister) checkPayouts(p *payoutPage) error {
	if p.Object != "list" {
		return fmt.Errorf("stripepayouts: list payouts: Stripe answered 200 with an object that is not a list "+
			"(a proxy or cache in between?): %w", reconcile.ErrUnavailable)
	}
	for _, po := range p.Data {
		if po == nil || !stripeadapter.ValidPayoutID(po.ID) {
			return fmt.Errorf("stripepayouts: list payouts: Stripe listed a payout without a payout id "+
				"(a proxy or cache in between?): %w", reconcile.ErrUnavailable)
		}
	}
	return nil
}

// call makes one GET through the client, paced by the limiter, which is told of a rate limit.
func (l *Lister) call(ctx context.Context, op, path string, q url.Values, out any) error {
	if err := l.wait(ctx); err != nil {
		return err
	}
	err := l.c.Get(ctx, op, path, q, out)
	l.throttle(err)
	return err
}

// throttle tells the limiter of a rate limit, if err is one and the limiter listens.
func (l *Lister) throttle(err error) {
	var rl *reconcile.RateLimitError
	if errors.As(err, &rl) {
		if t, ok := l.cfg.Limiter.(reconcile.Throttler); ok {
			t.Throttle(rl.RetryAfter)
		}
	}
}

// wait waits for the limiter. A limiter that cannot grant a call in time is a rate limit: the
// step is redone later, nothing skipped.
func (l *Lister) wait(ctx context.Context) error {
	if l.cfg.Limiter == nil {
		return nil
	}
	if err := l.cfg.Limiter.Wait(ctx); err != nil {
		if ctx.Err() != nil || errors.Is(err, reconcile.ErrAbortBatch) {
			return fmt.Errorf("stripepayouts: wait for the limiter: %w", err)
		}
		return fmt.Errorf("stripepayouts: wait for the limiter: %w: %v", reconcile.ErrRateLimited, err)
	}
	return nil
}

// shorten cuts s to 64 bytes: a position or id from storage or Stripe in a message stays
// short.
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
