package pgoutbox_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
)

// A handler's error is stored on its row and logged. Whatever its text (a NUL, bytes that are
// not UTF-8, a multi-byte character where the stored text is cut, a Stripe key quoted back by
// a client), the outcome it asks for is recorded, and the key reaches neither the row nor the
// log.
func TestAnyHandlerErrorTextIsRecordedAndNoKeyIsKept(t *testing.T) {
	t.Parallel()
	const key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	cases := []struct {
		name string
		err  error
	}{
		{"a NUL byte", errors.New("bad record id \x00x")},
		{"bytes that are not UTF-8", errors.New("bad record id \xff\xfe")},
		{"a multi-byte character where the text is cut", errors.New(strings.Repeat("a", 2000-len("permanent: ")-1) + "é and more")},
		{"a Stripe key", errors.New("stripe: Invalid API Key provided: " + key)},
		{"a Stripe key past where the text is cut", errors.New(strings.Repeat("a", 1990) + " " + key)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool := outboxWorld(t)
			ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
			var logged bytes.Buffer
			d := newDispatcher(t, pool, pgoutbox.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))},
				map[string]pgoutbox.Handler{"Apply": func(context.Context, pgx.Tx, pgoutbox.Delivery) error {
					return pgoutbox.Permanent(c.err)
				}})
			if n, err := d.Work(context.Background()); n != 1 || err != nil {
				t.Fatalf("Work = %d, %v; want the command", n, err)
			}
			row := command(t, pool, ids[0])
			if row.Status != "dead" || row.Failures != 1 {
				t.Fatalf("the command is %s after %d failures, want dead after 1 (its error was not recorded)", row.Status, row.Failures)
			}
			var history string
			if err := pool.QueryRow(context.Background(), `SELECT errors::text FROM reconcile_outbox WHERE id = $1`, ids[0]).Scan(&history); err != nil {
				t.Fatal(err)
			}
			for where, text := range map[string]string{"last_error": row.LastError, "errors": history, "the log": logged.String()} {
				if strings.Contains(text, "sk_live_4eC39") || !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
					t.Errorf("%s holds a key, a NUL or bytes that are not UTF-8: %q", where, text)
				}
			}
			if !strings.Contains(row.LastError, "bad record id") && !strings.Contains(row.LastError, "aaa") && !strings.Contains(row.LastError, "Invalid API Key") {
				t.Errorf("last_error %q lost the handler's message", row.LastError)
			}
		})
	}
}
