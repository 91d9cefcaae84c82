// Package layout checks, for the Stripe packages' tests, that a package's own files import none
// of the packages its layer must not reach: the module's layout (see the stripeadapter package
// doc) kept by a test rather than by memory.
package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ImportsNone fails t if a non-test Go file of dir imports any of forbidden.
func ImportsNone(t testing.TB, dir string, forbidden ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, no := range forbidden {
				if path == no {
					t.Errorf("%s imports %s", e.Name(), path)
				}
			}
		}
	}
}
