package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The demo's own machinery: the drift it plants in the table and in stripetest, and the check
// of what the sweep and the repairs did against it.

// story is one kind of drift: how a planted row and its subscription differ from an in-sync
// pair, and what the sweep must find.
type story struct {
	name string
	n    int
	// row and sub change the in-sync pair; missing leaves the subscription out of Stripe.
	row     func(*rowSpec)
	sub     func(*stripetest.Subscription)
	missing bool
	// kind is the finding the sweep must open ("" none); repaired: its command brings the row
	// to Stripe's side, else it stays open for a person.
	kind     string
	repaired bool
}

var stories = []story{
	{name: "canceled at Stripe (Dashboard, dunning), active here; only a status=all list shows it", n: 6,
		sub: setStatus("canceled"), kind: stripepolicy.KindSubscriptionCanceledExternally, repaired: true},
	{name: "canceled at both, in sync; only a status=all list shows it", n: 6,
		row: func(r *rowSpec) { r.status = "canceled" }, sub: setStatus("canceled")},
	{name: "past_due at Stripe, its renewal failed; active here", n: 3,
		sub: setStatus("past_due"), kind: stripepolicy.KindMissedStatusChange, repaired: true},
	{name: "unpaid at Stripe after dunning, active here", n: 2,
		sub: setStatus("unpaid"), kind: stripepolicy.KindAccessWithoutBilling, repaired: true},
	{name: "first invoice paid at Stripe, incomplete here", n: 2,
		row: func(r *rowSpec) { r.status = "incomplete" }, kind: stripepolicy.KindMissedActivation, repaired: true},
	{name: "set to cancel at period end in the customer portal, the row expects a renewal", n: 3,
		sub: func(s *stripetest.Subscription) { s.CancelAtPeriodEnd = true }, kind: stripepolicy.KindCancellationScheduledExternally, repaired: true},
	{name: "paid through a month past Stripe's period end", n: 3,
		row: func(r *rowSpec) { r.paidThrough = r.paidThrough.AddDate(0, 1, 0) }, kind: stripepolicy.KindPaidThroughAhead, repaired: true},
	{name: "cancelled here, the cancellation never reached Stripe, which still bills", n: 2,
		row: func(r *rowSpec) { r.status = "canceled" }, kind: stripepolicy.KindBillingWithoutAccess},
	{name: "set to cancel at period end here, not at Stripe: it will renew", n: 1,
		row: func(r *rowSpec) { r.cancel = true }, kind: stripepolicy.KindCancellationMissingExternally},
	{name: "missing at Stripe", n: 1, missing: true, kind: reconcile.KindMissingExternally},
}

func setStatus(s stripe.SubscriptionStatus) func(*stripetest.Subscription) {
	return func(sub *stripetest.Subscription) { sub.Status = s }
}

// spacing puts a planted row every spacing rows, so that they spread over the batches.
const spacing = 7

// minRows is the fewest rows that hold every story.
func minRows() int {
	n := 0
	for _, s := range stories {
		n += s.n
	}
	return n*spacing + 1
}

// rowSpec is a row to insert; story is nil for an in-sync row.
type rowSpec struct {
	email, subID string
	status       string
	cancel       bool
	paidThrough  time.Time
	created      time.Time
	story        *story
	id           string // the uuid the table gave it
}

// plan is what was planted: the rows by id and the fake Stripe holding their subscriptions.
type plan struct {
	stripe *stripetest.Server
	rows   []*rowSpec
	byID   map[string]*rowSpec
}

// plantDrift fills schema's table with rows rows, created over the last 60 days, and
// stripetest with their subscriptions, each created within 30 s of its row; the stories are
// planted on every spacing-th row. Periods end within the next four weeks, to the second.
func plantDrift(ctx context.Context, pool *pgxpool.Pool, schema string, rows int) (*plan, error) {
	now := time.Now().UTC().Truncate(time.Second)
	p := &plan{stripe: stripetest.NewServer(stripetest.Options{}), byID: map[string]*rowSpec{}}
	var planted []*story
	for i := range stories {
		for range stories[i].n {
			planted = append(planted, &stories[i])
		}
	}
	var subs []stripetest.Subscription
	var withSub []*rowSpec
	for i := range rows {
		end := now.Add(time.Duration(i%28+1) * 24 * time.Hour)
		r := &rowSpec{email: fmt.Sprintf("customer%d@example.com", i), status: "active", paidThrough: end,
			created: now.Add(-60 * 24 * time.Hour).Add(time.Duration(i) * 60 * 24 * time.Hour / time.Duration(rows))}
		sub := stripetest.Subscription{Status: "active", Created: r.created.Add(time.Duration(i%30) * time.Second),
			CurrentPeriodStart: end.AddDate(0, -1, 0), CurrentPeriodEnd: end}
		if k := i / spacing; i%spacing == spacing-1 && k < len(planted) {
			r.story = planted[k]
			if r.story.row != nil {
				r.story.row(r)
			}
			if r.story.sub != nil {
				r.story.sub(&sub)
			}
		}
		p.rows = append(p.rows, r)
		if r.story != nil && r.story.missing {
			r.subID = fmt.Sprintf("sub_Missing%013d", i)
			continue
		}
		subs = append(subs, sub)
		withSub = append(withSub, r)
	}
	for i, id := range p.stripe.AddSubscriptions(subs) {
		withSub[i].subID = id
	}
	return p, p.insert(ctx, pool, schema)
}

// insert writes the rows in one statement and records the ids the table gave them.
func (p *plan) insert(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	var emails, subIDs, statuses []string
	var cancels []bool
	var paid, created []time.Time
	for _, r := range p.rows {
		emails, subIDs, statuses = append(emails, r.email), append(subIDs, r.subID), append(statuses, r.status)
		cancels, paid, created = append(cancels, r.cancel), append(paid, r.paidThrough), append(created, r.created)
	}
	rows, err := pool.Query(ctx, fmt.Sprintf(`
INSERT INTO %s.subscriptions (customer_email, stripe_subscription_id, status, cancel_at_period_end, paid_through, created_at, updated_at)
SELECT e, s, st, c, p, t, t FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::timestamptz[], $6::timestamptz[]) AS u(e, s, st, c, p, t)
RETURNING id::text, stripe_subscription_id`, pgx.Identifier{schema}.Sanitize()), emails, subIDs, statuses, cancels, paid, created)
	if err != nil {
		return fmt.Errorf("subscriptions: plant rows: %w", err)
	}
	bySub := map[string]*rowSpec{}
	for _, r := range p.rows {
		bySub[r.subID] = r
	}
	var id, subID string
	_, err = pgx.ForEachRow(rows, []any{&id, &subID}, func() error {
		bySub[subID].id = id
		p.byID[id] = bySub[subID]
		return nil
	})
	return err
}

// printPlan says what was planted.
func printPlan(out io.Writer, p *plan) {
	fmt.Fprintf(out, "Planted %d subscriptions rows (UUID keys) and their subscriptions in stripetest at %s; drift on %d of them:\n",
		len(p.rows), p.stripe.URL(), minRows()/spacing)
	for _, s := range stories {
		fmt.Fprintf(out, "  %d × %s => %s\n", s.n, s.name, cmpOr(s.kind, "in sync"))
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checker collects what differs from the plan.
type checker struct{ problems []string }

func (c *checker) expect(ok bool, format string, args ...any) {
	if !ok {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

// checkSweep compares the sweep's findings with the plan: every planted row has exactly its
// story's finding, no other row has any, and only the subscriptions missing at Stripe were
// asked for one by one (every other one, canceled or not, came from a status=all list).
func checkSweep(ctx context.Context, c *checker, store *pgstore.Store[subscriptionRow], p *plan, tick reconcile.TickReport, h reconcile.Health) error {
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: job, Limit: 10 * len(p.rows)})
	if err != nil {
		return err
	}
	kinds := map[string][]string{}
	for _, f := range findings {
		kinds[f.RecordID] = append(kinds[f.RecordID], f.Kind)
	}
	missing := 0
	for _, r := range p.rows {
		var want []string
		if r.story != nil && r.story.kind != "" {
			want = []string{r.story.kind}
		}
		if r.story != nil && r.story.missing {
			missing++
		}
		c.expect(slices.Equal(kinds[r.id], want), "row %s (%s): findings %v, planted %v", r.id, storyName(r), kinds[r.id], want)
	}
	c.expect(tick.Wrapped && tick.Scanned == len(p.rows) && tick.Verdicts[reconcile.Unverifiable] == 0,
		"the cycle wrapped %t after %d rows of %d, %d unverifiable", tick.Wrapped, tick.Scanned, len(p.rows), tick.Verdicts[reconcile.Unverifiable])
	c.expect(p.stripe.Requests(stripetest.RetrieveSubscription) == missing,
		"the sweep retrieved %d subscriptions one by one; want %d, the missing ones", p.stripe.Requests(stripetest.RetrieveSubscription), missing)
	c.expect(h.OK, "health: %s", h)
	return nil
}

// checkRepairs compares the table after the repairs with Stripe: a repaired row holds its
// subscription as Stripe does and its finding is resolved by the reconciler; every other row
// is as planted, a finding for a person still open; no command is dead or waiting.
func checkRepairs(ctx context.Context, c *checker, pool *pgxpool.Pool, store *pgstore.Store[subscriptionRow], p *plan) error {
	schema := pgx.Identifier{store.Config().Schema}.Sanitize()
	rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT id::text, status, cancel_at_period_end, paid_through FROM %s.subscriptions`, schema))
	if err != nil {
		return err
	}
	var id, status string
	var cancel bool
	var paid time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &status, &cancel, &paid}, func() error {
		r := p.byID[id]
		want := *r
		if r.story != nil && r.story.repaired {
			sub, _ := p.stripe.Subscription(r.subID)
			want.status, want.cancel, want.paidThrough = string(sub.Status), sub.CancelAtPeriodEnd, sub.CurrentPeriodEnd
		}
		c.expect(status == want.status && cancel == want.cancel && paid.Equal(want.paidThrough),
			"row %s (%s) is %s/%t/%s, want %s/%t/%s", id, storyName(r), status, cancel, paid, want.status, want.cancel, want.paidThrough)
		return nil
	}); err != nil {
		return err
	}
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: job, State: reconcile.FindingsAll, Limit: 10 * len(p.rows)})
	if err != nil {
		return err
	}
	for _, f := range findings {
		r := p.byID[f.RecordID]
		repaired := r != nil && r.story != nil && r.story.repaired
		c.expect(f.Open() != repaired && (f.Open() || f.ResolvedBy == actorReconciler),
			"finding %d (%s on %s): open %t, resolved by %q", f.ID, f.Kind, f.RecordID, f.Open(), f.ResolvedBy)
	}
	var waiting int
	t := store.Tables()
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE status <> 'done'`, pgx.Identifier{t.Schema, t.Prefix + "outbox"}.Sanitize())).Scan(&waiting)
	c.expect(err == nil && waiting == 0, "%d repair commands dead or waiting (%v)", waiting, err)
	return nil
}

func storyName(r *rowSpec) string {
	if r == nil || r.story == nil {
		return "in sync"
	}
	return r.story.name
}

// report prints the problems and returns an error if there are any.
func (c *checker) report(out io.Writer) error {
	if len(c.problems) == 0 {
		fmt.Fprintln(out, "\nEvery planted drift was found once, on its row, and repaired or left for a person as planned.")
		return nil
	}
	fmt.Fprintf(out, "\n%d differences from what was planted:\n  %s\n", len(c.problems), strings.Join(c.problems, "\n  "))
	return fmt.Errorf("subscriptions: %d differences from what was planted", len(c.problems))
}
