package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// demoSettle is the events feed's settle time in the demo: events younger than this are left
// for the next run. Production keeps stripeadapter.DefaultEventSettle, a minute: Stripe lists a
// new event a moment after it happens, and the checkpoint moves past everything the lane has
// read, so an event listed late would be skipped for good; and a minute lets the webhook, which
// usually arrives within seconds, apply the change first, so that the lane does not queue a
// repair for every payment whose webhook is merely on its way. stripetest lists events at once
// and the demo sends no webhooks, so two seconds keep the run short without changing what it
// finds.
const demoSettle = 2 * time.Second

// demoTimes are the lanes' times against stripetest: the last 7 days, less the last 10 minutes,
// since our row for a PaymentIntent created since may not be committed yet.
var demoTimes = laneTimes{settle: demoSettle, window: stripeadapter.DefaultReverseWindow, grace: reconcile.DefaultGrace, young: spell(youngAge)}

// laneResults is what the lanes did, from their reports, the request log and the tables.
type laneResults struct {
	times laneTimes // the lanes'
	// sharedAccount: the Stripe account holds other objects and events than the run's (real
	// mode), so a page of the events log or of the reverse scan's list holds more than what
	// was planted, and the lanes' calls are only bounded below by it.
	sharedAccount bool

	// anchor is the events lane's first run, before the sweep, and anchorCalls its requests.
	anchor      cycle
	anchorCalls int
	// events is the events lane's run after the webhooks were lost, eventsCalls its event
	// list requests and eventsOtherCalls its others (the refunds and disputes it reads);
	// missedFound counts the payments changed at Stripe after the sweep that have exactly their
	// story's open finding, with its repair command if it has one; detect is the time from the
	// last change at Stripe to the run's end, its findings committed.
	events           cycle
	eventsCalls      int
	eventsOtherCalls int
	missedFound      int
	detect           time.Duration
	// reverse is the reverse scan's pass, reverseCalls its list requests and reverseOtherCalls
	// its others (the disputes of disputed charges); orphansFound counts the
	// planted Stripe-only PaymentIntents reported missing_locally, otherMissing any other
	// PaymentIntent reported so (the young one would be).
	reverse                    cycle
	reverseCalls               int
	reverseOtherCalls          int
	orphansFound, otherMissing int

	// After both lanes: the payments whose open findings are exactly their story's, and the
	// others; the job's status and its health, the repair commands by event type, and the open
	// findings only a person can resolve, up to reviewShown of each kind.
	asPlanted, notAsPlanted int
	status                  reconcile.Status
	health                  reconcile.Health
	commands                map[string]int
	review                  map[string][]reconcile.Finding
	reviewOpen              int
}

// stripeLog is a log of the requests made to Stripe: stripetest's own, or in real mode the one
// the gateway's HTTP client keeps (demo_reqlog.go).
type stripeLog interface {
	Log() []stripetest.Request
	ResetLog()
	Requests(stripetest.Route) int
}

// anchorEvents runs the events lane before the sweep. With no checkpoint yet, its first step
// only takes the newest event as its checkpoint: what happened before is the sweep's to find.
func anchorEvents(ctx context.Context, out io.Writer, l lanes, reqs stripeLog) (laneResults, error) {
	lr := laneResults{times: l.times}
	var err error
	reqs.ResetLog()
	if lr.anchor, err = untilWrapped(ctx, l.events, nil); err != nil {
		return lr, err
	}
	lr.anchorCalls = reqs.Requests(stripetest.ListEvents)
	reqs.ResetLog() // the sweep's requests are counted on their own
	fmt.Fprintf(out, "\nEvents lane (job %s, lane %s): anchored at Stripe's newest event, %d API call; the events before it\n",
		job, laneEvents, lr.anchorCalls)
	fmt.Fprintf(out, "are the sweep's to find, those after it the lane's.\n")
	return lr, nil
}

// runLanes loses webhooks for real, then runs the events lane until it has caught up and the
// reverse scan for one full pass, printing what each did, and reads back the job's state.
func runLanes(ctx context.Context, out io.Writer, be backend, srv *stripetest.Server,
	p plan, l lanes, lr *laneResults) error {
	lost := p.where(func(s *story) bool { return s.later != "" })
	changedAt, err := loseWebhooks(srv, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nLost webhooks: %d payments the sweep found in sync, awaiting payment, succeed at stripetest now;\n", len(lost))
	fmt.Fprintf(out, "Stripe records payment_intent.succeeded for each, the webhooks never arrive, and the rows stay pending.\n")
	printMoneyAfter(out, p)
	if err := runEventsLane(ctx, out, be, srv, p, l, lr, changedAt, demoSettle); err != nil {
		return err
	}
	addCheckoutUnderWay(srv, p)
	return runReverseScan(ctx, out, be, srv, p, l, lr)
}

// runEventsLane waits wait, for the events since changedAt to settle, then runs the events lane
// until it has caught up, and prints what it did.
func runEventsLane(ctx context.Context, out io.Writer, be backend, reqs stripeLog,
	p plan, l lanes, lr *laneResults, changedAt time.Time, wait time.Duration) error {
	changed := p.where(func(s *story) bool { return s.finder() == laneEvents })
	var err error
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
	}
	reqs.ResetLog()
	if lr.events, err = untilWrapped(ctx, l.events, nil); err != nil {
		return err
	}
	lr.detect = time.Since(changedAt)
	lr.eventsCalls = reqs.Requests(stripetest.ListEvents)
	lr.eventsOtherCalls = len(reqs.Log()) - lr.eventsCalls
	found, err := be.openFindings(ctx, externalIDs(changed))
	if err != nil {
		return err
	}
	lr.missedFound, _ = asPlanted(changed, found)
	printEvents(out, p, *lr)
	return nil
}

// runReverseScan runs the reverse scan for one full pass, prints what it did, and reads back the
// job's state.
func runReverseScan(ctx context.Context, out io.Writer, be backend, reqs stripeLog,
	p plan, l lanes, lr *laneResults) error {
	var err error
	reqs.ResetLog()
	if lr.reverse, err = untilWrapped(ctx, l.reverse, nil); err != nil {
		return err
	}
	lr.reverseCalls = reqs.Requests(stripetest.ListPaymentIntents)
	lr.reverseOtherCalls = len(reqs.Log()) - lr.reverseCalls
	if lr.orphansFound, lr.otherMissing, err = missingLocally(ctx, be.store(), p); err != nil {
		return err
	}
	printReverse(out, p, *lr)
	return collectLanes(ctx, be, p, lr)
}

// findingsOf reads the open findings of the job about the payments of the PaymentIntents $2,
// with the number of repair commands each queued.
const findingsOf = `SELECT p.external_id, f.kind,
		(SELECT count(*) FROM reconcile_demo.reconcile_outbox AS o WHERE o.finding_id = f.id)
	FROM reconcile_demo.payments AS p
	JOIN reconcile_demo.reconcile_findings AS f ON f.job = $1 AND f.record_id = p.id::text AND f.resolved_at IS NULL
	WHERE p.external_id = ANY($2)`

// openFinding is an open finding about a payment, and the repair commands it queued.
type openFinding struct {
	kind     string
	commands int
}

// openFindings reads the open findings of the job about the payments of the PaymentIntents ids,
// by PaymentIntent.
func openFindings(ctx context.Context, pool *pgxpool.Pool, schema string, ids []string) (map[string][]openFinding, error) {
	rows, err := pool.Query(ctx, inSchema(schema, findingsOf), job, ids)
	if err != nil {
		return nil, fmt.Errorf("payments: read the payments' findings: %w", err)
	}
	found := map[string][]openFinding{}
	var id string
	var f openFinding
	if _, err := pgx.ForEachRow(rows, []any{&id, &f.kind, &f.commands}, func() error {
		found[id] = append(found[id], f)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("payments: read the payments' findings: %w", err)
	}
	return found, nil
}

// asPlanted counts the payments among pays whose open findings in found are exactly their
// story's: one of its kind with one repair command if it queues one, or none; and the others.
func asPlanted(pays []payment, found map[string][]openFinding) (planted, other int) {
	for _, pay := range pays {
		fs, s := found[pay.externalID], pay.story
		want := s.kind != ""
		if !want && len(fs) == 0 || want && len(fs) == 1 && fs[0].kind == s.kind && fs[0].commands == b2i(s.command != "") {
			planted++
		} else {
			other++
		}
	}
	return planted, other
}

// missingLocally reads the open missing_locally findings, whose record id is the PaymentIntent
// id, and counts those of the planted Stripe-only PaymentIntents and the others.
func missingLocally(ctx context.Context, store reconcile.Reviewer, p plan) (planted, other int, err error) {
	want := map[string]bool{}
	for _, id := range p.orphans() {
		want[id] = true
	}
	for after := int64(0); ; {
		page, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: job, Kind: reconcile.KindMissingLocally, AfterID: after, Limit: 500})
		if err != nil {
			return planted, other, err
		}
		if len(page) == 0 {
			return planted, other, nil
		}
		for _, f := range page {
			if want[f.RecordID] {
				planted++
			} else {
				other++
			}
		}
		after = page[len(page)-1].ID
	}
}

// collectLanes reads into lr the job's state after both lanes.
func collectLanes(ctx context.Context, be backend, p plan, lr *laneResults) error {
	found, err := be.openFindings(ctx, externalIDs(p.payments))
	if err != nil {
		return err
	}
	lr.asPlanted, lr.notAsPlanted = asPlanted(p.payments, found)
	if lr.status, lr.health, err = jobHealth(ctx, be.store()); err != nil {
		return err
	}
	if lr.commands, err = be.commands(ctx); err != nil {
		return err
	}
	lr.review, lr.reviewOpen, err = readReview(ctx, be.store())
	return err
}
