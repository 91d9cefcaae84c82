package pgoutbox

import (
	"time"

	"github.com/reconcilekit/reconcile"
)

// observe reports one attempt to the configured Observer, if any.
func (d *Dispatcher) observe(del Delivery, start time.Time, outcome string, err error) {
	if d.cfg.Observer == nil {
		return
	}
	d.cfg.Observer.CommandAttempted(reconcile.CommandAttempt{Command: del.Name, ID: del.ID, Outcome: outcome, Duration: time.Since(start), Err: err})
}
