// Package stripeconnect checks a Stripe platform's connected accounts: [AccountsCheck] proves,
// under one job, that the host's accounts table and the accounts connected to the platform
// agree both ways: missing_externally for a row Stripe does not connect (its 403
// account_invalid to the retrieve of an account is read as "no such account"),
// missing_locally for a connected account no row names.
//
// A platform reconciles its connected accounts' objects with a reconcile.FanOut: per account,
// a gateway from stripeadapter.ObjectGateway.ForAccount (the platform's client and key, every
// request carrying Stripe-Account), a store over the account's rows (pgstore's Filter on the
// account column) and a job of its own name, so each account keeps its own cursor and lane
// positions; one Limiter for all. Stripe documents rate limits per Stripe account without
// saying whose budget a request with Stripe-Account counts against, so the conservative
// reading is taken: the platform's, which one shared Limiter never exceeds whichever way Stripe
// counts (accounts.go says what Stripe's documentation says).
package stripeconnect
