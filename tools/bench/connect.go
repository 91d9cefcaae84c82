package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// connectOptions configures one connect benchmark run.
type connectOptions struct {
	Accounts int // connected accounts, the huge one included
	HugeRows int // the huge account's rows
	// Small accounts have SmallMin..SmallMax rows, spread evenly.
	SmallMin, SmallMax int
	Batch              int
	Rate               float64 // the one budget every account shares, requests per second
	Progress           io.Writer
}

// connectResult is the connect subcommand's JSON line.
type connectResult struct {
	Accounts  int     `json:"accounts"`
	Rate      float64 `json:"rate"`
	Batch     int     `json:"batch"`
	HugeRows  int     `json:"huge_rows"`
	SmallRows int     `json:"small_rows_total"`
	Rows      int     `json:"rows"`
	// PredictedCalls is the cycle's calls by the bulk list's cost: ⌈rows/100⌉ per batch of at
	// least two rows, one for a batch of one, none for an empty one. PredictedSeconds is
	// PredictedCalls at Rate: the time until every account has completed a cycle when the
	// shared budget is the bottleneck.
	PredictedCalls   int     `json:"predicted_calls"`
	Calls            int     `json:"calls"`
	PredictedSeconds float64 `json:"predicted_seconds"`
	MeasuredSeconds  float64 `json:"measured_seconds"`
	// Batches is the round's batches; OverheadMSPerBatch is (measured − predicted) / batches:
	// the local work (read, commit) the budget does not account for.
	Batches            int     `json:"batches"`
	OverheadMSPerBatch float64 `json:"overhead_ms_per_batch"`
	// SmallDone is when the last small account completed its cycle: with turns, after the
	// huge account's first batch and every small account's one, not after the huge account.
	SmallDonePredictedSeconds float64 `json:"small_accounts_done_predicted_seconds"`
	SmallDoneSeconds          float64 `json:"small_accounts_done_seconds"`
	// The lags are Status.Lag of the largest and smallest account (the one with the fewest
	// rows) when the round completed; MaxAccountLag the largest of all accounts'.
	LargestAccountLagSeconds  float64 `json:"largest_account_lag_seconds"`
	SmallestAccountLagSeconds float64 `json:"smallest_account_lag_seconds"`
	MaxAccountLagSeconds      float64 `json:"max_account_lag_seconds"`
	Findings                  int64   `json:"findings"`
	Healthy                   bool    `json:"healthy"`
	// AccountHeaderOK: every request carried a Stripe-Account header.
	AccountHeaderOK bool `json:"stripe_account_on_every_request"`
}

func connectCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	var o connectOptions
	fs.IntVar(&o.Accounts, "accounts", 200, "connected accounts: one huge, the others small")
	fs.IntVar(&o.HugeRows, "huge", 20000, "rows of the huge account")
	fs.IntVar(&o.SmallMin, "small-min", 2, "fewest rows of a small account")
	fs.IntVar(&o.SmallMax, "small-max", 40, "most rows of a small account")
	fs.IntVar(&o.Batch, "batch", 1000, "batch size of every account's sweep")
	fs.Float64Var(&o.Rate, "rate", 20, "the budget all accounts share, requests per second")
	schema := fs.String("schema", "bench_connect", "schema to drop, recreate and work in")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench connect [flags]",
		"One fan-out round over many connected accounts (one huge, the others small), each with its own",
		"cursor, sweeping PaymentIntents over HTTP to stripetest with Stripe-Account, within one shared",
		"rate budget: the predicted and measured time until every account has completed a cycle, and",
		"the largest and smallest account's lag. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	switch {
	case o.Accounts < 2 || o.HugeRows <= 0 || o.Batch <= 0 || o.Rate <= 0:
		return fmt.Errorf("bench: connect: -accounts must be at least 2, and -huge, -batch and -rate positive")
	case o.SmallMin < 1 || o.SmallMax < o.SmallMin:
		return fmt.Errorf("bench: connect: want 1 <= -small-min <= -small-max")
	}
	o.Progress = stderr
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	res, err := runConnect(ctx, pool, *schema, o)
	if err != nil {
		return err
	}
	return emit(stdout, res)
}

// connectAccount is one account of the benchmark.
type connectAccount struct {
	id   string
	rows int
}

// connectAccounts returns the accounts: the huge one first in id order (the worst case for
// the small ones if accounts were served one after another), then the small ones.
func connectAccounts(o connectOptions) []connectAccount {
	accts := []connectAccount{{id: "acct_0huge", rows: o.HugeRows}}
	small := o.Accounts - 1
	for i := range small {
		n := o.SmallMin
		if small > 1 {
			n += (o.SmallMax - o.SmallMin) * i / (small - 1)
		}
		accts = append(accts, connectAccount{id: fmt.Sprintf("acct_s%04d", i+1), rows: n})
	}
	return accts
}

// bulkCalls is what a batch of n rows costs the bulk gateway when each row's intent was
// created at its row's created_at and no other intent lies in the window: one retrieve for a
// single row, else a list page per hundred.
func bulkCalls(n int) int {
	switch {
	case n == 0:
		return 0
	case n == 1:
		return 1
	}
	return (n + 99) / 100
}

// cycleCalls is what one cycle over rows costs at batch size b: the full batches, then the
// short one that ends the cycle (empty when rows is a multiple of b).
func cycleCalls(rows, b int) int {
	return rows/b*bulkCalls(b) + bulkCalls(rows%b)
}

const connectTable = "payments"

// runConnect loads the accounts' rows and intents and times one fan-out round.
func runConnect(ctx context.Context, pool *pgxpool.Pool, schema string, o connectOptions) (connectResult, error) {
	res := connectResult{Accounts: o.Accounts, Rate: o.Rate, Batch: o.Batch, HugeRows: o.HugeRows}
	accts := connectAccounts(o)
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()

	// Row i of an account is created an hour after row i-1, its intent at the same second, so
	// that a batch's created window holds its own intents only and the prediction is exact.
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows [][]any
	id := int64(0)
	for _, a := range accts {
		pis := make([]stripetest.PaymentIntent, a.rows)
		for i := range pis {
			pis[i] = stripetest.PaymentIntent{Account: a.id, Status: stripe.PaymentIntentStatusSucceeded,
				Created: base.Add(time.Duration(i) * time.Hour), Amount: 1000}
		}
		ids := srv.AddPaymentIntents(pis)
		for i, pi := range ids {
			id++
			local := stripepolicy.LocalPaid
			if i == 0 {
				local = stripepolicy.LocalPending // a missed webhook in every account
			}
			created := base.Add(time.Duration(i) * time.Hour)
			rows = append(rows, []any{id, a.id, pi, local, created, created})
		}
		res.Rows += a.rows
		if a.id != accts[0].id {
			res.SmallRows += a.rows
		}
	}
	tables := pgstore.Tables{Prefix: "reconcile_", Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		return res, err
	}
	table := pgx.Identifier{schema, connectTable}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table.Sanitize()+` (id bigint PRIMARY KEY, account text NOT NULL,
		external_id text NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		return res, err
	}
	if _, err := pool.CopyFrom(ctx, table, []string{"id", "account", "external_id", "status", "created_at", "updated_at"}, pgx.CopyFromRows(rows)); err != nil {
		return res, err
	}
	for _, q := range []string{`CREATE INDEX ON ` + table.Sanitize() + ` (account, id)`, `ANALYZE ` + table.Sanitize()} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return res, err
		}
	}

	limiter, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: rate.Limit(o.Rate)})
	if err != nil {
		return res, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	platform, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), HTTPClient: hc},
		stripeadapter.PaymentIntents())
	if err != nil {
		return res, err
	}
	var (
		mu     sync.Mutex
		start  time.Time
		doneAt = map[string]time.Duration{} // account -> when its first cycle completed
		stores = map[string]*pgstore.Store[string]{}
	)
	build := func(acct string) ([]reconcile.FanOutJob, error) {
		store, err := pgstore.New(pool, pgstore.Config{Table: connectTable, Schema: schema, Tables: tables,
			Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "account", Op: pgstore.Eq, Value: acct}}}}})
		if err != nil {
			return nil, err
		}
		gw, err := platform.ForAccount(acct) // the platform's client and key, with Stripe-Account
		if err != nil {
			return nil, err
		}
		job := "payments@" + acct
		r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{Job: job, Source: store, Sink: store, Gateway: gw,
			Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState,
			BatchSize: o.Batch, Limiter: limiter})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		stores[acct] = store
		mu.Unlock()
		timed := batchFunc(func(ctx context.Context) (reconcile.Report, error) {
			rep, err := r.RunBatch(ctx)
			if err == nil && rep.Wrapped {
				mu.Lock()
				if _, ok := doneAt[acct]; !ok {
					doneAt[acct] = time.Since(start)
				}
				mu.Unlock()
			}
			return rep, err
		})
		return []reconcile.FanOutJob{{Job: job, Batches: timed, Status: store}}, nil
	}
	list := func(context.Context) ([]string, error) {
		ids := make([]string, len(accts))
		for i, a := range accts {
			ids[i] = a.id
		}
		return ids, nil
	}
	f, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "payments@connect", Accounts: list, Build: build})
	if err != nil {
		return res, err
	}

	smallCalls := 0
	for _, a := range accts {
		c := cycleCalls(a.rows, o.Batch)
		res.PredictedCalls += c
		if a.id != accts[0].id {
			smallCalls += c
		}
	}
	res.PredictedSeconds = round(float64(res.PredictedCalls)/o.Rate, 2)
	res.SmallDonePredictedSeconds = round(float64(bulkCalls(min(o.Batch, o.HugeRows))+smallCalls)/o.Rate, 2)
	fmt.Fprintf(o.Progress, "connect: %d accounts (%d rows: huge %d, small %d..%d), batch %d, %.0f requests/s shared; predicted %d calls, %.1f s\n",
		o.Accounts, res.Rows, o.HugeRows, o.SmallMin, o.SmallMax, o.Batch, o.Rate, res.PredictedCalls, res.PredictedSeconds)

	srv.ResetLog()
	start = time.Now()
	for {
		tick, err := reconcile.RunTick(ctx, f, reconcile.TickBudget{})
		if err != nil {
			return res, err
		}
		res.Batches += tick.Batches
		if tick.Wrapped {
			break
		}
		// Only when every account left sits out (it should not happen here) does the
		// fan-out defer; wait as it asks.
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(max(tick.RetryAfter, 100*time.Millisecond)):
		}
	}
	elapsed := time.Since(start)
	res.MeasuredSeconds = round(elapsed.Seconds(), 2)
	res.OverheadMSPerBatch = round((res.MeasuredSeconds-res.PredictedSeconds)*1000/float64(max(res.Batches, 1)), 1)

	log := srv.Log()
	res.Calls = len(log)
	res.AccountHeaderOK = true
	for _, r := range log {
		if r.StripeAccount == "" {
			res.AccountHeaderOK = false
		}
	}
	if len(doneAt) != len(accts) {
		return res, fmt.Errorf("bench: connect: %d of %d accounts completed a cycle in the round", len(doneAt), len(accts))
	}
	smallest := accts[1]
	for _, a := range accts[1:] {
		if a.rows < smallest.rows {
			smallest = a
		}
		res.SmallDoneSeconds = max(res.SmallDoneSeconds, round(doneAt[a.id].Seconds(), 2))
	}
	for _, a := range accts {
		st, err := stores[a.id].Status(ctx, "payments@"+a.id)
		if err != nil {
			return res, err
		}
		lag := round(st.Lag.Seconds(), 2)
		res.MaxAccountLagSeconds = max(res.MaxAccountLagSeconds, lag)
		switch a.id {
		case accts[0].id:
			res.LargestAccountLagSeconds = lag
		case smallest.id:
			res.SmallestAccountLagSeconds = lag
		}
	}
	h := f.Health(ctx, reconcile.HealthPolicy{MaxStaleFindings: -1})
	res.Healthy = h.OK
	if res.Findings, _, err = countFindings(ctx, pool, tables); err != nil {
		return res, err
	}
	switch {
	case res.Findings != int64(len(accts)):
		return res, fmt.Errorf("bench: connect: %d findings, want one missed webhook per account, %d", res.Findings, len(accts))
	case !res.AccountHeaderOK:
		return res, fmt.Errorf("bench: connect: a request went out without its Stripe-Account header")
	case !h.OK:
		return res, fmt.Errorf("bench: connect: unhealthy after the round: %s", h)
	}
	fmt.Fprintf(o.Progress, "connect: round complete in %.1f s (predicted %.1f s at the budget; %d batches, %.0f ms local work each), %d calls (predicted %d)\n",
		res.MeasuredSeconds, res.PredictedSeconds, res.Batches, res.OverheadMSPerBatch, res.Calls, res.PredictedCalls)
	fmt.Fprintf(o.Progress, "connect: every small account done at %.1f s (predicted %.1f s: the huge account's first batch, then one turn each)\n",
		res.SmallDoneSeconds, res.SmallDonePredictedSeconds)
	fmt.Fprintf(o.Progress, "connect: lag of the largest account %.1f s, of the smallest %.1f s, of any %.1f s\n",
		res.LargestAccountLagSeconds, res.SmallestAccountLagSeconds, res.MaxAccountLagSeconds)
	return res, nil
}

// batchFunc is a BatchRunner function.
type batchFunc func(ctx context.Context) (reconcile.Report, error)

func (f batchFunc) RunBatch(ctx context.Context) (reconcile.Report, error) { return f(ctx) }
