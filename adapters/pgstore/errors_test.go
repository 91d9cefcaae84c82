package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

type noFeed struct{}

func (noFeed) Next(context.Context, string, func(context.Context) error) (reconcile.FeedPage[string], error) {
	return reconcile.FeedPage[string]{End: true}, nil
}

// Each layer names itself once: pgstore says which operation failed, the core which job or
// lane, and neither repeats the other.
func TestErrorsNameEachLayerOnce(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	laneExec(t, pool, `DROP TABLE reconcile_lanes`, `DROP TABLE reconcile_cursors CASCADE`)
	classify := reconcile.ClassifierFunc[string, string](func(string, string) reconcile.Decision {
		return reconcile.Decision{Verdict: reconcile.InSync}
	})
	ctx := context.Background()

	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "payments-sweep", Lane: "events",
		Feed: noFeed{}, Matcher: s, Sink: s, Classifier: classify})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lane.RunBatch(ctx)
	// A missing table of the reconciler's adds the advice to migrate between the operation and
	// the database's words.
	const lanePrefix = "reconcile: lane payments-sweep/events: pgstore: read lane position: the reconciler's tables "
	if err == nil || !strings.HasPrefix(err.Error(), lanePrefix) || strings.Count(err.Error(), "payments-sweep") != 1 ||
		strings.Count(err.Error(), "pgstore: ") != 1 || !strings.HasSuffix(err.Error(), `: ERROR: relation "reconcile_lanes" does not exist (SQLSTATE 42P01)`) {
		t.Errorf("lane error %q; want %q, the advice, then the database's words", err, lanePrefix)
	}

	r, err := reconcile.New(reconcile.Config[string, string]{Job: "payments-sweep", Source: s, Sink: s, Classifier: classify,
		Gateway: reconcile.GatewayFunc[string](func(context.Context, string) (string, error) { return "", nil })})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.RunBatch(ctx)
	const jobPrefix = "reconcile: job payments-sweep: pgstore: read cursor: the reconciler's tables "
	if err == nil || !strings.HasPrefix(err.Error(), jobPrefix) || strings.Count(err.Error(), "payments-sweep") != 1 ||
		strings.Count(err.Error(), "pgstore: ") != 1 || !strings.HasSuffix(err.Error(), `: ERROR: relation "reconcile_cursors" does not exist (SQLSTATE 42P01)`) {
		t.Errorf("sweep error %q; want %q, the advice, then the database's words", err, jobPrefix)
	}
}
