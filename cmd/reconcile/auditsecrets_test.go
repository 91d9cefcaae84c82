package main

import "testing"

func TestEncodedPatternMatchesTheKeyEscaped(t *testing.T) {
	re, hint := encodedPattern("sk_live_51Abx-c")
	if hint != "51Abx" {
		t.Errorf("hint %q, want the longest run of letters and digits, 51Abx", hint)
	}
	for _, tc := range []struct {
		name, text string
		match      bool
	}{
		{"as it is", "sk_live_51Abx-c", true},
		{"percent-encoded", "sk%5Flive%5F51Abx%2Dc", true},
		{"percent-encoded, lowercase", "sk%5flive%5f51Abx%2dc", true},
		{"some characters encoded", "sk_live%5F51Abx-c", true},
		{"a JSON escape", `sk\u005flive\u005f51Abx\u002dc`, true},
		{"a JSON escape in JSON text", `sk\\u005flive\\u005f51Abx\\u002dc`, true},
		{"a hex escape", `sk\x5flive\x5f51Abx\x2dc`, true},
		{"HTML references", "sk&#95;live&#x5F;51Abx&#045;c", true},
		{"an HTML reference in JSON text", `sk\u0026#95;live_51Abx-c`, true},
		{"inside other text", "key: sk%5Flive_51Abx-c.", true},
		{"another key", "sk_live_51Abx-d", false},
		{"a letter's case differs", "sk_live_51ABX-c", false},
		{"a character missing", "sk_live51Abx-c", false},
	} {
		if got := re.MatchString(tc.text); got != tc.match {
			t.Errorf("%s: %q matches %v, want %v", tc.name, tc.text, got, tc.match)
		}
	}
	re, _ = encodedPattern(`sk_A"b\c`)
	for _, text := range []string{`sk_A"b\c`, `sk_A\"b\\c`, `sk\u005fA\u0022b\u005cc`, `sk_A""b\c`} {
		if !re.MatchString(text) {
			t.Errorf("%q does not match a key with a quote and a backslash", text)
		}
	}
	if re, _ := encodedPattern("AbC123"); re != nil {
		t.Errorf("a value of letters and digits only has a pattern: %v", re)
	}
}

func TestWindowsHideTheKeysStretches(t *testing.T) {
	const key = "sk_live_0123456789abcdefghijklmnopqrstuvwxyz" // 44 bytes
	w := keyWindows(key)
	for _, tc := range []struct{ name, in, want string }{
		{"no key", "pi_0123456789 paid", "pi_0123456789 paid"},
		{"the key", "key " + key + ".", "key [k]."},
		{"cut in two", "key " + key[:20] + "\n" + key[20:] + ".", "key [k]\n[k]."},
		{"cut near its start", "s\u200b" + key[1:], "s\u200b[k]"},
		{"parts too short to tell", key[:15] + " " + key[29:], key[:15] + " " + key[29:]},
		{"twice", key + " and " + key, "[k] and [k]"},
		{"a stretch of 16", "x" + key[5:21] + "y", "x[k]y"},
		{"its characters in another order", "0123456789abcdfehgijklmnopqrstuv", "0123456789abcdfehgijklmnopqrstuv"},
		{"empty", "", ""},
	} {
		got, ok := w.hide(tc.in, "[k]")
		if got != tc.want || ok != (tc.in != tc.want) {
			t.Errorf("%s: hide(%q) = %q, %v; want %q", tc.name, tc.in, got, ok, tc.want)
		}
	}
	if keyWindows(key[:minWindowed-1]) != nil {
		t.Errorf("a secret shorter than %d has windows: a stretch of it may be anything's", minWindowed)
	}
}
