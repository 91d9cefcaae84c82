package console_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/reconcilekit/reconcile/console"
)

// A host whose router does not clean paths (not http.ServeMux) hands the console unclean ones:
// the console's own redirect to the cleaned path must stay under the mount.
func TestCleanedPathRedirectsStayUnderTheMount(t *testing.T) {
	t.Parallel()
	based, err := console.New(console.Config{Store: &countingStore{}, Authenticate: headerAuth, BasePath: "/review", Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := console.New(console.Config{Store: &countingStore{}, Authenticate: headerAuth, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string]struct {
		h      http.Handler
		prefix string
	}{
		"BasePath":    {based, "/review"},
		"StripPrefix": {http.StripPrefix("/ops/review", plain), "/ops/review"},
		"both":        {http.StripPrefix("/ops", based), "/ops/review"},
		"at the root": {plain, ""},
	}
	for name, m := range mounts {
		for path, want := range map[string]string{
			"/findings//1":                "/findings/1",
			"//findings":                  "/findings",
			"/findings/./1":               "/findings/1",
			"/findings/2/../1":            "/findings/1",
			"/findings//?state=all&job=a": "/findings/?state=all&job=a",
			"//evil.example/./findings":   "/evil.example/findings", // never scheme-relative
		} {
			req := httptest.NewRequest(http.MethodGet, m.prefix+path, nil)
			req.Header.Set("X-Test-User", "alice")
			rec := httptest.NewRecorder()
			m.h.ServeHTTP(rec, req)
			if got := rec.Header().Get("Location"); rec.Code/100 != 3 || got != m.prefix+want {
				t.Errorf("%s: GET %s = %d, Location %q; want a redirect to %q", name, m.prefix+path, rec.Code, got, m.prefix+want)
			}
		}
	}
}
