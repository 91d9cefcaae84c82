// Package pgtest is the harness for tests that need a real PostgreSQL database. Tests that
// touch SQL run against PostgreSQL itself, never a mock, and are never skipped for lack of one.
//
// # Finding a database
//
// URL finds the database: it uses $TEST_DATABASE_URL, else $DATABASE_URL, else
// pgenv.DefaultURL. The first call in a test binary pings that database (once per process). If
// it does not answer, the test fails with a message that says how to provide a database (the
// local server, or a postgres:16-alpine container started with one docker command). pgtest
// starts no container itself, so that no container library is a requirement of the root
// module.
//
// # One schema per test
//
// Pool and PoolSchema give each caller its own freshly created schema with a random name and a
// pgxpool.Pool (at most MaxConns connections) whose connections have search_path set to that
// schema only, so tests that use them may run with t.Parallel and may create tables with the
// same names without seeing each other's rows. The pool is closed and the schema dropped
// (CASCADE) when the test finishes:
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		pool := pgtest.Pool(t)
//		if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
//			t.Fatal(err)
//		}
//		...
//	}
package pgtest
