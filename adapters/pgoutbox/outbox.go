package pgoutbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// Outbox reads the state of the outbox for monitoring (a reconcile.OutboxReader). It needs no
// Dispatcher: a metrics exporter may run where none does, or where a host relays the outbox
// itself.
//
//	outbox := pgoutbox.Outbox{DB: pool, Tables: store.Tables()}
type Outbox struct {
	DB pgstore.DB
	// Tables names the reconciler's tables, as for Config.Tables.
	Tables pgstore.Tables
}

var _ reconcile.OutboxReader = Outbox{}

// Stats reads the backlog and the dead commands in one round trip. The backlog is read through
// the outbox's partial indexes of unfinished rows, so its cost grows with the backlog, not with
// the outbox; counting dead commands reads every dead row.
func (o Outbox) Stats(ctx context.Context) (reconcile.OutboxStats, error) {
	if o.DB == nil {
		return reconcile.OutboxStats{}, fmt.Errorf("pgoutbox: outbox stats: DB is nil")
	}
	prefix, err := pgtables.Resolve(o.Tables.Prefix, o.Tables.Schema)
	if err != nil {
		return reconcile.OutboxStats{}, fmt.Errorf("pgoutbox: outbox stats: %w", err)
	}
	outbox := pgtables.Name(prefix, o.Tables.Schema, "outbox")
	st := reconcile.OutboxStats{Dead: map[string]int64{}}
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
		return reconcile.OutboxStats{}, fmt.Errorf("pgoutbox: outbox stats: %w", err)
	}
	if oldest != nil {
		st.OldestQueuedAt = *oldest
	}
	return st, nil
}
