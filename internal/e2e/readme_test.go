package e2e_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a Markdown file.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// TestTheREADMEsGoIsHere checks that every Go block of the README appears, line for line,
// in readme_code_test.go, where it compiles: a README whose code drifts from the API fails
// here rather than in a reader's editor.
func TestTheREADMEsGoIsHere(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("readme_code_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatchIndex(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("the README has no Go block: has its fence changed?")
	}
	for _, b := range blocks {
		block := string(readme[b[2]:b[3]])
		line := 1 + strings.Count(string(readme[:b[0]]), "\n")
		if !strings.Contains(string(code), indent(block)) {
			t.Errorf("README.md:%d: this Go block is not in readme_code_test.go (there, inside a function, "+
				"indented one tab and gofmt'ed; change it in both places):\n%s", line, block)
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
