package pgshard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// laneFirst is a gateway that obtains its answer, then runs fn once before returning it: the
// answer is older than anything fn commits.
type laneFirst struct {
	*reconciletest.Gateway
	once sync.Once
	fn   func()
}

func (g *laneFirst) Fetch(ctx context.Context, id string) (string, error) {
	s, err := g.Gateway.Fetch(ctx, id)
	g.once.Do(g.fn)
	return s, err
}

// A sharded worker's commit leaves alone a row whose answer is older than the one a lane of the
// job committed meanwhile, as the store's own commits do: no second finding, no second command,
// the lane's observation kept, the row counted changed.
func TestAShardedCommitOfAnAnswerOlderThanALanesLeavesTheRow(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, 1)
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "partly_refunded"})
	var laneRep reconcile.Report
	var laneErr error
	hook := &laneFirst{Gateway: gw, fn: func() {
		gw.Set("pi_1", "refunded")
		l, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "events", Matcher: s, Sink: s,
			Classifier: reconciletest.Money(), Feed: reconciletest.NewFeed(map[string]reconcile.FeedPage[string]{
				"": {Next: "p1", Objects: reconciletest.Objects("pi_1", "refunded")}})})
		if err != nil {
			laneErr = err
			return
		}
		laneRep, laneErr = l.RunBatch(context.Background())
	}}
	cfg := shardtest.EngineConfig(hook, 10)
	cfg.Classifier = reconciletest.Money()
	tick, err := pgshard.RunShard(context.Background(), shardtest.NewJob(t, s, pgshard.Config{Shards: 1}), cfg, reconcile.TickBudget{})
	if err != nil || laneErr != nil {
		t.Fatalf("shard tick: %v; lane step: %v", err, laneErr)
	}
	if laneRep.NewFindings != 1 || laneRep.NewCommands != 1 {
		t.Fatalf("lane step %+v; want refund_missed found, with its command", laneRep)
	}
	if !tick.Leased || tick.Tick.Changed != 1 || tick.Tick.NewFindings != 0 || tick.Tick.NewCommands != 0 {
		t.Errorf("shard tick %+v; want row 1 counted changed (its answer is older than the lane's), nothing new", tick)
	}
	var open, all, cmds int
	var observed string
	if err := pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FILTER (WHERE resolved_at IS NULL AND kind = 'refund_missed') FROM reconcile_findings),
			(SELECT count(*) FROM reconcile_findings), (SELECT count(*) FROM reconcile_outbox),
			(SELECT external_state FROM reconcile_observations WHERE job = 'sweep' AND record_id = '1')`).Scan(&open, &all, &cmds, &observed); err != nil {
		t.Fatal(err)
	}
	if open != 1 || all != 1 || cmds != 1 || observed != "refunded" {
		t.Errorf("%d findings (%d open refund_missed), %d commands, observed %q; want the lane's finding and command alone, refunded",
			all, open, cmds, observed)
	}
}
