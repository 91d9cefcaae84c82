package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// realStripe is Stripe's test mode as real mode uses it: a stripe-go client that plants the
// run's PaymentIntents (demo_real_plant.go), and the gateway's configuration, whose HTTP client logs
// the reconciler's requests for the checks.
type realStripe struct {
	runID   string           // the value of every planted PaymentIntent's metadataKey
	key     func() secretKey // a func, so that no fmt verb ever prints it
	baseURL string           // empty: api.stripe.com; stripe-mock's in the wire test
	wire    bool             // baseURL is stripe-mock's: see wireTimes and enforce
	sc      *stripe.Client   // the planter's
	limiter reconcile.Limiter
	log     *requestLog // the gateway's requests

	creates, confirms, cancels, refunds atomic.Int64 // the planter's calls
	// plantedAt is when the planting's last call returned; newestOrphan is the created time,
	// by Stripe, of the newest PaymentIntent only at Stripe that the reverse scan must report.
	plantedAt, newestOrphan time.Time
}

// wireTimes are real mode's lanes' times against stripe-mock. It is stateless: it keeps no event
// log to wait for, and answers with fixtures created in 2009, so nothing needs to settle.
var wireTimes = laneTimes{settle: time.Millisecond, window: realWindow, grace: realGrace, young: "a moment"}

// planterTimeout bounds each of the planter's calls.
const planterTimeout = 30 * time.Second

// newRealStripe returns real mode's Stripe for opts, with a new run id.
func newRealStripe(opts options, limiter reconcile.Limiter) (*realStripe, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("payments: run id: %w", err)
	}
	rs := &realStripe{
		runID:   time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:]),
		key:     func() secretKey { return opts.StripeKey },
		baseURL: opts.stripeMock,
		wire:    opts.stripeMock != "",
		limiter: limiter,
		log:     newRequestLog(nil),
	}
	bc := &stripe.BackendConfig{
		HTTPClient: &http.Client{Timeout: planterTimeout},
		// A create whose answer was lost is sent again with the same idempotency key, and
		// Stripe answers it with the PaymentIntent the first one made.
		MaxNetworkRetries: stripe.Int64(2),
		// stripe-go would print Stripe's error messages, which can quote the key, masked.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if rs.baseURL != "" {
		bc.URL = stripe.String(strings.TrimRight(rs.baseURL, "/"))
	}
	rs.sc = stripe.NewClient(string(rs.key()), stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))
	return rs, nil
}

// gatewayConfig is the Stripe gateway's configuration: what a host gives, its key and no
// BaseURL (but in the wire test), and an HTTP client that only logs the requests.
func (rs *realStripe) gatewayConfig() stripeadapter.GatewayConfig {
	return stripeadapter.GatewayConfig{Key: string(rs.key()), BaseURL: rs.baseURL, HTTPClient: &http.Client{Transport: rs.log}}
}

// ours reports whether pi was created by this run: the reverse scan's Include.
func (rs *realStripe) ours(pi *stripe.PaymentIntent) bool {
	return pi.Metadata[metadataKey] == rs.runID
}

// describe names the Stripe the run talks to.
func (rs *realStripe) describe() string {
	if rs.wire {
		return "stripe-mock at " + rs.baseURL
	}
	return "Stripe's API in test mode"
}

// enforce returns err, the result of a check, but against stripe-mock: its answers are
// fixtures, not what was planted, so the checks are printed and not enforced there.
func (rs *realStripe) enforce(out io.Writer, err error) error {
	if err == nil || !rs.wire {
		return err
	}
	fmt.Fprintln(out, "  (stripe-mock answers with fixtures, not the planted drift: these differences are expected there and not enforced.)")
	return nil
}

// redact removes API keys from s: the demo's own, and anything that looks like one (whole or
// masked, as Stripe's error messages may quote them).
func (rs *realStripe) redact(s string) string {
	if rs.key != nil && rs.key() != "" {
		s = strings.ReplaceAll(s, string(rs.key()), redact.Mask)
	}
	return redact.Keys(s)
}

// failed describes the planter's failed call op, without the key.
func (rs *realStripe) failed(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("payments: %s: %s", op, rs.redact(err.Error()))
	}
	switch se.HTTPStatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("payments: %s: Stripe rejected STRIPE_SECRET_KEY: it is wrong, expired or revoked", op)
	case http.StatusForbidden:
		return fmt.Errorf("payments: %s: STRIPE_SECRET_KEY may not do this (%s); a restricted key needs "+
			"PaymentIntents: write, Refunds: write, Disputes: read, Charges: read and Events: read", op, rs.redact(se.Msg))
	case http.StatusTooManyRequests:
		return fmt.Errorf("payments: %s: Stripe answered 429, too many requests: lower -rps (test mode allows 25 a second) (%s)",
			op, rs.redact(se.Msg))
	}
	desc := fmt.Sprintf("Stripe answered %d", se.HTTPStatusCode)
	if se.Code != "" {
		desc += " " + string(se.Code)
	}
	if se.RequestID != "" {
		desc += " (request " + se.RequestID + ")"
	}
	return fmt.Errorf("payments: %s: %s: %s", op, desc, rs.redact(se.Msg))
}
