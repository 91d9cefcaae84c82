package pgbudget_test

import (
	"testing"

	"github.com/reconcilekit/reconcile/internal/leaktest"
)

// A Wait sleeps on a timer and Throttle runs on its caller's goroutine: no test leaves a
// goroutine behind, whether its Waits were granted, refused or cancelled.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
