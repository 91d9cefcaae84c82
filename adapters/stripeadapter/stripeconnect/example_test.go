package stripeconnect_test

import (
	"context"
	"fmt"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripeconnect"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The accounts check against the fake Stripe: the platform connects two accounts, the host's
// accounts table knows one of them and one Stripe has never heard of.
func ExampleNewAccountsCheck() {
	ctx := context.Background()
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	created := time.Now().Add(-24 * time.Hour)
	known := srv.AddAccount(stripetest.Account{ID: "acct_1Known", Created: created, ChargesEnabled: true, PayoutsEnabled: true})
	srv.AddAccount(stripetest.Account{ID: "acct_1UnknownHere", Created: created})

	accounts := memstore.New[int, string](memstore.Options{}) // the host's accounts table
	accounts.Put(memstore.Row[int, string]{Key: 1, ExternalID: known, Local: "active", CreatedAt: created, UpdatedAt: created})
	accounts.Put(memstore.Row[int, string]{Key: 2, ExternalID: "acct_1NeverExisted", Local: "active", CreatedAt: created, UpdatedAt: created})

	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Accounts())
	if err != nil {
		panic(err)
	}
	check, err := stripeconnect.NewAccountsCheck(stripeconnect.AccountsCheckConfig[string]{Gateway: gateway, Store: accounts})
	if err != nil {
		panic(err)
	}
	// A Runner would schedule it like any job; one tick checks both directions here.
	tick, err := reconcile.RunTick(ctx, check, reconcile.TickBudget{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("both directions checked: %t\n", tick.Wrapped)
	findings, err := accounts.ListFindings(ctx, reconcile.FindingQuery{})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f.ExternalID, f.Kind)
	}
	// Output:
	// both directions checked: true
	// acct_1NeverExisted missing_externally
	// acct_1UnknownHere missing_locally
}
