//go:build !linux

package main

import (
	"context"
	"testing"
)

// peakRSS is Linux's only (peakrss_linux_test.go): what a child's ru_maxrss counts, and in
// which unit, is each kernel's own, and it was checked on Linux alone.
type peakRSS struct{}

func newPeakRSS(t *testing.T) peakRSS {
	t.Helper()
	t.Fatal("measuring a command's peak memory is implemented for Linux only (peakrss_linux_test.go); run this test on Linux, as CI does")
	return peakRSS{}
}

func (peakRSS) run(*testing.T, context.Context, []string, string, ...string) (code int, stdout, stderr string, peak uint64) {
	return 0, "", "", 0
}
