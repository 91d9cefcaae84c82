package stripeadapter

// One page of a Stripe list, the call under the bulk fetch (bulk.go) and both feeds (feeds.go):
// the gateway's client, key, account, timeout and error mapping around stripe-go's raw call.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"
)

// errCursorGone is a list call's answer when its starting_after or ending_before object no
// longer exists (an event past Stripe's 30 days, say).
var errCursorGone = errors.New("the list cursor's object no longer exists")

// list makes exactly one list call, GET path with params, decoded into out. lp is params' own
// ListParams, which list completes with the context, page size and account.
func (g *Gateway) list(ctx context.Context, op string, b stripe.Backend, key, path string, lp *stripe.ListParams, params any, out stripe.LastResponseSetter) error {
	callCtx, answer := withAnswer(ctx)
	callCtx, cancel := context.WithTimeout(callCtx, g.timeout)
	defer cancel()
	lp.Context = callCtx
	if lp.Limit == nil {
		lp.Limit = stripe.Int64(listLimit)
	}
	if g.account != "" {
		lp.SetStripeAccount(g.account)
	}
	query := &form.Values{}
	form.AppendTo(query, params)
	// The same call stripe-go's List makes for one page, without its iterator, which keeps
	// has_more to itself.
	if err := b.CallRaw(http.MethodGet, path, key, []byte(query.Encode()), lp.GetParams(), out); err != nil {
		var se *stripe.Error
		if ctx.Err() == nil && errors.As(err, &se) && se.Code == stripe.ErrorCodeResourceMissing &&
			(se.Param == "starting_after" || se.Param == "ending_before") {
			return fmt.Errorf("stripeadapter: %s: %w (%s)", op, errCursorGone, g.redact(se.Msg))
		}
		return g.mapError(ctx, op, err, answer)
	}
	return nil
}
