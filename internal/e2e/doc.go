// Package e2e holds the tests that span adapters in different modules: the integrated key-leak
// test drives a sweep through stripeadapter and pgstore and then reads the metrics
// (prommetrics) and the console, and every Go block of the README compiles in
// readme_code_test.go, to which TestTheREADMEsGoIsHere holds the README. It is a test-only
// module of its own so that neither adapter's module requires the other's dependencies: a
// consumer of stripeadapter pulls stripe-go, not client_golang.
package e2e
