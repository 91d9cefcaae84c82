package stripeadapter

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// ObjectGateway reads one Stripe object type, described by an Object: a
// reconcile.BatchGateway[T] and reconcile.IDChecker, with an events feed and a reverse feed for
// lanes. Its calls go through the client this package builds (stripe-go's retries off, its
// logging silenced) and map Stripe's answers as the package doc's table says. It is safe for
// concurrent use.
type ObjectGateway[T any] struct {
	c        *Client
	obj      Object[T]
	skew     time.Duration
	maxPages int
	cacheTTL time.Duration // the look-ahead's; negative when off
	size     int
	ahead    *lookaheadOf[T] // nil when off
	mark     *readMark       // where the last bulk read from a cursor stopped (bulk.go)
}

var (
	_ reconcile.DatedBatchGateway[*stripe.Subscription] = (*ObjectGateway[*stripe.Subscription])(nil)
	_ reconcile.IDChecker                               = (*ObjectGateway[*stripe.Subscription])(nil)
)

// NewObjectGateway checks cfg and obj and returns a gateway of obj's objects. A Platform object
// (Accounts) refuses a cfg with StripeAccount.
func NewObjectGateway[T any](cfg GatewayConfig, obj Object[T]) (*ObjectGateway[T], error) {
	obj, err := obj.check()
	if err != nil {
		return nil, err
	}
	if obj.Platform && cfg.StripeAccount != "" {
		return nil, fmt.Errorf("stripeadapter: gateway config: %s are read on the platform, so StripeAccount must be empty", obj.plural())
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	g := &ObjectGateway[T]{c: c, obj: obj, skew: cmp.Or(cfg.CreatedSkew, DefaultCreatedSkew), maxPages: cfg.MaxListPages,
		cacheTTL: cmp.Or(cfg.ListCacheTTL, DefaultListCacheTTL), size: cmp.Or(cfg.ListCacheSize, DefaultListCacheSize), mark: &readMark{}}
	g.ahead = g.newLookahead()
	return g, nil
}

// newLookahead is a look-ahead of g's settings, nil when they turn it off.
func (g *ObjectGateway[T]) newLookahead() *lookaheadOf[T] {
	if g.cacheTTL < 0 {
		return nil
	}
	return newLookaheadOf(g.cacheTTL, g.size, g.obj.ID, g.c.now)
}

// ForAccount returns a gateway of the same objects on the connected account acct (acct_...):
// its calls carry Stripe-Account: acct, over the same stripe-go client and settings. It has its
// own look-ahead, so that no account is ever answered with another's objects. Pacing is the
// engine's limiter's, which the host passes per job: how to share one budget across accounts
// is the Connect fan-out's concern. A Platform object refuses.
func (g *ObjectGateway[T]) ForAccount(acct string) (*ObjectGateway[T], error) {
	if g.obj.Platform {
		return nil, fmt.Errorf("stripeadapter: %s are read on the platform, never for a connected account", g.obj.plural())
	}
	if !validID("acct_", acct) {
		return nil, fmt.Errorf("stripeadapter: %s is not an account id (acct_ and letters and digits)", redactKeys(shorten(acct)))
	}
	fa := *g
	fa.c = g.c.forAccount(acct)
	fa.ahead, fa.mark = fa.newLookahead(), &readMark{}
	return &fa, nil
}

// Account is the connected account g acts on, "" for the platform.
func (g *ObjectGateway[T]) Account() string { return g.c.account }

// Client is the client g calls through, for an extension of the kit that reads more than g's
// objects with the same key, account, timeout and error mapping (see Client).
func (g *ObjectGateway[T]) Client() *Client { return g.c }

// Object returns g's descriptor (a copy: changing it changes nothing in g).
func (g *ObjectGateway[T]) Object() Object[T] {
	obj, _ := g.obj.check() // checked when g was built: this only copies
	return obj
}

// String describes the gateway without its key.
func (g *ObjectGateway[T]) String() string {
	if g == nil || g.c == nil {
		return "stripeadapter.ObjectGateway{}"
	}
	return fmt.Sprintf("stripeadapter.ObjectGateway{object: %q, account: %q, timeout: %v, skew: %v}", g.obj.Name, g.c.account, g.c.timeout, g.skew)
}

// GoString describes the gateway without its key, also for %#v.
func (g *ObjectGateway[T]) GoString() string { return g.String() }

// CheckID rejects, without a call, an id that cannot be one of the objects': a ReviewError of
// kind invalid_external_id. The engine asks it before spending a call or a limiter token.
func (g *ObjectGateway[T]) CheckID(externalID string) error {
	if !g.obj.validID(externalID) {
		return &reconcile.ReviewError{Kind: reconcile.KindInvalidExternalID, Detail: g.invalidIDDetail(externalID)}
	}
	return nil
}

// invalidIDDetail explains a rejected id without storing an arbitrary amount of it.
func (g *ObjectGateway[T]) invalidIDDetail(id string) string {
	if id == "" {
		return fmt.Sprintf("the row has no %s id", g.obj.label())
	}
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	if g.obj.ValidID != nil {
		return fmt.Sprintf("%q is not a %s id", id, g.obj.label())
	}
	return fmt.Sprintf("%q is not a %s id (%s followed by letters and digits)", id, g.obj.label(), g.obj.IDPrefix)
}

// box decodes one object into a T for stripe-go's raw call, which wants a LastResponseSetter.
type box[T any] struct {
	stripe.APIResource
	v T
}

func (b *box[T]) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, &b.v) }

// Fetch retrieves one object, GET Path/{id}, its Expand paths expanded. An id that cannot be
// one of the objects' is a ReviewError of kind invalid_external_id, found without calling
// Stripe.
func (g *ObjectGateway[T]) Fetch(ctx context.Context, externalID string) (T, error) {
	var zero T
	if err := g.CheckID(externalID); err != nil {
		return zero, err
	}
	params := &stripe.Params{}
	for _, e := range g.obj.Expand {
		params.AddExpand(e)
	}
	var b box[T]
	if err := g.c.get(ctx, "retrieve "+externalID, g.c.sc.V1Events.B, g.c.sc.V1Events.Key, stripe.FormatURLPath(g.obj.Path+"/%s", externalID),
		params, params, nil, g.obj.missingCode, &b); err != nil {
		return zero, err
	}
	if err := g.notAnAnswer(externalID, b.v); err != nil {
		return zero, fmt.Errorf("stripeadapter: retrieve %s: %w", externalID, err)
	}
	return b.v, nil
}

// notAnAnswer tells whether v, answered with a success to a request about want, is not an
// answer at all: an object about another id (a misrouted proxy, a cache keyed wrongly), or one
// without a state (an empty or foreign body). Such an answer verifies nothing; the error wraps
// reconcile.ErrUnavailable, so the row is Unverifiable and never the cause of a command.
func (g *ObjectGateway[T]) notAnAnswer(want string, v T) error {
	switch {
	case isNil(v) || g.obj.ID(v) == "":
		return fmt.Errorf("Stripe answered 200 with no %s id, not about the object asked for "+
			"(a proxy or cache in between?): %w", g.obj.label(), reconcile.ErrUnavailable)
	case g.obj.ID(v) != want:
		return fmt.Errorf("Stripe answered 200 about %s, not about the object asked for "+
			"(a proxy or cache in between?): %w", g.c.redact(shorten(g.obj.ID(v))), reconcile.ErrUnavailable)
	case g.obj.State(v) == "":
		return fmt.Errorf("Stripe answered 200 with a %s without a status: %w", g.obj.label(), reconcile.ErrUnavailable)
	}
	return nil
}
