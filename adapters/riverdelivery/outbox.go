package riverdelivery

import (
	"fmt"
	"strconv"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// fence is what an outbox row handed over to River holds in lease_owner while its command
// waits: the one job that may apply it. The Deliverer writes it when it enqueues the job,
// Redrive when it enqueues another; marking the row done clears it.
func fence(jobID int64) string { return "river job " + strconv.FormatInt(jobID, 10) }

// outboxSQL holds the statements on one set of tables' outbox.
type outboxSQL struct {
	tables pgstore.Tables // Prefix resolved
	// claim locks row $1 and reads what decides whether a job may apply it, and the command.
	claim string
	// done marks row $1, claimed for fence $2, done.
	done string
	// lock locks row $1 and reads whether it waits for River, and its finding (Redrive).
	lock string
	// hand names on rows $1 the jobs $2 (fences) enqueued for them, if they wait for River.
	hand string
	// event records in finding $1's history (if not NULL) that actor $2 re-drove its command
	// ($3, a note).
	event string
}

func newOutboxSQL(t pgstore.Tables) (outboxSQL, error) {
	prefix, err := pgtables.Resolve(t.Prefix, t.Schema)
	if err != nil {
		return outboxSQL{}, fmt.Errorf("tables: %w", err)
	}
	t.Prefix = prefix
	outbox := pgtables.Name(prefix, t.Schema, "outbox")
	// A row waits for River while it is pending and handed over (processed_at set by pgstore's
	// commit, which no pgoutbox Dispatcher claims).
	return outboxSQL{
		tables: t,
		claim: `SELECT event_type, payload, status, processed_at IS NOT NULL, lease_owner
			FROM ` + outbox + ` WHERE id = $1 FOR UPDATE`,
		lock: `SELECT status, processed_at IS NOT NULL, finding_id FROM ` + outbox + ` WHERE id = $1 FOR UPDATE`,
		done: `UPDATE ` + outbox + ` SET status = 'done', processed_at = now(), lease_owner = NULL, last_error = NULL
			WHERE id = $1 AND status = 'pending' AND processed_at IS NOT NULL AND lease_owner = $2`,
		hand: `UPDATE ` + outbox + ` AS o SET lease_owner = j.fence FROM unnest($1::bigint[], $2::text[]) AS j(id, fence)
			WHERE o.id = j.id AND o.status = 'pending' AND o.processed_at IS NOT NULL`,
		event: `INSERT INTO ` + pgtables.Name(prefix, t.Schema, "finding_events") + ` (finding_id, action, actor, note)
			SELECT $1, 'command redriven', $2, $3 WHERE $1::bigint IS NOT NULL`,
	}, nil
}
