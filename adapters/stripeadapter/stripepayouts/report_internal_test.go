package stripepayouts

import (
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// Why a payout is listed one by one names the line's currency, three letters read from the
// report, never the payout's: the server's bytes, which the log would show whole.
func TestUnlikeQuotesNoPayoutCurrency(t *testing.T) {
	line := stripepolicy.ReportLine{Currency: "usd", Gross: 100, Net: 100}
	forms := keyForms()
	forms["another currency"] = "eur"
	for name, form := range forms {
		why := unlike(&stripe.Payout{Currency: stripe.Currency(form)}, []stripepolicy.ReportLine{line})
		if !strings.Contains(why, "usd") {
			t.Errorf("%s: %q does not name the line's currency", name, why)
		}
		checkShown(t, name, why, 100)
	}
	if why := unlike(&stripe.Payout{Currency: "USD"}, []stripepolicy.ReportLine{line}); why != "" {
		t.Errorf("a payout in USD, its line in usd: %q", why)
	}
}
