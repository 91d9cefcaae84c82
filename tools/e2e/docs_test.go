package e2e_test

import (
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a Markdown file.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// TestEveryGoBlockOfTheREADMEAndPackageDocIsHere checks that every Go block of the README, and
// every code block of the root package's doc, appears line for line in docs_code_test.go,
// where it compiles: documentation whose code drifts from the API fails here rather than in a
// reader's editor.
func TestEveryGoBlockOfTheREADMEAndPackageDocIsHere(t *testing.T) {
	t.Parallel()
	code, err := os.ReadFile("docs_code_test.go")
	if err != nil {
		t.Fatal(err)
	}
	type block struct{ where, text string }
	var blocks []block

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range goBlock.FindAllSubmatchIndex(readme, -1) {
		line := 1 + strings.Count(string(readme[:m[0]]), "\n")
		blocks = append(blocks, block{"README.md:" + strconv.Itoa(line), string(readme[m[2]:m[3]])})
	}
	if len(blocks) == 0 {
		t.Fatal("the README has no Go block: has its fence changed?")
	}

	f, err := parser.ParseFile(token.NewFileSet(), "../../doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range new(comment.Parser).Parse(f.Doc.Text()).Content {
		if c, ok := b.(*comment.Code); ok {
			n++
			blocks = append(blocks, block{"doc.go, code block " + strconv.Itoa(n), c.Text})
		}
	}
	if n == 0 {
		t.Fatal("the package doc has no code block: it should open with an example")
	}

	for _, b := range blocks {
		if !strings.Contains(string(code), indent(b.text)) {
			t.Errorf("%s: this Go is not in docs_code_test.go (there, inside a function, indented one tab and "+
				"gofmt'ed; change it in both places):\n%s", b.where, b.text)
		}
	}
}

// indent indents each non-empty line of block by a tab, as gofmt does inside a function.
func indent(block string) string {
	lines := strings.SplitAfter(block, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = "\t" + l
		}
	}
	return strings.Join(lines, "")
}
