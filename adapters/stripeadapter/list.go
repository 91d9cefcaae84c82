package stripeadapter

// One GET through the client: a page of a Stripe list, the call under the bulk fetch (bulk.go),
// both feeds (feeds.go) and the follow-ups (moneyreads.go), or the retrieve of one object
// (objectgateway.go). Each goes through stripe-go's raw call with the client's key, account,
// timeout and error mapping, and decodes into the caller's type.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"
)

// errCursorGone is a list call's answer when its starting_after or ending_before object no
// longer exists (an event past Stripe's 30 days, say).
var errCursorGone = errors.New("the list cursor's object no longer exists")

// list makes exactly one list call, GET path with params, decoded into out. lp is params' own
// ListParams, which list completes with the context, page size and account.
func (c *client) list(ctx context.Context, op string, b stripe.Backend, key, path string, lp *stripe.ListParams, params any, out stripe.LastResponseSetter) error {
	return c.listWith(ctx, op, b, key, path, lp, params, nil, out)
}

// listWith is list with extra parameters sent as they are (an object's ListParams).
func (c *client) listWith(ctx context.Context, op string, b stripe.Backend, key, path string, lp *stripe.ListParams, params any, extra url.Values, out stripe.LastResponseSetter) error {
	if lp.Limit == nil {
		lp.Limit = stripe.Int64(listLimit)
	}
	return c.get(ctx, op, b, key, path, lp, params, extra, "", out)
}

// get makes exactly one GET of path with params and extra (in key order), decoded into out.
// common is params' own Params or ListParams, whose request settings get completes with the
// context and account. A 403 with the error code missing (if not empty) is ErrNotFound.
func (c *client) get(ctx context.Context, op string, b stripe.Backend, key, path string, common interface{ GetParams() *stripe.Params },
	params any, extra url.Values, missing stripe.ErrorCode, out stripe.LastResponseSetter) error {
	callCtx, answer := withAnswer(ctx)
	callCtx, cancel := context.WithTimeout(callCtx, c.timeout)
	defer cancel()
	p := common.GetParams()
	p.Context = callCtx
	if c.account != "" {
		p.SetStripeAccount(c.account)
	}
	query := &form.Values{}
	form.AppendTo(query, params)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		for _, v := range extra[k] {
			query.Add(k, v)
		}
	}
	// The same call stripe-go's List and Retrieve make, without the List iterator, which keeps
	// has_more to itself, and decoding into any type.
	if err := b.CallRaw(http.MethodGet, path, key, []byte(query.Encode()), p, out); err != nil {
		var se *stripe.Error
		if ctx.Err() == nil && errors.As(err, &se) && se.Code == stripe.ErrorCodeResourceMissing &&
			(se.Param == "starting_after" || se.Param == "ending_before") {
			return fmt.Errorf("stripeadapter: %s: %w (%s)", op, errCursorGone, c.redact(se.Msg))
		}
		return c.mapError(ctx, op, err, answer, missing)
	}
	return nil
}
