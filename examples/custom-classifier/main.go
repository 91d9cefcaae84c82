package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// Job is the reconciliation job's name.
const Job = "subscriptions"

func main() {
	noKey := flag.Bool("no-idempotency-key", false,
		"push seat counts without an Idempotency-Key, to see what the key prevents (the checks then fail)")
	flag.Parse()
	res, err := run(context.Background(), os.Stdout, options{IdempotencyKeys: !*noKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-classifier:", err)
		os.Exit(1)
	}
	if !res.OK() {
		os.Exit(1)
	}
}

// options configures a run.
type options struct {
	// IdempotencyKeys sends IdempotencyKey with every seat push.
	IdempotencyKeys bool
}

// result is what a run did, for the checks and the tests.
type result struct {
	Plants         []plant
	Cycle1, Cycle2 reconcile.TickReport
	// Findings are every finding after the second cycle, open and resolved.
	Findings []reconcile.Finding
	Commands []memstore.QueuedCommand
	Attempts []Attempt
	// Changes are the seat updates the provider applied; Requests the update requests it
	// received per subscription.
	Changes  []Change
	Requests map[string]int
	// Ours and Theirs are both sides after the repairs, by record id and subscription id.
	Ours   map[string]Subscription
	Theirs map[string]Remote
	// Unverified are the rows the provider never confirmed.
	Unverified []string
	Checks     []check
}

// OK reports whether every check passed.
func (r result) OK() bool {
	for _, c := range r.Checks {
		if c.Err != nil {
			return false
		}
	}
	return len(r.Checks) > 0
}

// run reconciles the demo's subscriptions, applies the repairs, reconciles again, checks the
// outcome and prints a summary to w. Its error is for a run that could not be carried out;
// checks that fail are in the result.
func run(ctx context.Context, w io.Writer, opts options) (result, error) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	res := result{Plants: plants(), Requests: map[string]int{}, Ours: map[string]Subscription{}, Theirs: map[string]Remote{}}

	// Both sides: our rows in memory, the provider's objects behind its HTTP API.
	provider := NewProvider()
	defer provider.Close()
	store := memstore.New[int64, Subscription](memstore.Options{Now: clk.Now, AggregateType: "subscription"})
	for _, p := range res.Plants {
		updated := clk.Now().Add(-24 * time.Hour)
		if p.ChangedNow {
			updated = clk.Now().Add(-time.Minute)
		}
		store.Put(memstore.Row[int64, Subscription]{Key: p.Key, ExternalID: p.subID(), Local: p.Ours,
			CreatedAt: clk.Now().Add(-30 * 24 * time.Hour), UpdatedAt: updated})
		if p.Theirs.Status != "" {
			r := p.Theirs
			r.ID = p.subID()
			provider.Add(r)
		}
		if p.ReadsFail {
			provider.FailReads(p.subID())
		}
		if p.LoseFirstAnswer {
			provider.LoseNextUpdateAnswer(p.subID())
		}
	}

	classifier, err := NewClassifier()
	if err != nil {
		return res, err
	}
	billing := NewBilling(provider.URL())
	rec, err := reconcile.New(reconcile.Config[Subscription, Remote]{
		Job: Job, Source: store, Sink: store, Gateway: billing, Classifier: classifier,
		BatchSize: 5, Concurrency: 4, // Grace: the default 10 minutes
	})
	if err != nil {
		return res, err
	}

	fmt.Fprintf(w, "%d subscriptions, ours in memory, the billing provider's over HTTP.\n\n", len(res.Plants))
	if res.Cycle1, err = cycle(ctx, rec); err != nil {
		return res, err
	}
	printCycle(w, "cycle 1", res.Cycle1)
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		return res, err
	}
	printFindings(w, findings)

	// The repairs: each command's handler makes the side that is not the truth catch up.
	repairer := &Repairer{store: store, billing: billing, classifier: classifier, now: clk.Now,
		withKeys: opts.IdempotencyKeys, maxAttempts: 3, done: map[int64]bool{}}
	repairer.Apply(ctx)
	res.Attempts = repairer.Attempts()
	res.Changes = provider.Changes()
	printRepairs(w, res.Attempts, res.Changes)

	// Past the grace period of the rows the repairs changed, the next cycle checks the result.
	clk.Advance(15 * time.Minute)
	if res.Cycle2, err = cycle(ctx, rec); err != nil {
		return res, err
	}
	printCycle(w, "cycle 2", res.Cycle2)

	if res.Findings, err = store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsAll}); err != nil {
		return res, err
	}
	res.Commands = store.Commands()
	for _, p := range res.Plants {
		if _, ok := store.Observation(Job, fmt.Sprint(p.Key)); !ok {
			res.Unverified = append(res.Unverified, fmt.Sprint(p.Key))
		}
		row, _ := store.Get(p.Key)
		res.Ours[fmt.Sprint(p.Key)] = row.Local
		if s, ok := provider.Subscription(p.subID()); ok {
			res.Theirs[p.subID()] = s
		}
		res.Requests[p.subID()] = provider.UpdateRequests(p.subID())
	}
	printUnverified(w, res.Unverified)
	printReview(w, res.Findings)
	res.Checks = checks(res)
	printChecks(w, res.Checks)
	return res, nil
}

// cycle runs batches until the cursor wraps: one full pass over the rows. A host runs
// reconcile.RunTick from its scheduler, or a reconcile.Runner, instead.
func cycle(ctx context.Context, rec *reconcile.Reconciler[Subscription, Remote]) (reconcile.TickReport, error) {
	t, err := reconcile.RunTick(ctx, rec, reconcile.TickBudget{})
	if err == nil && !t.Wrapped {
		err = fmt.Errorf("the cycle did not complete: %+v", t)
	}
	return t, err
}
