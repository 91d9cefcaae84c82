// Package browsertest holds the review console's browser tests: they drive the console in
// headless Chromium (or Chrome, found the way chromedp finds it), resolving a finding,
// searching findings and reading the fields that differ, and reading the overview's coverage
// chart. It is a module of its own so that
// chromedp is a requirement of this test module only, never of the console's.
package browsertest
