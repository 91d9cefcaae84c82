// Package e2e holds the tests that span adapters in different modules: the integrated key-leak
// test drives a sweep through stripeadapter and pgstore and then reads the metrics
// (prommetrics) and the console. It is in the tools module, which no public module requires,
// so that neither adapter's module requires the other's dependencies: a consumer of
// stripeadapter pulls stripe-go, not client_golang.
package e2e
