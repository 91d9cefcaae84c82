package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// TestMain runs the tests, or a worker process when run starts this test binary as one.
func TestMain(m *testing.M) {
	maybeWorker()
	os.Exit(m.Run())
}

func TestRunSpreadsShardTicksOverWorkerProcessesAndFindsThePlantedDrift(t *testing.T) {
	// A schema of the test's own, dropped when it ends: tests run side by side, and beside the
	// example run by hand.
	dbURL, schema := pgtest.URL(t), pgtest.Schema(t)
	var out bytes.Buffer
	err := run(t.Context(), &out, options{DatabaseURL: dbURL, Schema: schema, Rows: 4000, Workers: 2, Slots: 2, Shards: 4,
		Cycles: 2, Rate: 200, Latency: 5 * time.Millisecond, Interval: time.Second, Timeout: 3 * time.Minute})
	t.Logf("output:\n%s", out.String())
	// run fails if a planted difference was missed or found twice, a row never verified, or
	// one process did all the work.
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Started 2 worker processes",
		"cycle 2 completed",
		"Findings: 100 missed_success (planted 100), 40 for review (planted 40); repair commands queued: 100",
		"Rows verified at least once: 4000 of 4000",
		"Health: payments-sweep: OK",
		"Every row was verified and every planted difference found once",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// fakeClient is a River client whose graceful stop does not finish.
type fakeClient struct{ stopped, cancelled bool }

func (c *fakeClient) Stop(ctx context.Context) error {
	c.stopped = true
	<-ctx.Done()
	return ctx.Err()
}

func (c *fakeClient) StopAndCancel(context.Context) error {
	c.cancelled = true
	return nil
}

func TestAWorkerWhoseGracefulStopRunsOutCancelsItsTicks(t *testing.T) {
	c := &fakeClient{}
	if err := stopClient(c, 10*time.Millisecond); err != nil || !c.stopped || !c.cancelled {
		t.Fatalf("stopClient: %v (stopped %v, cancelled %v); want a graceful stop, then StopAndCancel", err, c.stopped, c.cancelled)
	}
}

func TestStuckTicksAreRescuedJustAfterTheirTimeout(t *testing.T) {
	if rescueAfter < tickTimeout || rescueAfter > tickTimeout+time.Minute {
		t.Fatalf("RescueStuckJobsAfter %v, want just over the tick timeout %v (River's default is an hour)", rescueAfter, tickTimeout)
	}
}
