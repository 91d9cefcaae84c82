package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// payoutsOptions are the payouts subcommand's flags.
type payoutsOptions struct {
	Payouts, Transactions, PlantEvery int
	// Itemize is how each payout's lines are read: "report" (a report run per page of payouts,
	// stripepayouts.ReportLister) or "list" (each payout's balance transactions listed).
	Itemize  string
	Progress io.Writer
}

// payoutsResult is the payouts subcommand's JSON line.
type payoutsResult struct {
	Payouts              int     `json:"payouts"`
	BalanceTransactions  int     `json:"balance_transactions"`
	Calls                int     `json:"calls"`
	CallsPerTransaction  float64 `json:"calls_per_transaction"`
	PayoutListCalls      int     `json:"payout_list_calls"`
	TransactionListCalls int     `json:"transaction_list_calls"`
	// ReportCalls are the report runs' calls: the report type read, the runs created and
	// polled, their files downloaded.
	ReportCalls    int     `json:"report_calls"`
	Itemize        string  `json:"itemize"`
	Planted        int     `json:"planted"`
	Found          int     `json:"found"`
	FalsePositives int     `json:"false_positives"`
	Duplicates     int     `json:"duplicates"`
	Seconds        float64 `json:"seconds"`
}

func payoutsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("payouts", flag.ContinueOnError)
	var o payoutsOptions
	fs.IntVar(&o.Payouts, "payouts", 200, "automatic payouts (one in each 11 planted ones is manual)")
	fs.IntVar(&o.Transactions, "transactions", 50000, "balance transactions in the payouts, their own payout lines included")
	fs.IntVar(&o.PlantEvery, "plant-every", 2, "plant one drift in every n-th payout (0: none)")
	fs.StringVar(&o.Itemize, "itemize", "report", "how payouts are itemized: report (one report run per page of payouts, polled every 10ms) "+
		"or list (each payout's balance transactions, a hundred a call)")
	schema := fs.String("schema", "bench_payouts", "schema to drop, recreate and work in")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench payouts [flags]",
		"One tie-out pass over every payout's balance transactions (stripepayouts over HTTP to stripetest,",
		"the ledger in PostgreSQL through pgledger, findings through pgstore), with a drift of each kind",
		"planted in turn: API calls (every request the lister made), calls per transaction, planted drifts",
		"found, false positives. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	switch {
	case o.Payouts <= 0 || o.PlantEvery < 0:
		return errors.New("bench: payouts: -payouts must be positive, -plant-every not negative")
	case o.Transactions < 3*o.Payouts:
		return errors.New("bench: payouts: -transactions must be at least 3 per payout")
	case o.Itemize != "report" && o.Itemize != "list":
		return fmt.Errorf("bench: payouts: -itemize %q is not report or list", o.Itemize)
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	o.Progress = stderr
	res, err := runPayouts(ctx, pool, *schema, o)
	if err != nil {
		return err
	}
	return emit(stdout, res)
}

// The drifts the payouts bench plants, one per planted payout in turn.
const (
	plantUnbookedCharge = iota
	plantUnbookedRefund
	plantUnbookedDispute
	plantAmountPresentment
	plantAmountSettlement
	plantRefundFailure
	plantPaymentFailureRefund
	plantUnknownType
	plantSumMismatch
	plantFailedAfterPaid // and its payout_failure, unbooked, in the next payout
	plantManual
	plantKinds
)

// payoutWorld is the bench's Stripe account and the host's ledger of it.
type payoutWorld struct {
	srv     *stripetest.Server
	now     time.Time
	booked  []tieout.Booked
	planted map[[2]string]bool // (kind, record or external id)
	plantPI map[string]string  // intent whose charge id a planted finding names → the kind
}

func (w *payoutWorld) clock() time.Time { return w.now }

func (w *payoutWorld) book(kind, id string, amount int64, currency string, basis tieout.Basis, payout string) {
	w.booked = append(w.booked, tieout.Booked{Kind: kind, ID: id, Amount: amount, Currency: currency, Basis: basis,
		SettledAt: w.now, Group: payout})
}

// bookPayout books a payout as the host records it: no settlement of its own.
func (w *payoutWorld) bookPayout(id, status string) {
	w.booked = append(w.booked, tieout.Booked{Kind: tieout.KindGroup, ID: id, Basis: tieout.Settlement, Currency: "usd", Status: status})
}

func (w *payoutWorld) plant(kind, id string) { w.planted[[2]string{kind, id}] = true }

// runPayouts builds the payouts at the fake, each with its share of the transactions and, in
// every PlantEvery-th one, a drift; books them; then ties every payout out once (the sweep)
// and walks the ledger for records never paid out, counting the lister's requests.
func runPayouts(ctx context.Context, pool *pgxpool.Pool, schema string, o payoutsOptions) (payoutsResult, error) {
	res := payoutsResult{Payouts: o.Payouts, Itemize: cmp.Or(o.Itemize, "report")}
	w := &payoutWorld{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), planted: map[[2]string]bool{}, plantPI: map[string]string{}}
	w.srv = stripetest.NewServer(stripetest.Options{Now: w.clock})
	defer w.srv.Close()
	w.srv.SetExchangeRate("eur", "usd", 1.1)

	plantOf := func(j int) int {
		if o.PlantEvery == 0 || j%o.PlantEvery != 0 {
			return -1
		}
		return (j / o.PlantEvery) % plantKinds
	}
	manual := 0
	for j := range o.Payouts {
		if plantOf(j) == plantManual {
			manual++
		}
	}
	// The transactions are shared among the itemized payouts as evenly as they go.
	itemized := o.Payouts - manual
	share := func(k int) int {
		n := o.Transactions / itemized
		if k < o.Transactions%itemized {
			n++
		}
		return n
	}
	var chargeOf []string // intents whose charge's id a planted finding names
	k, carry := 0, 0      // itemized payouts so far; lines the previous payout leaves to this one
	var payouts []string
	for j := range o.Payouts {
		base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(j) * 3 * 24 * time.Hour)
		w.now = base
		plant := plantOf(j)
		if plant == plantManual {
			w.now = base.Add(2*24*time.Hour + time.Hour)
			po := w.srv.AddPayout(stripetest.Payout{Manual: true, Amount: 1000, Status: stripe.PayoutStatusPaid})
			w.bookPayout(po, "paid")
			w.plant(tieout.KindNotItemizable, po)
			payouts = append(payouts, po)
			continue
		}
		lines := share(k) - 1 - carry // less its own line and what the last one leaves it
		k++
		carry = 0
		extra := map[int]int{plantUnbookedRefund: 1, plantUnbookedDispute: 1, plantRefundFailure: 2, plantPaymentFailureRefund: 1,
			plantUnknownType: 1, plantSumMismatch: 1}[plant]
		charges := lines - extra
		pis := make([]stripetest.PaymentIntent, charges)
		for i := range pis {
			pis[i] = stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: int64(500 + (j*charges+i)%20000), Currency: "usd"}
		}
		if plant == plantAmountSettlement {
			pis[0].Currency = "eur"
		}
		ids := w.srv.AddPaymentIntents(pis)
		for i, id := range ids {
			switch {
			case i == 0 && plant == plantUnbookedCharge:
				chargeOf = append(chargeOf, id)
				w.plantPI[id] = tieout.KindUnbookedPayment
			case i == 0 && plant == plantAmountPresentment:
				w.book(tieout.KindPayment, id, pis[i].Amount-1, "usd", tieout.Presentment, "po_recorded")
				chargeOf = append(chargeOf, id)
				w.plantPI[id] = tieout.KindAmountDiffers
			case i == 0 && plant == plantAmountSettlement:
				settled := (pis[i].Amount*11 + 5) / 10 // the fake's round(amount × 1.1)
				w.book(tieout.KindPayment, id, settled+7, "usd", tieout.Settlement, "po_recorded")
				chargeOf = append(chargeOf, id)
				w.plantPI[id] = tieout.KindAmountDiffers
			default:
				w.book(tieout.KindPayment, id, pis[i].Amount, pis[i].Currency, tieout.Presentment, "po_recorded")
			}
		}
		// Money moved after the charges: refunds, disputes and failures are available at once.
		w.now = base.Add(2 * 24 * time.Hour)
		switch plant {
		case plantUnbookedRefund:
			re, err := w.srv.Refund(ids[0], 100)
			if err != nil {
				return res, err
			}
			w.plant(tieout.KindUnbookedRefund, re)
		case plantUnbookedDispute:
			du, err := w.srv.Dispute(ids[0], 0, stripe.DisputeStatusNeedsResponse, time.Time{})
			if err != nil {
				return res, err
			}
			w.plant(tieout.KindUnbookedDispute, du)
		case plantRefundFailure:
			re, err := w.srv.Refund(ids[0], 100)
			if err != nil {
				return res, err
			}
			w.book(tieout.KindRefund, re, -100, "usd", tieout.Presentment, "po_recorded")
			if err := w.srv.SetRefundStatus(re, stripe.RefundStatusFailed, "expired_or_canceled_card"); err != nil {
				return res, err
			}
			w.plant(tieout.KindUnbookedRefundFailure, re)
		case plantPaymentFailureRefund:
			if err := w.srv.FailPayment(ids[0], ""); err != nil {
				return res, err
			}
			chargeOf = append(chargeOf, ids[0])
			w.plantPI[ids[0]] = tieout.KindUnbookedPaymentFailureRefund
		case plantUnknownType:
			w.plant(tieout.KindUnknownType, w.srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "mystery_credit", Amount: 100}))
		}
		w.now = base.Add(2*24*time.Hour + time.Hour)
		po := w.srv.AddPayout(stripetest.Payout{})
		payouts = append(payouts, po)
		if plant == plantSumMismatch {
			w.srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "transfer", Amount: 250, Payout: po})
			w.plant(tieout.KindSumMismatch, po)
		}
		if err := w.srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
			return res, err
		}
		w.bookPayout(po, "paid")
		if plant == plantFailedAfterPaid && j < o.Payouts-1 {
			w.now = w.now.Add(time.Hour)
			if err := w.srv.FailPayout(po, stripe.PayoutFailureCodeAccountClosed, ""); err != nil {
				return res, err
			}
			w.plant(tieout.KindPayoutFailed, po)
			w.plant(tieout.KindUnbookedPayoutFailure, po) // the next payout's line, whose source is po
			carry = 1
		}
		if plant >= 0 && plant != plantFailedAfterPaid {
			// A booked record that never reached a payout, beside each planted line.
			ghost := fmt.Sprintf("pi_ghost%d", j)
			w.now = base
			w.book(tieout.KindPayment, ghost, 1234, "usd", tieout.Presentment, "")
			w.plant(tieout.KindNeverPaidOut, ghost)
		}
		if (j+1)%50 == 0 {
			fmt.Fprintf(o.Progress, "payouts: %d of %d payouts made\n", j+1, o.Payouts)
		}
	}
	// The charge ids the planted findings name, read once before the count starts.
	sc := stripe.NewClient(w.srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(w.srv.URL()), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}})))
	for _, pi := range chargeOf {
		for ch, err := range sc.V1Charges.List(ctx, &stripe.ChargeListParams{PaymentIntent: stripe.String(pi)}) {
			if err != nil {
				return res, err
			}
			w.plant(w.plantPI[pi], ch.ID)
		}
	}
	res.Planted = len(w.planted)
	w.now = w.now.Add(30 * 24 * time.Hour)

	ledger, store, tables, err := loadPayoutLedger(ctx, pool, schema, w.booked)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(o.Progress, "payouts: %d payouts, %d records booked, %d drifts planted; tying out\n", len(payouts), len(w.booked), res.Planted)

	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, stripeadapter.Payouts())
	if err != nil {
		return res, err
	}
	byList, err := stripepayouts.New(gw, stripepayouts.Config{})
	if err != nil {
		return res, err
	}
	var lister tieout.Lister = byList
	if res.Itemize == "report" {
		// Polled every 10ms: the fake finishes a run at its first retrieve, and the calls are
		// what is measured; Stripe's runs take seconds to minutes (the default polls every 2s).
		if lister, err = byList.WithReports(stripepayouts.ReportOptions{PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(o.Progress, nil))}); err != nil {
			return res, err
		}
	}
	policy := tieout.Policy{Books: append(slices.Clone(tieout.DefaultBooks), tieout.KindGroup)}
	sweep, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "sweep", Lister: lister, Ledger: ledger, Sink: store, Policy: policy})
	if err != nil {
		return res, err
	}
	unpaid, err := tieout.NewUnpaidStep(tieout.UnpaidConfig{Job: "payouts", Lane: "unpaid", Ledger: ledger, Sink: store, Now: w.clock})
	if err != nil {
		return res, err
	}
	w.srv.ResetLog()
	start := time.Now()
	for _, st := range []reconcile.BatchRunner{sweep, unpaid} {
		for {
			rep, err := st.RunBatch(ctx)
			if err != nil {
				return res, err
			}
			if rep.Wrapped {
				break
			}
		}
	}
	res.Seconds = round(time.Since(start).Seconds(), 2)
	log := w.srv.Log()
	res.Calls = len(log)
	for _, r := range log {
		switch r.Route {
		case stripetest.ListPayouts:
			res.PayoutListCalls++
		case stripetest.ListBalanceTransactions:
			res.TransactionListCalls++
		case stripetest.RetrieveReportType, stripetest.CreateReportRun, stripetest.RetrieveReportRun, stripetest.DownloadFile:
			res.ReportCalls++
		}
	}
	if res.BalanceTransactions, err = listedLines(w.srv, payouts); err != nil {
		return res, err
	}
	res.CallsPerTransaction = round(float64(res.Calls)/float64(res.BalanceTransactions), 5)

	// Every finding must be a planted one, each planted one found once.
	rows, err := pool.Query(ctx, "SELECT kind, record_id, coalesce(external_id, '') FROM "+
		pgx.Identifier{tables.Schema, tables.Prefix + "findings"}.Sanitize()+" WHERE job = 'payouts'")
	if err != nil {
		return res, err
	}
	hits := map[[2]string]int{}
	for rows.Next() {
		var kind, record, external string
		if err := rows.Scan(&kind, &record, &external); err != nil {
			return res, err
		}
		switch {
		case w.planted[[2]string{kind, record}]:
			hits[[2]string{kind, record}]++
		case w.planted[[2]string{kind, external}]:
			hits[[2]string{kind, external}]++
		default:
			res.FalsePositives++
			if res.FalsePositives <= 5 {
				fmt.Fprintf(o.Progress, "payouts: unplanted finding %s %s (%s)\n", kind, record, external)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	for k, n := range hits {
		res.Found++
		res.Duplicates += n - 1
		_ = k
	}
	for k := range w.planted {
		if hits[k] == 0 {
			fmt.Fprintf(o.Progress, "payouts: planted %s %s not found\n", k[0], k[1])
		}
	}
	return res, nil
}

// listedLines counts the balance transactions of the itemized payouts, as the fake holds them
// (its own count, not the lister's).
func listedLines(srv *stripetest.Server, payouts []string) (int, error) {
	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(srv.URL()), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}})))
	n := 0
	for _, po := range payouts {
		if p, _ := srv.Payout(po); p.ReconciliationStatus == stripe.PayoutReconciliationStatusNotApplicable {
			continue
		}
		for _, err := range sc.V1BalanceTransactions.List(context.Background(), &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}) {
			if err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, nil
}

// loadPayoutLedger copies the bookings into two ledger tables (presentment and settlement
// amounts) and returns the pgledger over them and a pgstore for the findings.
func loadPayoutLedger(ctx context.Context, pool *pgxpool.Pool, schema string, booked []tieout.Booked) (tieout.Ledger, reconcile.LaneSink, pgstore.Tables, error) {
	store, tables, err := copyPayments(ctx, pool, schema, []string{"order_id"}, nil)
	if err != nil {
		return nil, nil, tables, err
	}
	names := []string{"ledger_presentment", "ledger_settlement"}
	rows := [2][][]any{}
	for _, b := range booked {
		i := 0
		if b.Basis == tieout.Settlement {
			i = 1
		}
		var settled, group, status any
		if !b.SettledAt.IsZero() {
			settled = b.SettledAt
		}
		if b.Group != "" {
			group = b.Group
		}
		if b.Status != "" {
			status = b.Status
		}
		rows[i] = append(rows[i], []any{b.Kind, b.ID, b.Amount, b.Currency, settled, group, status})
	}
	var ts []pgledger.Table
	for i, name := range names {
		table := pgx.Identifier{schema, name}
		if _, err := pool.Exec(ctx, `CREATE TABLE `+table.Sanitize()+` (id bigserial PRIMARY KEY, kind text NOT NULL,
			ext_id text NOT NULL, amount bigint NOT NULL, currency text NOT NULL, settled_at timestamptz, payout_id text, status text)`); err != nil {
			return nil, nil, tables, err
		}
		if _, err := pool.Exec(ctx, `CREATE INDEX ON `+table.Sanitize()+` (ext_id)`); err != nil {
			return nil, nil, tables, err
		}
		if _, err := pool.CopyFrom(ctx, table, []string{"kind", "ext_id", "amount", "currency", "settled_at", "payout_id", "status"},
			pgx.CopyFromRows(rows[i])); err != nil {
			return nil, nil, tables, err
		}
		if _, err := pool.Exec(ctx, "ANALYZE "+table.Sanitize()); err != nil {
			return nil, nil, tables, err
		}
		ts = append(ts, pgledger.Table{Schema: schema, Name: name, KindColumn: "kind", IDColumn: "ext_id", Basis: tieout.Basis(i + 1),
			SettledAtColumn: "settled_at", GroupColumn: "payout_id", StatusColumn: "status"})
	}
	ledger, err := pgledger.New(pool, pgledger.Config{Tables: ts})
	return ledger, store, tables, err
}
