// Package stripemock starts stripe-mock, Stripe's own stateless mock of its API, for tests that
// check our requests against Stripe's OpenAPI specification: a parameter Stripe does not know
// is a 400 there, and every answer has the shape of a real one. Behaviour over time (state,
// pagination, faults) is tested against adapters/stripeadapter/stripetest instead.
//
// # Finding stripe-mock
//
// URL looks, in order, for a running server in $STRIPE_MOCK_URL, a binary in $STRIPE_MOCK_BIN,
// stripe-mock on $PATH or in $(go env GOPATH)/bin, and otherwise installs Version into the
// user's cache directory with `go install` (once; later runs reuse it). A server it starts
// listens on a free loopback port and lives as long as the test binary. If none can be had,
// the test fails with a message that says how to provide one.
//
// # Usage
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		stripemock.Stop() // no stripe-mock outlives the test binary
//		os.Exit(code)
//	}
//
//	func TestWire(t *testing.T) {
//		base := stripemock.URL(t)
//		...
//	}
//
// On Linux the server is also killed with the test binary however it exits (Pdeathsig).
package stripemock
