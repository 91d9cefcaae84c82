package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// dispatchOptions configures one dispatch benchmark run.
type dispatchOptions struct {
	Commands, Aggregates, Workers, Concurrency int
	Progress                                   io.Writer
}

// dispatchResult is the dispatch subcommand's JSON line.
type dispatchResult struct {
	Commands     int     `json:"commands"`
	Aggregates   int     `json:"aggregates"`
	Workers      int     `json:"workers"`
	Concurrency  int     `json:"concurrency"`
	Seconds      float64 `json:"seconds"`
	CommandsPerS float64 `json:"commands_per_s"`
	// Duplicates counts effects applied more than once; it must be 0.
	Duplicates int64 `json:"duplicates"`
	// Lost counts commands not done at the end; it must be 0.
	Lost int64 `json:"lost"`
	// OutOfOrder counts effects applied before an older command of their aggregate.
	OutOfOrder int64  `json:"out_of_order"`
	GoVersion  string `json:"go_version"`
}

// dispatchCommand is the dispatch subcommand.
func dispatchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dispatch", flag.ContinueOnError)
	commands := fs.Int("commands", 50000, "repair commands to queue and apply")
	aggregates := fs.Int("aggregates", 10000, "distinct payments the commands are spread over")
	workers := fs.Int("workers", 4, "dispatchers, each as another process would run one")
	conc := fs.Int("concurrency", 8, "commands each dispatcher handles at once")
	schema := fs.String("schema", "bench_dispatch", "schema to drop, recreate and work in")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench dispatch [flags]",
		"Queues commands in the outbox and times dispatchers applying them all; a handler writes one",
		"effect row per application in the claiming transaction. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	if fs.NArg() > 0 || *commands <= 0 || *aggregates <= 0 || *workers <= 0 || *conc <= 0 {
		fmt.Fprintln(stderr, "bench: dispatch: flags must be positive and there are no arguments")
		return errUsage
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	res, err := runDispatch(ctx, pool, *schema, dispatchOptions{Commands: *commands, Aggregates: *aggregates, Workers: *workers,
		Concurrency: *conc, Progress: stderr})
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if res.Duplicates != 0 || res.Lost != 0 || res.OutOfOrder != 0 {
		return fmt.Errorf("bench: dispatch: %d duplicates, %d lost, %d out of order", res.Duplicates, res.Lost, res.OutOfOrder)
	}
	return nil
}

// runDispatch queues the commands in schema and runs opts.Workers dispatchers until all are done.
func runDispatch(ctx context.Context, pool *pgxpool.Pool, schema string, opts dispatchOptions) (dispatchResult, error) {
	res := dispatchResult{Commands: opts.Commands, Aggregates: opts.Aggregates, Workers: opts.Workers,
		Concurrency: opts.Concurrency, GoVersion: runtime.Version()}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	tables := pgstore.Tables{Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		return res, err
	}
	outbox := pgx.Identifier{schema, "reconcile_outbox"}.Sanitize()
	effects := pgx.Identifier{schema, "effects"}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+effects+` (seq bigint GENERATED ALWAYS AS IDENTITY, command_id bigint NOT NULL, aggregate_id text NOT NULL)`); err != nil {
		return res, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+outbox+` (aggregate_type, aggregate_id, event_type, finding_id, payload)
		SELECT 'payment', (i % $2)::text, 'ApplyPaymentSucceeded', i, jsonb_build_object('record_id', (i % $2)::text, 'finding_id', i)
		FROM generate_series(1, $1) AS i ORDER BY i`, opts.Commands, opts.Aggregates); err != nil {
		return res, err
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+outbox); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "dispatch: queued %d commands over %d aggregates; %d dispatchers × %d\n", opts.Commands, opts.Aggregates, opts.Workers, opts.Concurrency)

	handler := func(ctx context.Context, tx pgx.Tx, d pgoutbox.Delivery) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+effects+` (command_id, aggregate_id) VALUES ($1, $2)`, d.ID, d.AggregateID)
		return err
	}
	// Each dispatcher needs a connection per handler, one to claim and one to renew leases.
	pcfg := pool.Config().Copy()
	pcfg.MaxConns = int32(opts.Workers * (opts.Concurrency + 2))
	dpool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return res, err
	}
	defer dpool.Close()
	var ds []*pgoutbox.Dispatcher
	start := time.Now()
	for i := range opts.Workers {
		d, err := pgoutbox.NewDispatcher(dpool, pgoutbox.Config{Tables: tables, Owner: fmt.Sprintf("bench-%d", i),
			Workers: opts.Concurrency, PollInterval: 10 * time.Millisecond})
		if err != nil {
			return res, err
		}
		if err := d.Handle("ApplyPaymentSucceeded", handler); err != nil {
			return res, err
		}
		if err := d.Start(ctx); err != nil {
			return res, err
		}
		ds = append(ds, d)
	}
	var left int64
	for {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+outbox+` WHERE status <> 'done'`).Scan(&left); err != nil {
			return res, err
		}
		if left == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	for _, d := range ds {
		if err := d.Stop(ctx); err != nil {
			return res, err
		}
	}
	res.Seconds = round(elapsed.Seconds(), 3)
	res.CommandsPerS = math.Round(float64(opts.Commands) / elapsed.Seconds())
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) - count(DISTINCT command_id) FROM `+effects+`),
		(SELECT count(*) FROM `+outbox+` WHERE status <> 'done'),
		(SELECT count(*) FROM (SELECT command_id < lag(command_id) OVER (PARTITION BY aggregate_id ORDER BY seq) AS bad FROM `+effects+`) x WHERE bad)`).
		Scan(&res.Duplicates, &res.Lost, &res.OutOfOrder)
	return res, err
}
