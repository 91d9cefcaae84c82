package stripeadapter

import (
	"context"
	"net/http"
	"net/url"

	"github.com/stripe/stripe-go/v82"
)

// Post makes exactly one POST of path with form through the client, acting on its account, with
// its error mapping, and decodes the answer into out. stripe-go gives the request an
// idempotency key. The kit reads from Stripe; an extension posts only what creates no money
// movement (stripepayouts runs a report).
func (c *Client) Post(ctx context.Context, op, path string, form url.Values, out any) error {
	p := &stripe.Params{}
	answer, cancel := c.begin(ctx, p)
	defer cancel()
	if err := c.sc.V1Events.B.CallRaw(http.MethodPost, path, c.sc.V1Events.Key, []byte(form.Encode()), p, &decoded{v: out}); err != nil {
		return c.mapError(ctx, op, err, answer, "")
	}
	return nil
}
