package stripepolicy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/layout"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// kindsRepairer is what every policy answers: the kinds a repair command repairs.
type kindsRepairer interface {
	KindsRepairedBy(command string) []string
}

// Each policy says which of its findings a repair command repairs, so that a canonical writer
// resolves those and no finding meant for a person. Written out by hand from the tables in the
// package doc.
func TestEveryPolicySaysWhichKindsACommandRepairs(t *testing.T) {
	t.Parallel()
	var (
		status       = stripepolicy.PaymentIntentPolicy()
		money        = stripepolicy.PaymentPolicy(moneyView)
		subscription = stripepolicy.SubscriptionPolicy(subView)
		invoice      = stripepolicy.InvoicePolicy(invoiceView)
		checkout     = stripepolicy.CheckoutPolicy(checkoutView)
	)
	tests := []struct {
		name    string
		policy  kindsRepairer
		command string
		want    []string
	}{
		{"the status policy: a success", status, "ApplyPaymentSucceeded", []string{"missed_success"}},
		{"the status policy: a cancellation", status, "ApplyPaymentCanceled", []string{"missed_cancel"}},
		{"the status policy queues no refund", status, "ApplyRefund", nil},
		{"the money policy: a success, as the status policy", money, "ApplyPaymentSucceeded", []string{"missed_success"}},
		{"the money policy: a cancellation, as the status policy", money, "ApplyPaymentCanceled", []string{"missed_cancel"}},
		{"the money policy: a refund, whole or in part", money, "ApplyRefund", []string{"missed_refund", "missed_partial_refund"}},
		{"the money policy: a dispute's progress", money, "ApplyDisputeStatus", []string{"dispute_won", "dispute_updated"}},
		{"the subscription policy: every catch-up", subscription, "ApplySubscriptionStatus", []string{
			"subscription_canceled_externally", "access_without_billing", "missed_activation", "missed_status_change",
			"paid_through_ahead", "cancellation_scheduled_externally", "paid_through_behind"}},
		{"the invoice policy: every catch-up", invoice, "ApplyInvoiceStatus", []string{
			"missed_payment", "missed_void", "missed_uncollectible", "missed_finalization", "amount_remaining_mismatch"}},
		{"the checkout policy: fulfilment", checkout, "FulfillCheckout", []string{"missed_fulfillment"}},
		{"the checkout policy: the session's status", checkout, "ApplyCheckoutStatus", []string{
			"missed_expiry", "missed_completion", "missed_session_update"}},
		{"a command of another policy repairs nothing", checkout, "ApplyInvoiceStatus", nil},
		{"no command repairs nothing", invoice, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.policy.KindsRepairedBy(tt.command)
			if !slices.Equal(got, tt.want) {
				t.Errorf("KindsRepairedBy(%q) = %q, want %q", tt.command, got, tt.want)
			}
			// No kind a person must see is among them.
			for _, k := range got {
				for _, review := range []string{"paid_locally_not_externally", "amount_mismatch", "currency_mismatch", "refund_failed", "dispute_lost"} {
					if k == review {
						t.Errorf("KindsRepairedBy(%q) holds %q, a finding for a person", tt.command, k)
					}
				}
			}
		})
	}
}

// The package's docs name only policies that exist: stripeadapter's kinds.go named a
// StatusPolicy that never did.
func TestTheDocsNameOnlyPoliciesThatExist(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	var comments []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				declared[d.Name.Name] = true
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						declared[spec.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							declared[n.Name] = true
						}
					}
				}
			}
		}
		for _, cg := range f.Comments {
			comments = append(comments, e.Name()+": "+cg.Text())
		}
	}
	// A policy's name, not qualified by another package (reconcile.HealthPolicy).
	policy := regexp.MustCompile(`(^|[^.\w])([A-Z]\w*Policy)\b`)
	for _, c := range comments {
		for _, m := range policy.FindAllStringSubmatch(c, -1) {
			if !declared[m[2]] {
				t.Errorf("%s names %s, which the package does not declare", strings.SplitN(c, ":", 2)[0], m[2])
			}
		}
	}
}

// The policies are pure: no file imports HTTP, the kit's transport, or the reads built on it.
func TestThePoliciesImportNoTransport(t *testing.T) {
	t.Parallel()
	layout.ImportsNone(t, ".", "net/http", "github.com/reconcilekit/reconcile/adapters/stripeadapter",
		"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney",
		"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripeconnect")
}
