package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/examples/internal/pgcontainer"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// Where the run keeps its payments (-store). With auto, it connects as doc.go says ($DATABASE_URL,
// the local server, a container where Docker runs) and, when no PostgreSQL answers at all, runs
// the same story on memstore: a fresh machine runs the example with nothing installed. A server
// that answers but refuses the login is an error, not a reason to forget the database.
const (
	storeAuto     = "auto"
	storePostgres = "postgres"
	storeMemory   = "memory"
)

// backend is where the run's payments and the reconciler's state are kept, and how the run
// reads them back for its checks. The sweep, the lanes and the checks see only this and the
// reconciler's interfaces (paymentStore); the repairs and the console are PostgreSQL's
// (pgBackend) and are skipped in memory, saying why (printSkippedInMemory).
type backend interface {
	// table names where the payments are, for the output.
	table() string
	// load plants p's rows and returns each row's created_at as stored, by PaymentIntent id.
	load(ctx context.Context, p plan) (map[string]time.Time, error)
	// store is the reconciler's store over the payments.
	store() paymentStore
	// commands counts the job's repair commands by name (the outbox rows' event type).
	commands(ctx context.Context) (map[string]int, error)
	// observed counts the payments the job has an observation of, and those among the
	// PaymentIntents answered that it has none of.
	observed(ctx context.Context, answered []string) (observed, unobserved int, err error)
	// openFindings reads the job's open findings about the payments of the PaymentIntents ids,
	// by PaymentIntent, with the repair commands each queued.
	openFindings(ctx context.Context, ids []string) (map[string][]openFinding, error)
}

// openBackend returns the run's backend as opts.Store says, and a function that releases it.
func openBackend(ctx context.Context, out io.Writer, opts options, schema string) (backend, func(), error) {
	mode := cmp.Or(opts.Store, storeAuto)
	switch mode {
	case storeMemory:
		fmt.Fprintf(out, "-store %s: running the story on memstore, in memory (nothing is kept).\n", storeMemory)
		return newMemBackend(), func() {}, nil
	case storeAuto, storePostgres:
	default:
		return nil, nil, fmt.Errorf("payments: -store %q: want %s, %s or %s", opts.Store, storeAuto, storePostgres, storeMemory)
	}
	docker := opts.docker
	if docker == nil {
		docker = pgcontainer.DockerUsable
	}
	source := cmp.Or(opts.DatabaseSource, "options.DatabaseURL")
	pool, stop, err := pgcontainer.ConnectOrStartWith(ctx, opts.DatabaseURL, source, out, docker)
	var dial *net.OpError
	if err != nil && mode == storeAuto && ctx.Err() == nil && errors.As(err, &dial) {
		tried := ""
		if source == pgenv.DefaultSource {
			tried = ", and no container could be started"
		}
		fmt.Fprintf(out, "No PostgreSQL at %s (%s: %v)%s: running the same story on memstore, in memory (nothing is kept; -store %s insists on a database).\n",
			pgenv.Redact(opts.DatabaseURL), source, dial, tried, storePostgres)
		return newMemBackend(), func() {}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("payments: the example needs a database it may create the schema %s in (or -store %s).\n%w", schema, storeMemory, err)
	}
	store, err := newStore(pool, schema)
	if err != nil {
		pool.Close()
		stop()
		return nil, nil, err
	}
	return &pgBackend{pool: pool, schema: schema, s: store}, func() { pool.Close(); stop() }, nil
}

// pgBackend keeps the payments in PostgreSQL: the host's tables (schema.go) and pgstore's.
type pgBackend struct {
	pool   *pgxpool.Pool
	schema string
	s      *pgstore.Store[paymentRow]
}

func (b *pgBackend) table() string       { return b.schema + ".payments" }
func (b *pgBackend) store() paymentStore { return b.s }

func (b *pgBackend) load(ctx context.Context, p plan) (map[string]time.Time, error) {
	return setUp(ctx, b.pool, b.schema, p)
}

func (b *pgBackend) commands(ctx context.Context) (map[string]int, error) {
	return countCommands(ctx, b.pool, b.schema)
}

func (b *pgBackend) observed(ctx context.Context, answered []string) (observed, unobserved int, err error) {
	if err := b.pool.QueryRow(ctx, inSchema(b.schema, observedRows), job, answered).Scan(&observed, &unobserved); err != nil {
		return 0, 0, fmt.Errorf("payments: count observations: %w", err)
	}
	return observed, unobserved, nil
}

func (b *pgBackend) openFindings(ctx context.Context, ids []string) (map[string][]openFinding, error) {
	return openFindings(ctx, b.pool, b.schema, ids)
}

// memBackend keeps the payments in a memstore, keyed by payment id as the table's identity
// column numbers them, so that record ids read as they do in PostgreSQL.
type memBackend struct {
	s *memstore.Store[int64, paymentRow]
	// records maps each PaymentIntent to its payment's record id.
	records map[string]string
}

func newMemBackend() *memBackend {
	return &memBackend{s: memstore.New[int64, paymentRow](memstore.Options{AggregateType: "payment"}), records: map[string]string{}}
}

func (b *memBackend) table() string       { return "memstore (in memory)" }
func (b *memBackend) store() paymentStore { return b.s }

// load puts p's rows in the store with the times setUp gives them in SQL, by this process's
// clock, which is also the store's.
func (b *memBackend) load(ctx context.Context, p plan) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	createdAt := make(map[string]time.Time, len(p.payments))
	for i, pay := range p.payments {
		key := int64(i + 1)
		created := now.Add(-pay.createdAgo)
		b.s.Put(memstore.Row[int64, paymentRow]{
			Key:        key,
			ExternalID: pay.externalID,
			Local:      paymentRow{Status: pay.story.local, Amount: pay.amount, Currency: pay.currency(), AmountRefunded: pay.refundedHere()},
			CreatedAt:  created,
			UpdatedAt:  now.Add(-pay.updatedAgo),
		})
		b.records[pay.externalID] = fmt.Sprint(key)
		createdAt[pay.externalID] = created
	}
	return createdAt, nil
}

func (b *memBackend) commands(ctx context.Context) (map[string]int, error) {
	n := map[string]int{}
	for _, c := range b.s.Commands() {
		if c.Job == job {
			n[c.Name]++
		}
	}
	return n, ctx.Err()
}

func (b *memBackend) observed(ctx context.Context, answered []string) (observed, unobserved int, err error) {
	for _, id := range b.records {
		if _, ok := b.s.Observation(job, id); ok {
			observed++
		}
	}
	for _, intent := range answered {
		if _, ok := b.s.Observation(job, b.records[intent]); !ok {
			unobserved++
		}
	}
	return observed, unobserved, ctx.Err()
}

func (b *memBackend) openFindings(ctx context.Context, ids []string) (map[string][]openFinding, error) {
	intents := make(map[string]string, len(ids)) // PaymentIntent by record id
	for _, id := range ids {
		if rec, ok := b.records[id]; ok {
			intents[rec] = id
		}
	}
	queued := map[int64]int{}
	for _, c := range b.s.Commands() {
		queued[c.FindingID]++
	}
	found := map[string][]openFinding{}
	err := eachFinding(ctx, b.s, reconcile.FindingQuery{Job: job}, func(f reconcile.Finding) {
		if intent, ok := intents[f.RecordID]; ok {
			found[intent] = append(found[intent], openFinding{kind: f.Kind, commands: queued[f.ID]})
		}
	})
	return found, err
}

// eachFinding calls fn with each finding q selects, a keyset page at a time.
func eachFinding(ctx context.Context, r reconcile.Reviewer, q reconcile.FindingQuery, fn func(reconcile.Finding)) error {
	q.Limit = 500
	for {
		page, err := r.ListFindings(ctx, q)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, f := range page {
			fn(f)
		}
		q.AfterID = page[len(page)-1].ID
	}
}

// printSkippedInMemory says what a run in memory leaves out, and why: the parts of the story
// that are SQL over the host's own tables.
func printSkippedInMemory(out io.Writer, opts options, queued int) {
	fmt.Fprintf(out, "\nRepairs: skipped in memory. The canonical writer (writer.go), the webhook handler (webhook.go) and\n")
	fmt.Fprintf(out, "the dispatcher (repair.go) are SQL over the host's payments and ledger tables and pgoutbox's outbox,\n")
	fmt.Fprintf(out, "which memstore does not have: it holds the %d repair commands queued above (memstore.Store.Commands),\n", queued)
	fmt.Fprintf(out, "checked against the plan, and no dispatcher. Run with PostgreSQL (DATABASE_URL, or Docker) to see them applied.\n")
	if opts.Console != "" {
		fmt.Fprintf(out, "\n-console %s: skipped in memory: the console resolves a dispute through reviewer.go, which records it\n", opts.Console)
		fmt.Fprintf(out, "on the payments table with the canonical writer, in SQL.\n")
	}
}
