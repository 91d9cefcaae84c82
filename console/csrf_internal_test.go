package console

import (
	"strings"
	"testing"
	"time"
)

func TestAFormTokenIsValidOnlyForItsActorItsKeyAndTwelveHours(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("k", 32))
	tk := &tokens{key: key}
	issued := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	tok := tk.issue("alice", issued)
	tests := []struct {
		name  string
		tk    *tokens
		actor string
		token string
		at    time.Time
		want  bool
	}{
		{"at once", tk, "alice", tok, issued, true},
		{"eleven hours later", tk, "alice", tok, issued.Add(11 * time.Hour), true},
		{"thirteen hours later", tk, "alice", tok, issued.Add(13 * time.Hour), false},
		{"from a clock a few seconds behind", tk, "alice", tok, issued.Add(-10 * time.Second), true},
		{"issued far in the future", tk, "alice", tok, issued.Add(-time.Hour), false},
		{"for another actor", tk, "bob", tok, issued, false},
		{"for an actor that extends the name", tk, "alice2", tok, issued, false},
		{"under another key", &tokens{key: []byte(strings.Repeat("x", 32))}, "alice", tok, issued, false},
		{"with its time changed", tk, "alice", "1" + tok, issued, false},
		{"empty", tk, "alice", "", issued, false},
		{"without a separator", tk, "alice", strings.Replace(tok, ".", "", 1), issued, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tk.valid(tt.actor, tt.token, tt.at); got != tt.want {
				t.Fatalf("valid(%q, %q) = %v, want %v", tt.actor, tt.token, got, tt.want)
			}
		})
	}
}

func TestRelativeRootsLeadBackToTheConsolesRoot(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/": "./", "/findings": "./", "/findings/12": "../", "/findings/12/resolve": "../../", "": "./",
	} {
		if got := rootOf(path); got != want {
			t.Errorf("rootOf(%q) = %q, want %q", path, got, want)
		}
	}
}
