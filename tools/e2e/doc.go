// Package e2e holds the tests that span adapters in different modules: the integrated key-leak
// test drives a sweep through stripeadapter and pgstore and then reads the metrics
// (prommetrics) and the console, and every Go block of the README and of the root package's
// doc compiles in docs_code_test.go, to which TestEveryGoBlockOfTheREADMEAndPackageDocIsHere
// holds them. It is in the tools module, which no public module requires,
// so that neither adapter's module requires the other's dependencies: a consumer of
// stripeadapter pulls stripe-go, not client_golang.
package e2e
