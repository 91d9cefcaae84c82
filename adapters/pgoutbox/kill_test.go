package pgoutbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// TestMain runs the tests, or, in the child process that
// TestADispatcherKilledMidHandlerIsReplacedAfterItsLeaseAndLeavesNoTrace starts, a dispatcher
// that hangs mid-handler until it is killed.
func TestMain(m *testing.M) {
	if url := os.Getenv("RECONCILE_DISPATCH_CHILD_URL"); url != "" {
		if err := hangMidHandler(url, os.Getenv("RECONCILE_DISPATCH_CHILD_SCHEMA")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hangMidHandler claims the command, writes its effect in the handler's transaction, and hangs
// there, transaction open, until the process is killed.
func hangMidHandler(url, schema string) error {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Owner: "child", Lease: time.Second, Workers: 1})
	if err != nil {
		return err
	}
	if err := d.Handle("Apply", func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
		if err := recordEffect(ctx, tx, del); err != nil {
			return err
		}
		select {}
	}); err != nil {
		return err
	}
	_, err = d.Work(ctx)
	return err
}

func TestADispatcherKilledMidHandlerIsReplacedAfterItsLeaseAndLeavesNoTrace(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (seq bigint GENERATED ALWAYS AS IDENTITY, command_id bigint NOT NULL,
		aggregate_id text NOT NULL, attempt bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "RECONCILE_DISPATCH_CHILD_URL="+pgtest.URL(t), "RECONCILE_DISPATCH_CHILD_SCHEMA="+schema)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	// Wait until the child holds the command and has written its (uncommitted) effect.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child never claimed the command")
		}
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reconcile_outbox WHERE status = 'running' AND lease_owner = 'child')
			AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'effects' AND l.mode = 'RowExclusiveLock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killedAt := time.Now()

	survivor := newDispatcher(t, pool, pgoutbox.Config{Owner: "survivor"}, map[string]pgoutbox.Handler{"Apply": recordEffect})
	drain(t, pool, survivor)
	var total, fromChild int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE attempt = 1) FROM effects`).Scan(&total, &fromChild); err != nil {
		t.Fatal(err)
	}
	c := command(t, pool, ids[0])
	if c.Status != "done" || c.Attempt != 2 || total != 1 || fromChild != 0 {
		t.Fatalf("command %+v, %d effects (%d from the killed child); want done on attempt 2 with one effect, none from the child", c, total, fromChild)
	}
	t.Logf("taken over %v after the kill (lease 1s)", time.Since(killedAt).Round(10*time.Millisecond))
}
