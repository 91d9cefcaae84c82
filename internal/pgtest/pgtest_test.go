package pgtest

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPoolIsolation runs two parallel subtests that each create a table
// with the same name in their own schema, and checks that each sees only
// its own rows, that search_path is its schema, and that the schemas are
// dropped afterwards.
func TestPoolIsolation(t *testing.T) {
	t.Parallel()
	nameRE := regexp.MustCompile(`^t_[0-9a-f]{16}$`)
	var schemas [2]string
	// written[i] is closed once subtest i has inserted its rows (or given up),
	// so that each subtest reads after both have written when they do run
	// in parallel. The wait is bounded because with -parallel=1 they don't.
	var written [2]chan struct{}
	for i := range written {
		written[i] = make(chan struct{})
	}

	t.Run("group", func(t *testing.T) {
		for i := range schemas {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				var once sync.Once
				markWritten := func() { once.Do(func() { close(written[i]) }) }
				defer markWritten()
				pool, schema := PoolSchema(t)
				schemas[i] = schema
				if !nameRE.MatchString(schema) {
					t.Errorf("schema name %q does not match %v", schema, nameRE)
				}

				var current string
				if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&current); err != nil {
					t.Fatal(err)
				}
				if current != schema {
					t.Errorf("current_schema() = %q, want %q", current, schema)
				}
				var path string
				if err := pool.QueryRow(ctx, "SHOW search_path").Scan(&path); err != nil {
					t.Fatal(err)
				}
				if path != schema && path != `"`+schema+`"` {
					t.Errorf("search_path = %q, want only %q", path, schema)
				}

				if _, err := pool.Exec(ctx, "CREATE TABLE items (owner int NOT NULL)"); err != nil {
					t.Fatal(err)
				}
				for range 3 {
					if _, err := pool.Exec(ctx, "INSERT INTO items (owner) VALUES ($1)", i); err != nil {
						t.Fatal(err)
					}
				}
				markWritten()
				select {
				case <-written[1-i]:
				case <-time.After(5 * time.Second):
					t.Logf("the other subtest has not written yet; checking anyway")
				}

				var rows, foreign int
				err := pool.QueryRow(ctx,
					"SELECT count(*), count(*) FILTER (WHERE owner <> $1) FROM items", i).Scan(&rows, &foreign)
				if err != nil {
					t.Fatal(err)
				}
				if rows != 3 || foreign != 0 {
					t.Errorf("items has %d rows, %d of them from another test; want 3, 0", rows, foreign)
				}
			})
		}
	})
	if t.Failed() {
		return
	}

	if schemas[0] == schemas[1] {
		t.Fatalf("both subtests got schema %q", schemas[0])
	}
	conn, err := pgx.Connect(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range schemas {
		var exists bool
		err := conn.QueryRow(context.Background(),
			"SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", s).Scan(&exists)
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("schema %s still exists after the test finished", s)
		}
	}
}

func TestPool(t *testing.T) {
	t.Parallel()
	pool := Pool(t)
	if got := pool.Config().MaxConns; got != MaxConns {
		t.Errorf("MaxConns = %d, want %d", got, MaxConns)
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("new schema has %d tables, want 0", n)
	}
}
