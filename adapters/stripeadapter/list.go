package stripeadapter

// One GET through the client: a page of a Stripe list, the call under the bulk fetch (bulk.go)
// and both feeds (feeds.go), the retrieve of one object (objectgateway.go), or an extension's
// call (Client.Get). Each goes through stripe-go's raw call with the client's key, account,
// timeout and error mapping, and decodes into the caller's type.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"

	"github.com/reconcilekit/reconcile"
)

// errCursorGone is a list call's answer when its starting_after or ending_before object no
// longer exists (an event past Stripe's 30 days, say).
var errCursorGone = errors.New("the list cursor's object no longer exists")

// Get makes exactly one GET of path (a collection, "/v1/disputes", or an object,
// "/v1/refunds/re_123") with query, and decodes Stripe's answer into out with encoding/json.
// op names the call in errors ("list disputes of pi_123"). It carries the client's key,
// account and timeout, and its errors are mapped as the package doc says: a 404 is
// reconcile.ErrNotFound, a 429 a *reconcile.RateLimitError, a 5xx or a timeout
// reconcile.ErrUnavailable, a 401 or 403 reconcile.ErrAbortBatch, keys redacted from every
// message. A list's query sets its own limit (at most 100); Get does not page.
func (c *Client) Get(ctx context.Context, op, path string, query url.Values, out any) error {
	return c.get(ctx, op, c.sc.V1Events.B, c.sc.V1Events.Key, path, &stripe.Params{}, nil, query, "", &decoded{v: out})
}

// decoded decodes an answer into v for stripe-go's raw call, which wants a LastResponseSetter.
type decoded struct {
	stripe.APIResource
	v any
}

func (d *decoded) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, d.v) }

// notAList is the error of a 200 that is not a list ({} from a misrouted proxy, say): it says
// nothing, not even that the list is empty.
func notAList(op string) error {
	return fmt.Errorf("stripeadapter: %s: Stripe answered 200 with an object that is not a list "+
		"(a proxy or cache in between?): %w", op, reconcile.ErrUnavailable)
}

// list makes exactly one list call, GET path with params, decoded into out. lp is params' own
// ListParams, which list completes with the context, page size and account.
func (c *Client) list(ctx context.Context, op string, b stripe.Backend, key, path string, lp *stripe.ListParams, params any, out stripe.LastResponseSetter) error {
	return c.listWith(ctx, op, b, key, path, lp, params, nil, out)
}

// listWith is list with extra parameters sent as they are (an object's ListParams).
func (c *Client) listWith(ctx context.Context, op string, b stripe.Backend, key, path string, lp *stripe.ListParams, params any, extra url.Values, out stripe.LastResponseSetter) error {
	if lp.Limit == nil {
		lp.Limit = stripe.Int64(listLimit)
	}
	return c.get(ctx, op, b, key, path, lp, params, extra, "", out)
}

// get makes exactly one GET of path with params and extra (in key order), decoded into out.
// common is params' own Params or ListParams, whose request settings get completes with the
// context and account. A 403 with the error code missing (if not empty) is ErrNotFound.
func (c *Client) get(ctx context.Context, op string, b stripe.Backend, key, path string, common interface{ GetParams() *stripe.Params },
	params any, extra url.Values, missing stripe.ErrorCode, out stripe.LastResponseSetter) error {
	p := common.GetParams()
	answer, cancel := c.begin(ctx, p)
	defer cancel()
	query := &form.Values{}
	if params != nil {
		form.AppendTo(query, params)
	}
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
