package stripepayouts_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// Connect: each connected account's payouts are tied out by a step of its own under a
// reconcile.FanOut, through ForAccount (its calls carry Stripe-Account); one round covers every
// account (FanOut.Rounds), each account's unbooked charge is found once under its own job, and
// no account's lines are read for another.
func TestEveryConnectedAccountsPayoutsAreTiedOutInOneRound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{t: t0}
	srv := newServer(t, clk)
	var accounts []string
	var ledger tieout.MemoryLedger
	unbooked := map[string]string{} // account → its unbooked charge's intent
	for i := range 3 {
		acct := srv.AddAccount(stripetest.Account{DefaultCurrency: "usd", ChargesEnabled: true, PayoutsEnabled: true, DetailsSubmitted: true})
		accounts = append(accounts, acct)
		booked := srv.AddPaymentIntent(stripetest.PaymentIntent{Account: acct, Status: stripe.PaymentIntentStatusSucceeded, Amount: int64(1000 * (i + 1)), Currency: "usd"})
		ledger.Book(tieout.Booked{Kind: tieout.KindPayment, ID: booked, Amount: int64(1000 * (i + 1)), Currency: "usd", Basis: tieout.Presentment})
		unbooked[acct] = srv.AddPaymentIntent(stripetest.PaymentIntent{Account: acct, Status: stripe.PaymentIntentStatusSucceeded, Amount: 777, Currency: "usd"})
	}
	clk.add(3 * 24 * time.Hour)
	payouts := map[string]string{}
	for _, acct := range accounts {
		payouts[acct] = srv.AddPayout(stripetest.Payout{Account: acct})
		if err := srv.SetPayoutStatus(payouts[acct], stripe.PayoutStatusPaid); err != nil {
			t.Fatal(err)
		}
	}
	store := memstore.New[string, string](memstore.Options{Now: clk.now})
	platform := newLister(t, srv, stripepayouts.Config{})
	fan, err := reconcile.NewFanOut(reconcile.FanOutConfig{
		Name:     "payouts@connect",
		Accounts: func(context.Context) ([]string, error) { return accounts, nil },
		Build: func(acct string) ([]reconcile.FanOutJob, error) {
			l, err := platform.ForAccount(acct)
			if err != nil {
				return nil, err
			}
			st, err := tieout.NewStep(tieout.StepConfig{Job: "payouts@" + acct, Lane: "sweep", Lister: l, Ledger: &ledger, Sink: store})
			if err != nil {
				return nil, err
			}
			return []reconcile.FanOutJob{{Job: "payouts@" + acct, Batches: st, Status: store}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; fan.Rounds() < 1; i++ {
		if i == 20 {
			t.Fatal("no round completed in 20 batches")
		}
		if _, err := fan.RunBatch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, acct := range accounts {
		fs, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payouts@" + acct})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, fmt.Sprintf("%s %s", f.ExternalID, f.Kind))
		}
		if len(fs) != 1 || fs[0].Kind != tieout.KindUnbookedPayment {
			t.Errorf("account %s: findings %q, want its one unbooked charge", acct, got)
		}
		if n := srv.AccountRequests(stripetest.ListBalanceTransactions, acct); n != 1 {
			t.Errorf("account %s: %d balance transaction lists with its Stripe-Account, want 1", acct, n)
		}
	}
	if n := srv.AccountRequests(stripetest.ListBalanceTransactions, ""); n != 0 {
		t.Errorf("%d balance transaction lists without Stripe-Account, want 0", n)
	}
	// A lister never lists another account's payout.
	if _, err := platform.Members(ctx, tieout.Group{ID: payouts[accounts[0]], Account: accounts[0], Itemized: true}, ""); err == nil {
		t.Error("the platform's lister listed a connected account's payout")
	}
}
