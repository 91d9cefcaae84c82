package stripemoney_test

import (
	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
)

// newGateway is the Gateway of Payments over a gateway of PaymentIntents built from cfg, as a
// host builds it.
func newGateway(cfg stripeadapter.GatewayConfig, money ...stripemoney.Config) (*stripemoney.Gateway, error) {
	intents, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	if err != nil {
		return nil, err
	}
	var mc stripemoney.Config
	if len(money) > 0 {
		mc = money[0]
	}
	return stripemoney.New(intents, mc)
}

func diff(field, local, external string) reconcile.Diff {
	return reconcile.Diff{Field: field, Local: local, External: external}
}
