package pgoutbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// Outbox reads the state of the outbox for monitoring. It needs no Dispatcher: a metrics
// exporter may run where none does, or where a host relays the outbox itself.
//
//	outbox := pgoutbox.Outbox{DB: pool, Tables: store.Tables()}
type Outbox struct {
	DB pgstore.DB
	// Tables names the reconciler's tables, as for Config.Tables.
	Tables pgstore.Tables
}

// OutboxStats is what monitoring needs of the outbox.
type OutboxStats struct {
	// Now is the database clock when the stats were read.
	Now time.Time
	// Queued counts the commands not yet applied and not dead: due, waiting to retry, or
	// running.
	Queued int64
	// OldestQueuedAt is when the oldest of them was queued; zero if none is.
	OldestQueuedAt time.Time
	// Dead counts the dead commands by name, the ones waiting for Redrive.
	Dead map[string]int64
}

// OldestQueuedAge is how long the oldest queued command has waited; zero if none is.
func (s OutboxStats) OldestQueuedAge() time.Duration {
	if s.OldestQueuedAt.IsZero() {
		return 0
	}
	return max(s.Now.Sub(s.OldestQueuedAt), 0)
}

// Stats reads the backlog and the dead commands in one round trip. The backlog is read through
// the outbox's partial indexes of unfinished rows, so its cost grows with the backlog, not with
// the outbox; counting dead commands reads every dead row.
func (o Outbox) Stats(ctx context.Context) (OutboxStats, error) {
	if o.DB == nil {
		return OutboxStats{}, fmt.Errorf("pgoutbox: outbox stats: DB is nil")
	}
	prefix, err := pgtables.Resolve(o.Tables.Prefix, o.Tables.Schema)
	if err != nil {
		return OutboxStats{}, fmt.Errorf("pgoutbox: outbox stats: %w", err)
	}
	outbox := pgtables.Name(prefix, o.Tables.Schema, "outbox")
	st := OutboxStats{Dead: map[string]int64{}}
	var oldest *time.Time
	b := &pgx.Batch{}
	b.Queue(`SELECT now(), count(*), min(created_at) FROM ` + outbox + `
		WHERE status IN ('pending', 'running') AND processed_at IS NULL`).QueryRow(func(r pgx.Row) error {
		return r.Scan(&st.Now, &st.Queued, &oldest)
	})
	b.Queue(`SELECT event_type, count(*) FROM ` + outbox + ` WHERE status = 'dead' GROUP BY event_type`).Query(func(rows pgx.Rows) error {
		var name string
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
			st.Dead[name] = n
			return nil
		})
		return err
	})
	if err := o.DB.SendBatch(ctx, b).Close(); err != nil {
		return OutboxStats{}, fmt.Errorf("pgoutbox: outbox stats: %w", err)
	}
	if oldest != nil {
		st.OldestQueuedAt = *oldest
	}
	return st, nil
}
