package reconcile_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// countingLimiter grants every call at once and counts them.
type countingLimiter struct{ n atomic.Int64 }

func (l *countingLimiter) Wait(context.Context) error { l.n.Add(1); return nil }

// batchCheckingGateway is a BatchGateway with an IDChecker.
type batchCheckingGateway struct {
	*batchGateway
}

func (g batchCheckingGateway) CheckID(id string) error {
	return checkingGateway{g.fakeGateway}.CheckID(id)
}

func TestPerObjectHidesTheBulkPathAndKeepsTheIDChecker(t *testing.T) {
	world := paymentsWorld(20)
	newBatch := func() *batchGateway {
		return &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(world)), listed: world, pageSize: 100}
	}
	for _, tc := range []struct {
		name        string
		gw          func() (reconcile.Gateway[string], *fakeGateway, *batchGateway)
		wantChecker bool
	}{
		{"batch gateway with an id checker", func() (reconcile.Gateway[string], *fakeGateway, *batchGateway) {
			bg := newBatch()
			return batchCheckingGateway{bg}, bg.fakeGateway, bg
		}, true},
		{"batch gateway without an id checker", func() (reconcile.Gateway[string], *fakeGateway, *batchGateway) {
			bg := newBatch()
			return bg, bg.fakeGateway, bg
		}, false},
		{"plain gateway with an id checker", func() (reconcile.Gateway[string], *fakeGateway, *batchGateway) {
			g := newFakeGateway(0, answerFrom(world))
			return checkingGateway{g}, g, nil
		}, true},
		{"plain gateway", func() (reconcile.Gateway[string], *fakeGateway, *batchGateway) {
			g := newFakeGateway(0, answerFrom(world))
			return g, g, nil
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, fake, bg := tc.gw()
			gw := reconcile.PerObject(inner)
			if _, ok := gw.(reconcile.BatchGateway[string]); ok {
				t.Fatal("PerObject kept the BatchGateway ability")
			}
			if _, ok := gw.(reconcile.IDChecker); ok != tc.wantChecker {
				t.Fatalf("PerObject's gateway is an IDChecker: %t, want %t", ok, tc.wantChecker)
			}

			// Through the engine: 20 valid ids and 5 invalid ones.
			c := newClock()
			s := memstore.New[int64, string](memstore.Options{Now: c.Now})
			old := c.Now().Add(-time.Hour)
			for i := int64(1); i <= 25; i++ {
				id := extID(i)
				if i > 20 {
					id = fmt.Sprintf("ch_%d", i)
				}
				s.Put(memstore.Row[int64, string]{Key: i, ExternalID: id, Local: "paid", CreatedAt: old, UpdatedAt: old})
			}
			lim := &countingLimiter{}
			cfg := config(s, gw)
			cfg.Limiter = lim
			rep := cycle(t, cfg)
			if bg != nil && len(bg.lookups) != 0 {
				t.Errorf("FetchBatch was asked about %d rows through PerObject", len(bg.lookups))
			}
			wantCalls := 25
			if tc.wantChecker {
				wantCalls = 20 // the invalid ids cost no call
			}
			if fake.Calls() != wantCalls || rep.GatewayCalls != wantCalls || int(lim.n.Load()) != wantCalls {
				t.Errorf("%d Fetch calls, %d reported, %d limiter tokens; want %d", fake.Calls(), rep.GatewayCalls, lim.n.Load(), wantCalls)
			}
			if got := rep.Verdicts[reconcile.NeedsReview]; got < 5 {
				t.Errorf("%d NeedsReview rows, want at least the 5 invalid ids", got)
			}
		})
	}
	if reconcile.PerObject[string](nil) != nil {
		t.Error("PerObject(nil) is not nil")
	}
}
