package pgoutbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
)

// A handler returning Permanent or RetryLater of a nil error (return
// pgoutbox.Permanent(check()) where check found nothing wrong), or a nil pointer of its own
// error type, asked for an outcome; the dispatcher records it, instead of panicking on the
// error's text outside the handler's recover, which took the whole process down.
// codeError is a host's error type whose Error, like most, assumes a non-nil receiver.
type codeError struct{ code string }

func (e *codeError) Error() string { return "code " + e.code }

func TestAMarkerOfANilErrorIsRecordedWithoutAPanic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		err    error
		status string
	}{
		{"Permanent(nil)", pgoutbox.Permanent(nil), "dead"},
		{"RetryLater(time.Hour, nil)", pgoutbox.RetryLater(time.Hour, nil), "pending"},
		{"a nil *T whose Error dereferences it", (*codeError)(nil), "pending"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool := outboxWorld(t)
			ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
			d := newDispatcher(t, pool, pgoutbox.Config{}, map[string]pgoutbox.Handler{
				"Apply": func(context.Context, pgx.Tx, pgoutbox.Delivery) error { return c.err }})
			if n, err := d.Work(context.Background()); n != 1 || err != nil {
				t.Fatalf("Work = %d, %v; want the command", n, err)
			}
			if got := command(t, pool, ids[0]); got.Status != c.status {
				t.Fatalf("command %+v, want %s", got, c.status)
			}
		})
	}
}
