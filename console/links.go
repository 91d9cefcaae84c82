package console

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/reconcilekit/reconcile"
)

// stripeID matches the ids Stripe issues: a short prefix, an underscore, letters and digits.
var stripeID = regexp.MustCompile(`^pi_[A-Za-z0-9]{1,250}$`)

// StripeDashboardURL returns a Config.ExternalURL that links PaymentIntents (ids starting
// with pi_) to the Stripe dashboard, in test mode if testMode is set; other findings get no
// link. It takes the finding's ExternalID, or its RecordID when a table's rows are keyed by
// their PaymentIntent.
func StripeDashboardURL(testMode bool) func(reconcile.Finding) string {
	prefix := "https://dashboard.stripe.com/payments/"
	if testMode {
		prefix = "https://dashboard.stripe.com/test/payments/"
	}
	return func(f reconcile.Finding) string {
		for _, id := range []string{f.ExternalID, f.RecordID} {
			if stripeID.MatchString(id) {
				return prefix + id
			}
		}
		return ""
	}
}

// Links are relative, so that the console works under any prefix, stripped or not. root is
// the way from the current page back to the console's root: "./" or "../" and so on.

// rootOf returns the relative way from the page at path (as the console sees it, its base
// stripped) to the console's root.
func rootOf(r string) string {
	if depth := strings.Count(r, "/") - 1; depth > 0 {
		return strings.Repeat("../", depth)
	}
	return "./"
}

func findingURL(root string, id int64) string {
	return root + "findings/" + strconv.FormatInt(id, 10)
}

// listURL returns the link to the findings list with filter f, continuing after id after
// when it is positive.
func listURL(root string, f filter, after int64) string {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("job", f.Job)
	set("kind", f.Kind)
	set("record", f.Record)
	set("q", f.Search)
	if f.State != reconcile.FindingsOpen {
		set("state", f.State)
	}
	set("age", f.Age)
	if f.Sort != "detected" {
		set("sort", f.Sort)
	}
	if after > 0 {
		v.Set("after", strconv.FormatInt(after, 10))
	}
	if len(v) == 0 {
		return root + "findings"
	}
	return root + "findings?" + v.Encode()
}

// exportURL returns the link to the CSV export of the findings filter f selects.
func exportURL(root string, f filter) string {
	list := listURL(root, f, 0)
	return root + "findings.csv" + strings.TrimPrefix(list, root+"findings")
}
