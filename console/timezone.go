package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"time"
)

// DefaultTimeZones are the zones a reviewer may choose from when Config.TimeZones is empty;
// those the system's time zone database lacks are left out.
var DefaultTimeZones = []string{
	"UTC", "Europe/London", "Europe/Paris", "Europe/Berlin", "America/New_York", "America/Chicago",
	"America/Denver", "America/Los_Angeles", "America/Sao_Paulo", "Asia/Kolkata", "Asia/Singapore",
	"Asia/Tokyo", "Australia/Sydney",
}

// zoneCookie keeps the reviewer's time zone. Its path is the console's root (the default path
// of a cookie set by POST <root>/timezone), so it goes nowhere else on the host.
const zoneCookie = "reconcile_console_tz"

// zones are the time zones the console offers, by name, and the default one.
type zones struct {
	names []string
	by    map[string]*time.Location
	def   string
}

// newZones loads the zones of Config.TimeZone and Config.TimeZones: a named zone that does
// not load is an error, one of DefaultTimeZones is dropped.
func newZones(def string, names []string) (zones, error) {
	z := zones{by: map[string]*time.Location{}}
	explicit := len(names) > 0
	if !explicit {
		names = DefaultTimeZones
	}
	if def == "" {
		def = "UTC"
	}
	for _, n := range append(slices.Clone(names), def) {
		if _, ok := z.by[n]; ok {
			continue
		}
		loc, err := time.LoadLocation(n)
		if n == "" || n == "Local" || err != nil {
			if explicit || n == def {
				return z, fmt.Errorf("console: the time zone %q cannot be loaded (an IANA name such as Europe/Berlin is needed): %v", n, err)
			}
			continue
		}
		z.by[n] = loc
		z.names = append(z.names, n)
	}
	z.def = def
	return z, nil
}

// of returns the reviewer's zone: the cookie's, if it names one the console offers, else the
// default.
func (z zones) of(r *http.Request) (string, *time.Location) {
	if c, err := r.Cookie(zoneCookie); err == nil {
		if loc, ok := z.by[c.Value]; ok {
			return c.Value, loc
		}
	}
	return z.def, z.by[z.def]
}

// backPath is where a preference form may send the reviewer back to: a page of the console,
// relative to its root, with its query. Nothing else, so that the form cannot redirect away.
var backPath = regexp.MustCompile(`^((findings|payouts)(/[0-9]+)?)?(\?[A-Za-z0-9_.~%+=&\-]*)?$`)

// setZone stores the reviewer's choice of time zone in a cookie (POST /timezone, with the
// form token like every write) and sends them back to the page they came from.
func (c *Console) setZone(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) || !c.form(w, r) {
		return
	}
	name := r.PostForm.Get("tz")
	if _, ok := c.zones.by[name]; !ok {
		c.fail(w, r, http.StatusBadRequest, "Bad time zone", "Choose one of the time zones offered.")
		return
	}
	back := r.PostForm.Get("back")
	if !backPath.MatchString(back) {
		back = ""
	}
	http.SetCookie(w, &http.Cookie{Name: zoneCookie, Value: name, MaxAge: 365 * 24 * 3600,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	c.log.DebugContext(r.Context(), "console: time zone chosen", slog.String("actor", actor(r)), slog.String("zone", name))
	w.Header().Set("Location", "./"+back)
	w.WriteHeader(http.StatusSeeOther)
}
