package prommetrics_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The shipped alert rules load, and their unit tests (mixin/alerts_test.yaml: input series →
// expected alerts, with the labels and the rendered summary and description) pass, as
// promtool runs them. promtool comes with Prometheus (Debian's prometheus package);
// scripts/test installs it. Without it the test fails: a skipped rule test would let a
// broken rule ship.
func TestTheAlertRulesLoadAndTheirUnitTestsPass(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Prometheus's promtool (Debian/Ubuntu: apt-get install prometheus; " +
			"or go install github.com/prometheus/prometheus/cmd/promtool@latest); bash scripts/test installs it")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "mixin"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert has a unit test in which it fires and one in which it must not, and the labels
// and annotations an on-call engineer reads.
func TestEveryAlertIsTestedBothWaysAndSaysWhatToLookAt(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("mixin/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("mixin/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The rules, each from its "- alert:" line to the next.
	starts := regexp.MustCompile(`(?m)^\s+- alert: (\w+)$`).FindAllSubmatchIndex(rules, -1)
	if len(starts) == 0 {
		t.Fatal("no alert in mixin/alerts.yaml")
	}
	for i, s := range starts {
		name := string(rules[s[2]:s[3]])
		end := len(rules)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		rule := string(rules[s[0]:end])
		for _, want := range []string{"\n        expr: ", "\n          severity: ", "\n          summary: ", "\n          description: ", "Look first at"} {
			if !strings.Contains(rule, want) {
				t.Errorf("alert %s lacks %q", name, strings.TrimSpace(want))
			}
		}
		quiet := regexp.MustCompile(`alertname: ` + name + `\n\s+exp_alerts: \[\]\n`)
		fires := regexp.MustCompile(`alertname: ` + name + `\n\s+exp_alerts:\n\s+- exp_labels: `)
		if !quiet.Match(tests) {
			t.Errorf("alert %s has no unit test in which it must not fire (exp_alerts: [])", name)
		}
		if !fires.Match(tests) {
			t.Errorf("alert %s has no unit test in which it fires", name)
		}
	}
}
