package main

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// testSecret is the webhook signing secret of the tests' handlers.
const testSecret = "whsec_test_secret_do_not_log"

// fixture is a schema of its own (so tests using one may run in parallel) holding payments
// that all tell one story, reconciled for one cycle: their findings are open and their repair
// commands queued, as the run leaves them before its repairs.
type fixture struct {
	pool   *pgxpool.Pool
	schema string
	store  *pgstore.Store[paymentRow]
	d      *pgoutbox.Dispatcher
	stats  *repairStats
	hook   *webhookHandler
	srv    *stripetest.Server
	// gateway reads payments at srv, as the webhook handler and the dispatcher do.
	gateway paymentReader
	// rec is the sweep that found the story's drift, to sweep again.
	rec *reconcile.Reconciler[paymentRow, *stripepolicy.Payment]
	p   plan
}

// newFixture returns a fixture of n payments telling the first story that queues command.
func newFixture(t *testing.T, command string, n int) *fixture {
	t.Helper()
	i := slices.IndexFunc(stories, func(s story) bool { return s.command == command })
	if i < 0 {
		t.Fatalf("no story queues %s", command)
	}
	return newFixtureOf(t, &stories[i], n)
}

// newFixtureOf returns a fixture of n payments telling story s, which the sweep must find as a
// finding of its kind, with its repair command if it has one.
func newFixtureOf(t *testing.T, s *story, n int) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{stats: &repairStats{}}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(s.name))))
	for k := range n {
		f.p.payments = append(f.p.payments, payment{
			orderID:    fmt.Sprintf("ord_%06d", k+1),
			externalID: paymentIntentID(rng),
			amount:     1000 + 100*int64(k),
			createdAgo: 2*time.Hour - time.Duration(k)*time.Second,
			updatedAgo: time.Hour, // outside the grace period
			story:      s,
		})
	}

	f.pool, f.schema = pgtest.PoolSchema(t)
	createdAt, err := setUp(ctx, f.pool, f.schema, f.p)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newStripe(f.p, createdAt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if f.store, err = newStore(f.pool, f.schema); err != nil {
		t.Fatal(err)
	}
	gateway, err := newGateway(srv)
	if err != nil {
		t.Fatal(err)
	}
	if f.rec, err = reconcilerOver(f.store, gateway, 100, nil); err != nil {
		t.Fatal(err)
	}
	f.srv, f.gateway = srv, gateway
	if _, err := runCycle(ctx, io.Discard, f.rec); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	if f.d, err = newDispatcher(f.pool, f.schema, f.store, f.gateway, f.stats, logger); err != nil {
		t.Fatal(err)
	}
	f.hook = newWebhookHandler(f.pool, f.store, f.gateway, testSecret, logger)

	for _, pay := range f.p.payments {
		st := f.state(t, pay.externalID)
		commands := b2i(s.command != "")
		if len(st.findings) != 1 || !st.findings[0].Open() || st.findings[0].Kind != s.kind || len(st.commands) != commands ||
			commands == 1 && st.commands[0].status != "pending" {
			t.Fatalf("payment %s after the cycle: %+v, want one open %s finding and %d pending command", st.id, st, s.kind, commands)
		}
	}
	return f
}

// rowState is what the tables hold about one payment.
type rowState struct {
	id       string
	status   string
	refunded int64    // amount_refunded
	dispute  string   // dispute_status, "" for NULL
	ledger   []string // the entry, amount and actor of each ledger row: "refund -500 reconciler"
	findings []reconcile.Finding
	commands []commandState
}

// commandState is one outbox row, as the dispatcher left it.
type commandState struct {
	status            string
	attempt, failures int
	lastError         string
}

// state reads what the tables hold about the payment of a PaymentIntent.
func (f *fixture) state(t *testing.T, intentID string) rowState {
	t.Helper()
	ctx := t.Context()
	var st rowState
	var id int64
	err := f.pool.QueryRow(ctx, inSchema(f.schema, `SELECT id, status, amount_refunded, coalesce(dispute_status, '')
		FROM reconcile_demo.payments WHERE external_id = $1`), intentID).Scan(&id, &st.status, &st.refunded, &st.dispute)
	if err != nil {
		t.Fatalf("read payment %s: %v", intentID, err)
	}
	st.id = strconv.FormatInt(id, 10)
	rows, _ := f.pool.Query(ctx, inSchema(f.schema, `SELECT entry || ' ' || amount || ' ' || applied_by
		FROM reconcile_demo.ledger WHERE payment_id = $1 ORDER BY id`), id)
	if st.ledger, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	if st.findings, err = f.store.ListFindings(ctx, reconcile.FindingQuery{RecordID: st.id, State: reconcile.FindingsAll}); err != nil {
		t.Fatal(err)
	}
	rows, _ = f.pool.Query(ctx, inSchema(f.schema, `SELECT status, attempt, failures, coalesce(last_error, '')
		FROM reconcile_demo.reconcile_outbox WHERE aggregate_id = $1 ORDER BY id`), st.id)
	st.commands, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (commandState, error) {
		var c commandState
		err := row.Scan(&c.status, &c.attempt, &c.failures, &c.lastError)
		return c, err
	})
	if err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	return st
}

// assertAppliedOnce checks that the repair of pay was applied exactly once: its status and
// refunds as pay.repaired says, its dispute dispute, one ledger row by actor if the repair
// moves money, its one finding resolved as repaired by actor, and its one repair command done
// at its first attempt.
func assertAppliedOnce(t *testing.T, pay payment, st rowState, dispute, actor string) {
	t.Helper()
	want := pay.repaired()
	if st.status != want.status || st.refunded != want.refunded || st.dispute != dispute {
		t.Errorf("payment %s is %s, refunded %d, dispute %q; want %s, refunded %d, dispute %q",
			st.id, st.status, st.refunded, st.dispute, want.status, want.refunded, dispute)
	}
	var wantLedger []string
	switch pay.story.command {
	case stripepolicy.CommandApplyPaymentSucceeded:
		wantLedger = []string{fmt.Sprintf("payment_succeeded %d %s", pay.amount, actor)}
	case stripepolicy.CommandApplyRefund:
		wantLedger = []string{fmt.Sprintf("refund %d %s", pay.refundedHere()-pay.refund(), actor)}
	}
	if !slices.Equal(st.ledger, wantLedger) {
		t.Errorf("payment %s has ledger rows %q, want %q", st.id, st.ledger, wantLedger)
	}
	if len(st.findings) != 1 {
		t.Fatalf("payment %s has %d findings, want 1: %+v", st.id, len(st.findings), st.findings)
	}
	if f := st.findings[0]; f.Open() || f.Resolution != reconcile.ResolutionRepaired || f.ResolvedBy != actor {
		t.Errorf("payment %s: finding open %v, resolved as %q by %q, want resolved as %q by %q",
			st.id, f.Open(), f.Resolution, f.ResolvedBy, reconcile.ResolutionRepaired, actor)
	}
	wantCommands := []commandState{{status: commandDone, attempt: 1}}
	if !slices.Equal(st.commands, wantCommands) {
		t.Errorf("payment %s: commands %+v, want %+v", st.id, st.commands, wantCommands)
	}
}

// exec runs a statement on the fixture's schema, as a person or another service would.
func (f *fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := f.pool.Exec(t.Context(), inSchema(f.schema, sql), args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
