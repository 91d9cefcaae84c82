package pgoutbox

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// lease is a delivery being handled: what the renewer renews, and how it stops the handler if
// the lease was lost.
type lease struct {
	attempt int64
	cancel  context.CancelCauseFunc
	// done closes when the handler's context ends (HandlerTimeout, a lost lease, Stop): its
	// lease is no longer renewed, so that a handler ignoring its context cannot hold the
	// command, and its aggregate, for as long as it hangs.
	done <-chan struct{}
}

// renew renews, every third of the lease and in one statement, the leases of every delivery
// being handled, and cancels with ErrLeaseLost the handlers whose command was claimed again.
// It returns when ctx is done.
func (d *Dispatcher) renew(ctx context.Context) {
	t := time.NewTicker(d.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.renewLeases(ctx)
	}
}

// renewLeases is one tick of renew.
func (d *Dispatcher) renewLeases(ctx context.Context) {
	d.leaseMu.Lock()
	ids := make([]int64, 0, len(d.leases))
	for _, id := range slices.Sorted(maps.Keys(d.leases)) { // one lock order for every renewer
		select {
		case <-d.leases[id].done:
			// Past HandlerTimeout (or cancelled) and still running: let the lease run out.
		default:
			ids = append(ids, id)
		}
	}
	attempts := make([]int64, len(ids))
	for i, id := range ids {
		attempts[i] = d.leases[id].attempt
	}
	d.leaseMu.Unlock()
	if len(ids) == 0 {
		return
	}
	// Bounded, so that one locked row cannot hold up every lease past its expiry.
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Lease/3)
	held, err := d.renewOnce(rctx, ids, attempts)
	cancel()
	if err != nil {
		// Unknown: try again next tick rather than cancel handlers that may be fine.
		d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "reconcile dispatcher: renewing leases failed", slog.String("error", err.Error()))
		return
	}
	d.leaseMu.Lock()
	for i, id := range ids {
		if l := d.leases[id]; l != nil && l.attempt == attempts[i] && !slices.Contains(held, id) {
			// The row was claimed again, or finished by a concurrent completion we are
			// about to see; in both cases this handler's work must not be kept.
			l.cancel(ErrLeaseLost)
		}
	}
	d.leaseMu.Unlock()
}

// renewOnce renews the given leases and returns the ids still held.
func (d *Dispatcher) renewOnce(ctx context.Context, ids, attempts []int64) ([]int64, error) {
	rows, err := d.db.Query(ctx, d.sql.renew, ids, attempts, d.cfg.Lease)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
