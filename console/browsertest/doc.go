// Package browsertest holds the review console's browser test: it drives the console in
// headless Chromium (or Chrome, found the way chromedp finds it). It is a module of its own so
// that chromedp is a requirement of this test module only, never of the console's.
package browsertest
