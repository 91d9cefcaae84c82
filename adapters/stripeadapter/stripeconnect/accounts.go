package stripeconnect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// The rate budget. Stripe's rate-limit documentation measures limits "per Stripe account"
// (100 requests per second in live mode, 25 in a sandbox, 25 per second per endpoint unless
// noted), and the Connect guide to making calls for connected accounts links to it without
// saying whose budget a request made with the platform's key and a Stripe-Account header
// counts against. The only Connect rule stated is for the Meter events endpoint, whose calls
// on a connected account count toward the basic limit. We therefore take the conservative
// reading: every request made with the platform's key counts against the platform's budget
// (and those of one endpoint, such as every account's PaymentIntents list, against that
// endpoint's 25 per second). One Limiter shared by every account's jobs, at a small share of
// the platform's limit, never exceeds it whichever way Stripe counts; if Stripe counts some
// requests against the connected account instead, the fan-out merely runs below what it
// could. A 429 for any account slows the shared limiter for all.

// DefaultAccountsJob is the job name of an AccountsCheck whose config names none.
const DefaultAccountsJob = "connected_accounts"

// accountsWindow is how far back the accounts check's reverse pass lists: every account. A
// platform's accounts may have been created long before they connected (an OAuth-connected
// Standard account), so no shorter window would do.
const accountsWindow = 100 * 365 * 24 * time.Hour

// AccountsStore is what an AccountsCheck needs of the host's accounts table: rows to sweep,
// and rows to match by account id. A pgstore.Store over the table, its external id column
// holding the account id (acct_...), is one.
type AccountsStore[L any] interface {
	reconcile.Store[L]
	reconcile.Matcher[L]
	reconcile.LaneSink
}

// AccountsCheckConfig configures an AccountsCheck.
type AccountsCheckConfig[L any] struct {
	// Job names the check's job: its cursor, reverse position and findings. Empty means
	// DefaultAccountsJob.
	Job string
	// Gateway reads the platform's connected accounts: stripeadapter.NewObjectGateway(cfg, stripeadapter.Accounts()), with
	// the platform's key and no StripeAccount. Required.
	Gateway *stripeadapter.ObjectGateway[*stripe.Account]
	// Store is the host's accounts table. Required.
	Store AccountsStore[L]
	// Classifier judges an account both sides know. Nil means such an account is in sync: the
	// check is about existence. Give one to compare more, such as a local "active" flag
	// against Accounts' state (stripeadapter.AccountState).
	Classifier reconcile.Classifier[L, *stripe.Account]
	// LocalState names a row's state in findings and observations, as in reconcile.Config.
	LocalState func(L) string
	// Limiter paces the calls: the limiter every account's jobs share, since these calls
	// count against the platform's budget too.
	Limiter reconcile.Limiter
	// BatchSize is the sweep's batch size; zero means reconcile.DefaultBatchSize.
	BatchSize int
	// Grace: local rows changed, and accounts created at Stripe, more recently than this are
	// left for the next cycle, so that an account being connected right now is not reported
	// missing on either side. Zero means reconcile.DefaultGrace.
	Grace time.Duration
	// Now is the reverse pass's clock; nil means time.Now.
	Now func() time.Time
	// Logger and Observer are as in reconcile.Config.
	Logger   *slog.Logger
	Observer reconcile.Observer
}

// AccountsCheck proves that the host's accounts table and the platform's connected accounts
// agree, both ways, under one job: a sweep over the table retrieves each local account (one
// call a row), and one that Stripe does not have, or no longer connects, is a NeedsReview
// finding of kind missing_externally; a reverse pass lists every connected account (a hundred
// a call) and one that no row names is a finding of kind missing_locally. It is a
// reconcile.BatchRunner: each batch is the sweep's until its cycle completes, then the reverse
// pass's until it ends, and the batch that ends the pass reports Wrapped. Stripe answers a
// retrieve of an account it does not connect with 403 account_invalid, for an id that never
// existed and for one that was disconnected alike; the Accounts gateway maps that answer to
// its retrieve, and only to it, to reconcile.ErrNotFound.
type AccountsCheck[L any] struct {
	sweep   *reconcile.Reconciler[L, *stripe.Account]
	reverse *reconcile.Lane[L, *stripe.Account]

	mu          sync.Mutex
	reverseTurn bool
}

var _ reconcile.BatchRunner = (*AccountsCheck[string])(nil)

// NewAccountsCheck checks cfg and returns an AccountsCheck.
func NewAccountsCheck[L any](cfg AccountsCheckConfig[L]) (*AccountsCheck[L], error) {
	switch {
	case cfg.Gateway == nil:
		return nil, errors.New("stripeconnect: accounts check: Gateway is nil")
	case cfg.Store == nil:
		return nil, errors.New("stripeconnect: accounts check: Store is nil")
	case cfg.Gateway.Object().Path != stripeadapter.Accounts().Path:
		return nil, fmt.Errorf("stripeconnect: accounts check: Gateway reads %s, not the connected accounts", cfg.Gateway.Object().Path)
	}
	if cfg.Job == "" {
		cfg.Job = DefaultAccountsJob
	}
	if cfg.Classifier == nil {
		cfg.Classifier = reconcile.ClassifierFunc[L, *stripe.Account](func(L, *stripe.Account) reconcile.Decision {
			return reconcile.Decision{Verdict: reconcile.InSync}
		})
	}
	grace := cfg.Grace
	if grace == 0 {
		grace = reconcile.DefaultGrace
	}
	sweep, err := reconcile.New(reconcile.Config[L, *stripe.Account]{Job: cfg.Job, Source: cfg.Store, Sink: cfg.Store,
		Gateway: cfg.Gateway, Classifier: cfg.Classifier, BatchSize: cfg.BatchSize, Grace: grace, Limiter: cfg.Limiter,
		LocalState: cfg.LocalState, ExternalState: stripeadapter.AccountState, Logger: cfg.Logger, Observer: cfg.Observer})
	if err != nil {
		return nil, fmt.Errorf("stripeconnect: accounts check: %w", err)
	}
	feed, err := cfg.Gateway.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.Account]{Window: accountsWindow, MinAge: grace, Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	reverse, err := reconcile.NewLane(reconcile.LaneConfig[L, *stripe.Account]{Job: cfg.Job, Lane: "reverse", Feed: feed,
		Matcher: cfg.Store, Sink: cfg.Store, Classifier: cfg.Classifier, ReportMissing: true, Grace: grace, Limiter: cfg.Limiter, LocalState: cfg.LocalState, ExternalState: stripeadapter.AccountState,
		Logger: cfg.Logger, Observer: cfg.Observer})
	if err != nil {
		return nil, fmt.Errorf("stripeconnect: accounts check: %w", err)
	}
	return &AccountsCheck[L]{sweep: sweep, reverse: reverse}, nil
}

// RunBatch runs the next batch: the sweep's, or once its cycle is complete the reverse
// pass's. Wrapped reports that both directions have been checked since the last Wrapped.
func (c *AccountsCheck[L]) RunBatch(ctx context.Context) (reconcile.Report, error) {
	c.mu.Lock()
	reverse := c.reverseTurn
	c.mu.Unlock()
	if !reverse {
		rep, err := c.sweep.RunBatch(ctx)
		if err == nil && rep.Wrapped {
			c.mu.Lock()
			c.reverseTurn = true
			c.mu.Unlock()
			rep.Wrapped = false // the other direction is still to do
		}
		return rep, err
	}
	rep, err := c.reverse.RunBatch(ctx)
	if err == nil && rep.Wrapped {
		c.mu.Lock()
		c.reverseTurn = false
		c.mu.Unlock()
	}
	return rep, err
}
