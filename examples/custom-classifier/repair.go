package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// IdempotencyKey derives the Idempotency-Key of a push from its command alone: the job, the
// record, the finding and the command name. Every attempt at one command sends the same key,
// whichever process makes it and however often it is retried, so the provider applies the push
// once. Drift that comes back after the finding was resolved is a new finding, with a new id,
// and therefore a new push with a new key. Nothing about the attempt (its number, the time)
// goes in.
func IdempotencyKey(c reconcile.Command) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{c.Job, c.RecordID, strconv.FormatInt(c.FindingID, 10), c.Name}, "\n")))
	return "reconcile-" + hex.EncodeToString(sum[:])
}

// Attempt is one try at applying a repair command.
type Attempt struct {
	Command reconcile.Command
	// N counts the attempts at the command from 1; 0 for a command skipped without one.
	N int
	// Key is the Idempotency-Key a push sent; empty for other commands.
	Key string
	// Did says what the attempt did, when it succeeded.
	Did string
	Err error
}

// Repairer applies the repair commands queued in the memory store's outbox, in order, through
// one handler per command name, and resolves each command's finding when its handler succeeds.
// It is the part of pgoutbox.Dispatcher this example needs: with PostgreSQL, register the same
// handlers with pgoutbox.HandleCommand and let the dispatcher claim, retry with backoff and
// park dead commands. Here a failure that may pass (reconcile.ErrUnavailable, a rate limit) is
// retried at once, up to maxAttempts, to keep the run short and its output fixed.
type Repairer struct {
	store      *memstore.Store[int64, Subscription]
	billing    *Billing
	classifier Classifier
	now        func() time.Time
	// withKeys sends IdempotencyKey with every push; false shows what happens without it.
	withKeys    bool
	maxAttempts int

	mu       sync.Mutex // serializes writers of a row: the canonical writer's lock
	done     map[int64]bool
	attempts []Attempt
}

// Apply runs every queued command not yet applied. A command whose finding is already
// resolved is skipped, as pgoutbox.HandleCommand does: a person decided (or a webhook applied
// the change), and a repair must not overrule them.
func (r *Repairer) Apply(ctx context.Context) {
	for _, qc := range r.store.Commands() {
		if r.done[qc.Seq] {
			continue
		}
		if f, err := r.store.Finding(ctx, qc.FindingID); err == nil && !f.Open() {
			r.attempts = append(r.attempts, Attempt{Command: qc.Command,
				Did: fmt.Sprintf("skipped: finding %d already resolved as %s by %s", f.ID, f.Resolution, f.ResolvedBy)})
			r.done[qc.Seq] = true
			continue
		}
		for n := 1; n <= r.maxAttempts; n++ {
			var key string
			if qc.Name == CmdPushSeats && r.withKeys {
				key = IdempotencyKey(qc.Command)
			}
			did, err := r.handle(ctx, qc.Command, key)
			r.attempts = append(r.attempts, Attempt{Command: qc.Command, N: n, Key: key, Did: did, Err: err})
			if err == nil {
				r.done[qc.Seq] = true
				// With pgstore this happens in the handler's transaction, with the change.
				err := r.store.ResolveFinding(ctx, qc.FindingID, reconcile.Resolution{
					As: reconcile.ResolutionRepaired, By: "reconciler", Note: did})
				if err != nil && !errors.Is(err, reconcile.ErrAlreadyResolved) {
					r.attempts[len(r.attempts)-1].Err = err
				}
				break
			}
			if !isUnavailable(err) {
				break // it would fail the same way again: left for a person, the finding stays open
			}
		}
	}
}

// Attempts returns every attempt made, in order.
func (r *Repairer) Attempts() []Attempt { return r.attempts }

// handle applies one command; key is the idempotency key of a push.
func (r *Repairer) handle(ctx context.Context, c reconcile.Command, key string) (string, error) {
	switch c.Name {
	case CmdApplyCanceled:
		return r.setStatus(c.RecordID, "active", "canceled")
	case CmdApplyActivated:
		return r.setStatus(c.RecordID, "pending", "active")
	case CmdPushSeats:
		return r.pushSeats(ctx, c, key)
	default:
		return "", fmt.Errorf("no handler for command %q", c.Name)
	}
}

// setStatus is the canonical writer of a subscription's status, the one function the provider's
// webhook handler would call too: a guarded transition that is a no-op when the row is no
// longer in the state it expects (the webhook got there first), so applying it twice is
// harmless.
func (r *Repairer) setStatus(recordID, from, to string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	row, err := r.row(recordID)
	if err != nil {
		return "", err
	}
	if row.Local.Status != from {
		return fmt.Sprintf("no-op: ours is %s already", row.Local.Status), nil
	}
	row.Local.Status = to
	row.UpdatedAt = r.now()
	r.store.Put(row)
	return fmt.Sprintf("ours %s -> %s", from, to), nil
}

// pushSeats sends the seats we sold to the provider, with the command's idempotency key (none
// if key is empty). It pushes only while our row is still what the finding judged: if the row
// changed since, the push is a no-op and the next cycle judges the row afresh.
func (r *Repairer) pushSeats(ctx context.Context, c reconcile.Command, key string) (string, error) {
	r.mu.Lock()
	row, err := r.row(c.RecordID)
	r.mu.Unlock()
	if err != nil {
		return "", err
	}
	if now := r.classifier.LocalState(row.Local); now != c.ExpectedLocal {
		return fmt.Sprintf("no-op: ours changed since the finding (%s)", now), nil
	}
	s, replayed, err := r.billing.SetQuantity(ctx, row.ExternalID, row.Local.Seats, key)
	if err != nil {
		return "", err
	}
	did := fmt.Sprintf("sent %s to %s", seats(row.Local.Seats), row.ExternalID)
	if replayed {
		return did + ": the provider replayed its first answer, nothing applied again", nil
	}
	return did + fmt.Sprintf(": provider now bills %d", s.Quantity), nil
}

// row reads the row a command names.
func (r *Repairer) row(recordID string) (memstore.Row[int64, Subscription], error) {
	key, err := strconv.ParseInt(recordID, 10, 64)
	if err != nil {
		return memstore.Row[int64, Subscription]{}, fmt.Errorf("bad record id %q: %w", recordID, err)
	}
	row, ok := r.store.Get(key)
	if !ok {
		return row, errors.New("no subscription row " + recordID)
	}
	return row, nil
}
