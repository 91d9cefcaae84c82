package stripeadapter_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"unicode/utf8"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/hostile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// Over HTTP: each hostile status is one finding about its row, printable and bounded, the key
// it quotes redacted, and the batch commits with the others.
func TestAHostileStatusOverHTTPIsOneFindingAboutItsRow(t *testing.T) {
	for _, status := range hostile.Statuses {
		t.Run(fmt.Sprintf("%.30q", status), func(t *testing.T) {
			quoted, _ := json.Marshal(status) // none holds a %
			srv := httptest.NewServer(misrouted(`{"id":"%s","object":"payment_intent","status":` + string(quoted) + `}`))
			defer srv.Close()
			s := pendingRows(3)
			cfg := reconcile.Config[string, *stripe.PaymentIntent]{
				Job: "sweep", Source: s, Sink: s, Gateway: newGateway(t, srv.URL, nil), Classifier: stripepolicy.PaymentIntentPolicy(),
				BatchSize: 2,
			}
			for range 2 {
				reconciletest.Cycle(t, cfg, 5)
			}
			fs := reconciletest.Findings(t, s, "sweep")
			byRow := map[string]int{}
			for _, f := range fs {
				byRow[f.RecordID]++
				if !hostile.PrintableKind(f.Kind) || len(f.External) > reconcile.MaxState || !utf8.ValidString(f.External) ||
					strings.Contains(f.Kind+f.External, "sk_live") {
					t.Errorf("finding of row %s: kind %.120q (%d bytes), external %.120q (%d bytes); want printable and bounded, no key",
						f.RecordID, f.Kind, len(f.Kind), f.External, len(f.External))
				}
			}
			if len(fs) != 3 || byRow["1"] != 1 || byRow["2"] != 1 || byRow["3"] != 1 {
				t.Fatalf("findings by row %v; want one for each of the three rows", byRow)
			}
		})
	}
}
