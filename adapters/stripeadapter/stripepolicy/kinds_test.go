package stripepolicy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// kindConstants reads the package's source for every exported constant named Kind...: a kind
// added to a policy without a meaning fails the test below.
func kindConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s is not a string literal", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					kinds[name.Name] = v
				}
			}
		}
	}
	return kinds
}

func TestEveryKindOfThePoliciesHasAMeaning(t *testing.T) {
	consts := kindConstants(t)
	if len(consts) < 30 {
		t.Fatalf("found only %d Kind constants in the source: %v", len(consts), consts)
	}
	table := map[string]reconcile.KindInfo{}
	for _, k := range stripepolicy.Kinds() {
		if _, dup := table[k.Kind]; dup {
			t.Errorf("kind %q is in the table twice", k.Kind)
		}
		if k.Meaning == "" || strings.Contains(k.Meaning, "\n") {
			t.Errorf("kind %q: the meaning %q is not one line", k.Kind, k.Meaning)
		}
		table[k.Kind] = k
	}
	values := map[string]bool{}
	for name, kind := range consts {
		values[kind] = true
		if _, ok := table[kind]; !ok {
			t.Errorf("%s (%q) has no meaning in Kinds()", name, kind)
		}
	}
	for kind := range table {
		if !values[kind] {
			t.Errorf("Kinds() has %q, which no Kind constant names", kind)
		}
	}
}

func TestTheKindsThatMoveMoneyAreMarked(t *testing.T) {
	money := map[string]bool{}
	for _, k := range stripepolicy.Kinds() {
		money[k.Kind] = k.Money
	}
	for kind, want := range map[string]bool{
		stripepolicy.KindAmountMismatch:       true,
		stripepolicy.KindMissedRefund:         true,
		stripepolicy.KindDisputeLost:          true,
		stripepolicy.KindBillingWithoutAccess: true,
		stripepolicy.KindMissedPayment:        true,
		stripepolicy.KindMissedCancel:         false,
		stripepolicy.KindMissedExpiry:         false,
	} {
		if money[kind] != want {
			t.Errorf("kind %q: Money = %v, want %v", kind, money[kind], want)
		}
	}
}
