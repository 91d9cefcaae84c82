package stripeadapter

import (
	"strings"
	"testing"
)

func TestHeaderWord(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"req_8Tw3kB1xYz0aQp", "req_8Tw3kB1xYz0aQp"},
		{"global-rate", "global-rate"},
		{"v1.2", "v1.2"},
		{strings.Repeat("a", 255), strings.Repeat("a", 255)},
		{strings.Repeat("a", 256), ""},
		{"sk%5Ftest_51Abc", ""},
		{`sk\u005ftest_51Abc`, ""},
		{"two words", ""},
		{"req_\xff", ""},
		{"req_é", ""},
	} {
		if got := headerWord(c.in); got != c.want {
			t.Errorf("headerWord(%.40q) = %.40q, want %.40q", c.in, got, c.want)
		}
	}
}
