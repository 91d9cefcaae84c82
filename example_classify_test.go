package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// refund is the state of a refund on either side: a status and an amount in cents.
type refund struct {
	Status string
	Amount int64
}

func refundStatus(r refund) string { return r.Status }

// refundRules judges refunds by status, and by amount where both sides say it succeeded. The
// first matching rule decides, so the amount check comes before the plain in-sync rule.
func refundRules() (*reconcile.RuleTable[refund, refund], error) {
	succeeded, pending := []string{"succeeded"}, []string{"pending"}
	return reconcile.NewRuleTable(refundStatus, refundStatus,
		reconcile.Rule[refund, refund]{Local: succeeded, External: succeeded,
			When:     func(l, e refund) bool { return l.Amount != e.Amount },
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch"}},
		reconcile.Rule[refund, refund]{Local: succeeded, External: succeeded,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[refund, refund]{Local: pending, External: pending,
			Decision: reconcile.Decision{Verdict: reconcile.InFlight}},
		reconcile.Rule[refund, refund]{Local: pending, External: succeeded,
			When:     func(l, e refund) bool { return l.Amount == e.Amount },
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_refund", Command: "ApplyRefundSucceeded"}},
	)
}

// A rule table over the host's own types: statuses are matched by the table, amounts compared
// by When, and a pair no rule covers is NeedsReview "unexpected:<local>-><external>".
func ExampleNewRuleTable() {
	classifier, err := refundRules()
	if err != nil {
		panic(err)
	}
	for _, pair := range [][2]refund{
		{{"succeeded", 2500}, {"succeeded", 2500}},
		{{"succeeded", 2500}, {"succeeded", 1500}},
		{{"pending", 2500}, {"pending", 2500}},
		{{"pending", 2500}, {"succeeded", 2500}},
		{{"pending", 2500}, {"succeeded", 9900}}, // no rule: a refund of another amount
		{{"succeeded", 2500}, {"failed", 2500}},
	} {
		d := classifier.Classify(pair[0], pair[1])
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-9s %4d | %-9s %4d => %s %s %s",
			pair[0].Status, pair[0].Amount, pair[1].Status, pair[1].Amount, d.Verdict, d.Kind, d.Command)))
	}
	// Output:
	// succeeded 2500 | succeeded 2500 => in_sync
	// succeeded 2500 | succeeded 1500 => needs_review amount_mismatch
	// pending   2500 | pending   2500 => in_flight
	// pending   2500 | succeeded 2500 => repairable missed_refund ApplyRefundSucceeded
	// pending   2500 | succeeded 9900 => needs_review unexpected:pending->succeeded
	// succeeded 2500 | failed    2500 => needs_review unexpected:succeeded->failed
}

// refundsWithAmounts wraps a rule table so that findings, observations and repair commands
// record each side's amount as well as its status: the embedded table still classifies, and
// these methods, being shallower, are the StateNamer that New finds.
type refundsWithAmounts struct {
	*reconcile.RuleTable[refund, refund]
}

func (refundsWithAmounts) LocalState(r refund) string {
	return fmt.Sprintf("%s %d.%02d", r.Status, r.Amount/100, r.Amount%100)
}

func (refundsWithAmounts) ExternalState(r refund) string {
	return fmt.Sprintf("%s %d.%02d", r.Status, r.Amount/100, r.Amount%100)
}

// A classifier that names its states: New takes Config.LocalState and Config.ExternalState from
// it, so the finding records the amounts the rule compared, not only the statuses.
func ExampleStateNamer() {
	table, err := refundRules()
	if err != nil {
		panic(err)
	}
	store := memstore.New[int64, refund](memstore.Options{})
	hourAgo := time.Now().Add(-time.Hour)
	store.Put(memstore.Row[int64, refund]{Key: 1, ExternalID: "re_1", Local: refund{"succeeded", 2500}, UpdatedAt: hourAgo})
	store.Put(memstore.Row[int64, refund]{Key: 2, ExternalID: "re_2", Local: refund{"succeeded", 2500}, UpdatedAt: hourAgo})
	external := map[string]refund{"re_1": {"succeeded", 2500}, "re_2": {"succeeded", 1500}}

	_, err = reconcile.RunBatch(context.Background(), reconcile.Config[refund, refund]{
		Job: "refunds", Source: store, Sink: store,
		Gateway: reconcile.GatewayFunc[refund](func(_ context.Context, id string) (refund, error) {
			return external[id], nil
		}),
		Classifier: refundsWithAmounts{table},
	})
	if err != nil {
		panic(err)
	}
	findings, err := store.ListFindings(context.Background(), reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("record %s: %s (ours %s, theirs %s)\n", f.RecordID, f.Kind, f.Local, f.External)
	}
	obs, _ := store.Observation("refunds", "1")
	fmt.Println("record 1 last seen as", obs.External)
	// Output:
	// record 2: amount_mismatch (ours succeeded 25.00, theirs succeeded 15.00)
	// record 1 last seen as succeeded 25.00
}
