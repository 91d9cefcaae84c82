package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"reflect"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The stripe subcommand with -money: the money policy over intents whose charges carry
// refunds and disputes, run in bulk and one by one over the same Stripe account and the same
// payments table, a typed row in PostgreSQL, which must agree on every verdict and finding.

// moneyMix describes the mix moneyScenario makes, for the JSON line.
const moneyMix = "statuses as the stripe bench's (90% paid×succeeded, 4% pending×succeeded, 3% paid×canceled, 2% pending×processing, 1% paid×succeeded); " +
	"currencies 88% USD, 10% JPY, 2% KWD; of captured payments: 2.5% partly and 2% fully refunded as the row records, 0.5% partly and 0.5% fully " +
	"refunded in the Dashboard, 0.1% a refund that failed after succeeding, 0.1% captured in part, 0.05% disputed (every status once per 20,000, 4 in 10 still open; half recorded by the row); " +
	"of all: 0.05% amount and 0.05% currency mismatches"

// moneyTable is the -money bench's payments table: the seed's, with the money.
const moneyTable = "money_payments"

const moneyDDL = `CREATE TABLE %s (
	id                       bigint PRIMARY KEY,
	order_id                 text NOT NULL,
	stripe_payment_intent_id text NOT NULL UNIQUE,
	status                   text NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
	amount_minor             bigint NOT NULL,
	currency                 text NOT NULL,
	amount_refunded          bigint NOT NULL DEFAULT 0,
	dispute_status           text,
	created_at               timestamptz NOT NULL,
	updated_at               timestamptz NOT NULL
)`

// moneyPayment is the table's row as the store reads it; a NULL dispute status is no dispute.
type moneyPayment struct {
	Status   string  `db:"status"`
	Amount   int64   `db:"amount_minor"`
	Currency string  `db:"currency"`
	Refunded int64   `db:"amount_refunded"`
	Dispute  *string `db:"dispute_status"`
}

func (p moneyPayment) view() stripepolicy.LocalPayment {
	lp := stripepolicy.LocalPayment{Status: p.Status, Amount: p.Amount, Currency: p.Currency, AmountRefunded: p.Refunded}
	if p.Dispute != nil {
		lp.DisputeStatus = *p.Dispute
	}
	return lp
}

// moneyRow is one bench row's money, on both sides.
type moneyRow struct {
	local       stripepolicy.LocalPayment
	pi          stripetest.PaymentIntent
	refund      int64 // refunded at Stripe; 0 none
	refundFails bool  // the refund fails after succeeding
	dispute     stripe.DisputeStatus
}

// benchDisputes are the statuses the bench's disputes take: four still open.
var benchDisputes = []stripe.DisputeStatus{"needs_response", "under_review", "won", "lost", "warning_needs_response",
	"warning_closed", "lost", "won", "under_review", "prevented"}

// moneyScenario is row n's money: the status pair of stripeMix, an amount and currency, and at
// most one money event, spread over the rows by a multiplicative hash so that none clusters in
// a batch.
func moneyScenario(n int) moneyRow {
	local, ext := stripeMix(n)
	amount, currency := int64(1000+n%5000), "usd"
	switch {
	case n%10 == 3:
		amount, currency = int64(500+n%20000), "jpy"
	case n%50 == 17:
		amount, currency = int64(5000+n%9000), "kwd"
	}
	r := moneyRow{
		local: stripepolicy.LocalPayment{Status: local, Amount: amount, Currency: currency},
		pi:    stripetest.PaymentIntent{Status: ext, Amount: amount, Currency: currency},
	}
	captured := ext == stripe.PaymentIntentStatusSucceeded
	switch h := n * 7919 % 10000; {
	case h < 5 && captured:
		// Each of h's values falls on two rows of 20,000: every status once, the second half
		// already recorded by the row (in sync, though an open one is still read every cycle).
		i := (2*h + (n-1)/10000) % len(benchDisputes)
		r.dispute = benchDisputes[i]
		if i >= len(benchDisputes)/2 {
			r.local.DisputeStatus = string(r.dispute)
		}
	case h < 15 && captured:
		r.pi.AmountReceived = amount * 6 / 10
	case h < 25 && captured:
		r.refund, r.refundFails, r.local.AmountRefunded = amount, true, amount
	case h >= 25 && h < 30:
		r.local.Amount += 100
	case h >= 30 && h < 35:
		r.local.Currency = "jpy"
		if currency == "jpy" {
			r.local.Currency = "usd"
		}
	case h >= 35 && h < 85 && captured:
		r.refund = amount
	case h >= 85 && h < 135 && captured:
		r.refund = amount / 3
	case h >= 135 && h < 335 && captured:
		r.refund, r.local.AmountRefunded = amount, amount
	case h >= 335 && h < 585 && captured:
		r.refund, r.local.AmountRefunded = amount/4, amount/4
	}
	return r
}

// moneyRun is what one cycle of the money policy did.
type moneyRun struct {
	calls, lists, retrieves, disputes, reported, commands int
	verdicts                                              map[string]int
	findings                                              map[findingKey]string // detail and diffs
	kinds                                                 map[string]int
	seconds                                               float64
}

// findingKey names a finding as the store dedupes it within a job: one row may hold several,
// of different kinds.
type findingKey struct{ record, kind string }

func newMoneyRun() moneyRun {
	return moneyRun{verdicts: map[string]int{}, findings: map[findingKey]string{}, kinds: map[string]int{}}
}

// record counts a finding the cycle left.
func (r *moneyRun) record(f reconcile.Finding) {
	r.findings[findingKey{f.RecordID, f.Kind}] = fmt.Sprintf("%s %v", f.Detail, f.Diffs)
	r.kinds[f.Kind]++
}

// runStripeMoney loads opts.Rows intents with their money into a stripetest server and as many
// rows into schema, then runs one cycle in bulk and one one by one, each with a gateway and
// reconciler tables of its own, and two bulk cycles whose second shows what the kept dispute
// outcomes save.
func runStripeMoney(ctx context.Context, pool *pgxpool.Pool, schema string, opts stripeOptions) (stripeResult, error) {
	res := stripeResult{Object: paymentIntentObject.name, Rows: opts.Rows, Batch: opts.Batch, Hint: opts.Hint, Burst: opts.Burst, ImportMix: opts.Mix, Mode: "bulk", Concurrency: opts.Concurrency,
		LatencyMS: float64(opts.Latency.Microseconds()) / 1000, Verdicts: map[string]int{}, GoVersion: runtime.Version(), Money: true, Mix: moneyMix}
	if opts.PerObject {
		res.Mode = "per-object"
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	scen := make([]moneyRow, opts.Rows)
	pis := make([]stripetest.PaymentIntent, opts.Rows)
	for i := range pis {
		n := i + 1
		scen[i] = moneyScenario(n)
		pis[i] = scen[i].pi
		pis[i].Created = stripeCreated(n, opts)
	}
	ids := srv.AddPaymentIntents(pis)
	dueBy := time.Now().Add(7 * 24 * time.Hour)
	for i, s := range scen {
		if s.refund > 0 {
			re, err := srv.Refund(ids[i], s.refund)
			if err == nil && s.refundFails {
				err = srv.SetRefundStatus(re, stripe.RefundStatusFailed, "expired_or_canceled_card")
			}
			if err != nil {
				return res, fmt.Errorf("bench: stripe: refund: %w", err)
			}
		}
		if s.dispute != "" {
			due := time.Time{}
			if s.dispute == "needs_response" || s.dispute == "warning_needs_response" {
				due = dueBy
			}
			if _, err := srv.Dispute(ids[i], 0, s.dispute, due); err != nil {
				return res, fmt.Errorf("bench: stripe: dispute: %w", err)
			}
		}
	}
	rows := make([][]any, opts.Rows)
	for i, sc := range scen {
		created := stripeRowCreated(i+1, opts)
		var dispute *string
		if sc.local.DisputeStatus != "" {
			dispute = &sc.local.DisputeStatus
		}
		rows[i] = []any{i + 1, fmt.Sprintf("o_%d", i+1), ids[i], sc.local.Status, sc.local.Amount, sc.local.Currency,
			sc.local.AmountRefunded, dispute, created, created}
	}
	table := pgx.Identifier{schema, moneyTable}
	if _, err := pool.Exec(ctx, fmt.Sprintf(moneyDDL, table.Sanitize())); err != nil {
		return res, fmt.Errorf("bench: create %s: %w", table.Sanitize(), err)
	}
	if _, err := pool.CopyFrom(ctx, table, []string{"id", "order_id", "stripe_payment_intent_id", "status", "amount_minor", "currency",
		"amount_refunded", "dispute_status", "created_at", "updated_at"}, pgx.CopyFromRows(rows)); err != nil {
		return res, fmt.Errorf("bench: copy into %s: %w", table.Sanitize(), err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+table.Sanitize()); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "stripe: loaded %d rows and PaymentIntents with their money; one cycle in bulk, one per object, batch %d\n", opts.Rows, opts.Batch)
	srv.SetLatency(opts.Latency)

	cycle := func(perObject bool, cycles int) (moneyRun, error) {
		run := newMoneyRun()
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: opts.Concurrency + 2}}
		gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), HTTPClient: hc}, stripeadapter.PaymentIntents())
		if err != nil {
			return run, err
		}
		payments, err := stripemoney.New(gw, stripemoney.Config{})
		if err != nil {
			return run, err
		}
		var gateway reconcile.Gateway[*stripepolicy.Payment] = payments
		if perObject {
			gateway = reconcile.PerObject(gateway)
		}
		tables := pgstore.Tables{Prefix: fmt.Sprintf("reconcile_%s_%d_", map[bool]string{false: "bulk", true: "one"}[perObject], cycles), Schema: schema}
		if err := pgstore.Migrate(ctx, pool, tables); err != nil {
			return run, err
		}
		store, err := pgstore.NewOf[moneyPayment](pool, pgstore.Config{Table: moneyTable, Schema: schema,
			ExternalIDColumn: "stripe_payment_intent_id", Tables: tables})
		if err != nil {
			return run, err
		}
		rec, err := reconcile.New(reconcile.Config[moneyPayment, *stripepolicy.Payment]{
			Job: "bench", Source: store, Sink: store, Gateway: gateway,
			Classifier: stripepolicy.PaymentPolicy(moneyPayment.view),
			BatchSize:  opts.Batch, Concurrency: opts.Concurrency,
		})
		if err != nil {
			return run, err
		}
		for c := range cycles {
			srv.ResetLog()
			start := time.Now()
			for {
				rep, err := rec.RunBatch(ctx)
				if err != nil {
					return run, err
				}
				run.reported += rep.GatewayCalls
				if c == cycles-1 {
					for v, n := range rep.Verdicts {
						run.verdicts[v.String()] += n
					}
				}
				if rep.Wrapped {
					break
				}
			}
			run.seconds = time.Since(start).Seconds()
			if c < cycles-1 {
				run.reported = 0
			}
		}
		run.lists, run.retrieves = srv.Requests(stripetest.ListPaymentIntents), srv.Requests(stripetest.RetrievePaymentIntent)
		run.disputes = srv.Requests(stripetest.ListDisputes)
		run.calls = run.lists + run.retrieves + run.disputes + srv.Requests(stripetest.ListRefunds)
		_, commands, err := countFindings(ctx, pool, tables)
		if err != nil {
			return run, err
		}
		run.commands = int(commands)
		for after := int64(0); ; {
			fs, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "bench", AfterID: after, Limit: 1000})
			if err != nil {
				return run, err
			}
			for _, f := range fs {
				run.record(f)
				after = f.ID
			}
			if len(fs) < 1000 {
				break
			}
		}
		return run, nil
	}

	primary, err := cycle(opts.PerObject, 1)
	if err != nil {
		return res, err
	}
	other, err := cycle(!opts.PerObject, 1)
	if err != nil {
		return res, err
	}
	bulk := primary
	if opts.PerObject {
		bulk = other
	}
	warm, err := cycle(false, 2)
	if err != nil {
		return res, err
	}

	res.ListCalls, res.Retrieves, res.DisputeCalls = primary.lists, primary.retrieves, primary.disputes
	res.APICalls = primary.calls
	res.CallsPerRow = round(float64(primary.calls)/float64(opts.Rows), 4)
	res.CycleHoursAt5rps = round(float64(primary.calls)/5/3600, 3)
	res.Seconds = round(primary.seconds, 3)
	res.RowsPerS = math.Round(float64(opts.Rows) / primary.seconds)
	res.Verdicts = primary.verdicts
	res.Findings = int64(len(primary.findings))
	res.Kinds = primary.kinds
	res.ComparedMode = map[bool]string{true: "bulk", false: "per-object"}[opts.PerObject]
	res.ComparedCallsPerRow = round(float64(other.calls)/float64(opts.Rows), 4)
	res.WarmCallsPerRow = round(float64(warm.calls)/float64(opts.Rows), 4)
	res.SameVerdicts = reflect.DeepEqual(primary.verdicts, other.verdicts)
	res.SameFindings = maps.Equal(primary.findings, other.findings)
	res.Commands = int64(primary.commands)
	// Only in bulk are follow-ups paced and counted by the engine; one by one, Fetch's
	// disputes call rides on its retrieve.
	perObjectDisputes := primary.disputes
	if !opts.PerObject {
		perObjectDisputes = other.disputes
	}
	switch {
	case !res.SameVerdicts || !res.SameFindings:
		return res, fmt.Errorf("bench: stripe: bulk and per-object disagree: verdicts %v and %v, %d and %d findings",
			primary.verdicts, other.verdicts, len(primary.findings), len(other.findings))
	case primary.verdicts[reconcile.Unverifiable.String()] != 0:
		return res, fmt.Errorf("bench: stripe: %d rows unverifiable", primary.verdicts[reconcile.Unverifiable.String()])
	case bulk.reported != bulk.calls:
		return res, fmt.Errorf("bench: stripe: in bulk the engine counted %d calls, stripetest received %d", bulk.reported, bulk.calls)
	case (primary.reported+other.reported)-bulk.reported+perObjectDisputes != (primary.calls+other.calls)-bulk.calls:
		return res, fmt.Errorf("bench: stripe: one by one the engine counted %d calls and %d disputes calls rode on them, stripetest received %d",
			(primary.reported+other.reported)-bulk.reported, perObjectDisputes, (primary.calls+other.calls)-bulk.calls)
	}
	return res, nil
}
