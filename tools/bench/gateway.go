package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// mixGateway is a zero-latency, in-process PaymentIntent gateway that answers from the number
// in the id (pi_<i>) through seedMix, with no table of answers, so that it costs the same
// at any row count. It counts its calls.
type mixGateway struct {
	calls atomic.Int64
}

// fetch answers for PaymentIntent id: its status per seedMix, or ErrUnavailable for the 1%.
func (g *mixGateway) fetch(_ context.Context, id string) (*stripe.PaymentIntent, error) {
	g.calls.Add(1)
	num, ok := strings.CutPrefix(id, "pi_")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i <= 0 {
		// Not an id the benchmark loaded: a bug, so stop rather than count it Unverifiable.
		return nil, fmt.Errorf("bench: gateway asked about unexpected id %q: %w", id, reconcile.ErrAbortBatch)
	}
	_, ext, available := seedMix(i)
	if !available {
		return nil, reconcile.ErrUnavailable
	}
	return &stripe.PaymentIntent{ID: id, Status: ext}, nil
}

// gateway returns g as a reconcile.Gateway.
func (g *mixGateway) gateway() reconcile.GatewayFunc[*stripe.PaymentIntent] {
	return g.fetch
}
